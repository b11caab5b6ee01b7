"""The app on this machine, for the code that drives it from outside (`./specscope bench app` and the tests):
`python app.py ARGS` launched on a free port and waited for until it answers, and headless Chromium.

One copy of this code: the benchmark and the browser/API tests must launch the app the same way, or a
benchmark would time something the tests never check.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"  # Debian's package: no browser download
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def launched(args: list[str], log_path: Path, app_dir: Path = ROOT, python: str = sys.executable,
             timeout_s: float = 180) -> Iterator[tuple[str, int]]:
    """`python app.py ARGS --host 127.0.0.1 --port FREE` in `app_dir`, output to `log_path`; yields (url, pid)
    once the page answers, and stops the app after."""
    port = free_port()
    env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", "SPECSCOPE_DEVICE": "cpu"}
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "w", encoding="utf-8") as log:
        proc = subprocess.Popen([python, "app.py", *args, "--host", "127.0.0.1", "--port", str(port)],
                                cwd=app_dir, env=env, stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}/"
        try:
            wait_until_up(url, proc.poll, timeout_s)
            yield url, proc.pid
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()


def wait_until_up(url: str, exit_code: Callable[[], int | None], timeout_s: float) -> None:
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

    if not Path(CHROMIUM).exists():
        raise FileNotFoundError(f"Debian's chromium is missing ({CHROMIUM}): apt-get install -y chromium")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
