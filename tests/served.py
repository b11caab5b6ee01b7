"""The app served to a test: `python app.py ARGS` launched on a free port, waited for until it answers,
stopped afterwards (bench/local_app.py, the code `./specscope bench app` launches it with too); or the app's
Blocks served from this process (a test that must look at the server's own objects, e.g. its run cache).
Browser tests drive either with `chromium`."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import gradio as gr

from bench.local_app import CHROMIUM, ROOT, chromium, free_port, launched, wait_until_up

__all__ = ["CHROMIUM", "OUTPUT", "ROOT", "TOY", "Server", "chromium", "open_tab", "opened", "served", "served_here"]
OUTPUT = ROOT / "tests" / "output"  # logs and screenshots (git-ignored)
TOY = ("--pair", "toy", "--no-preload")  # the usual launch: the instant pair, nothing loaded at start


@dataclass(frozen=True)
class Server:
    url: str  # ends with "/"
    pid: int  # the serving process (this one for `served_here`)
    log: Path | None = None  # the app's stdout and stderr (a launched app only)


@contextmanager
def served(*args: str, log_name: str = "app.log", timeout_s: float = 180) -> Iterator[Server]:
    """`python app.py ARGS --host 127.0.0.1 --port FREE` as a subprocess, its output in tests/output/LOG_NAME."""
    with launched(list(args), OUTPUT / log_name, timeout_s=timeout_s) as (url, pid):
        yield Server(url, pid, OUTPUT / log_name)


@contextmanager
def served_here(demo: gr.Blocks, timeout_s: float = 60) -> Iterator[Server]:
    """Serve `demo` (built by app.build_page) from this process, as app.py serves it, until the block ends."""
    import app

    port = free_port()
    app.serve(demo, "127.0.0.1", port, block=False)
    try:
        url = f"http://127.0.0.1:{port}/"
        wait_until_up(url, lambda: None, timeout_s)
        yield Server(url, os.getpid())
    finally:
        demo.close()


@contextmanager
def opened(browser, url: str, width: int = 1440, height: int = 1000):
    """A fresh page load of the app in its own browser context (no cookies or state from another page),
    once the Step button is there; closed after."""
    context = browser.new_context(viewport={"width": width, "height": height})
    try:
        page = context.new_page()
        page.goto(url)
        page.wait_for_selector("#step-btn", timeout=60_000)
        yield page
    finally:
        context.close()


def open_tab(page, name: str) -> None:
    """Click the tab `name` (each tab is in the bar once: tests/browser/test_tabs_browser.py)."""
    page.get_by_role("tab", name=name).first.click()
