"""Fixtures for every test of the UI handlers."""

from __future__ import annotations

import warnings

import pytest


@pytest.fixture(autouse=True)
def _quiet_warnings():
    """gr.Warning outside a Gradio event becomes a Python warning; the tests read the status instead."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield
