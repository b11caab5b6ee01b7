"""Fixtures for every test of the UI handlers."""

from __future__ import annotations

import warnings

import pytest

API_FLAGS = ("--mcp", "--max-nodes", "25", "--max-depth", "3", "--max-branch", "3")


@pytest.fixture(scope="session")
def api_server():
    """The toy app launched once with the MCP server and tight caps, for the API tests (test_endpoints, test_mcp)."""
    from tests.served import TOY, served

    with served(*TOY, *API_FLAGS, log_name="app-api.log") as server:
        yield server


@pytest.fixture(autouse=True)
def _quiet_warnings():
    """gr.Warning outside a Gradio event becomes a Python warning; the tests read the status instead."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield
