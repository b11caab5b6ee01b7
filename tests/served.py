"""The app served to a test, the one copy of that code: `python app.py ARGS` launched on a free port, waited
for until it answers, stopped afterwards; or the app's Blocks served from this process (a test that must
look at the server's own objects, e.g. its run cache). Browser tests drive either with `chromium`."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import gradio as gr

ROOT = Path(__file__).resolve().parents[1]
OUTPUT = ROOT / "tests" / "output"  # logs and screenshots (git-ignored)
TOY = ("--pair", "toy", "--no-preload")  # the usual launch: the instant pair, nothing loaded at start
CHROMIUM = "/usr/bin/chromium"  # Debian's package: no browser download
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


@dataclass(frozen=True)
class Server:
    url: str  # ends with "/"
    pid: int  # the serving process (this one for `served_here`)
    log: Path | None = None  # the app's stdout and stderr (a launched app only)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def served(*args: str, log_name: str = "app.log", timeout_s: float = 120) -> Iterator[Server]:
    """`python app.py ARGS --host 127.0.0.1 --port FREE` as a subprocess, its output in tests/output/LOG_NAME."""
    OUTPUT.mkdir(parents=True, exist_ok=True)
    port, log_path = free_port(), OUTPUT / log_name
    env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", "SPECSCOPE_DEVICE": "cpu"}
    with open(log_path, "w", encoding="utf-8") as log:
        proc = subprocess.Popen([sys.executable, "app.py", *args, "--host", "127.0.0.1", "--port", str(port)],
                                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}/"
        try:
            wait_until_up(url, proc.poll, timeout_s)
            yield Server(url, proc.pid, log_path)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()


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


def wait_until_up(url: str, exit_code, timeout_s: float) -> None:
    """Poll `url` until it answers 200; `exit_code()` not None means the server died (fail at once)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if exit_code() is not None:
            raise RuntimeError(f"the app exited with code {exit_code()}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(f"the app did not answer on {url} within {timeout_s} s")


@contextmanager
def chromium():
    """Headless Debian Chromium under playwright: yields the Browser, closed after."""
    from playwright import sync_api

    assert Path(CHROMIUM).exists(), "Debian's chromium is missing: apt-get install -y chromium"
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


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
    """Click the tab `name`. Once selected, Gradio draws a tab twice (in the tab bar and in its overflow
    menu), so a plain role lookup is ambiguous: take the first."""
    page.get_by_role("tab", name=name).first.click()
