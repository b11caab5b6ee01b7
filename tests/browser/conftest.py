"""Browser-test fixtures: one headless Chromium for the whole package, and the toy app that the page and
compare tests share (launched once)."""

from __future__ import annotations

import pytest

from tests.served import chromium, served


@pytest.fixture(scope="package")
def browser():
    with chromium() as launched:
        yield launched


@pytest.fixture(scope="package")
def app_url() -> str:
    """`python app.py --pair toy` (its toy pair preloaded at start, as a user would launch it)."""
    with served("--pair", "toy", log_name="app.log") as server:
        yield server.url
