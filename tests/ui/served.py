"""The app launched as a subprocess on a free port, and a `gradio_client` session on it that calls the
Step endpoint with Controls field names (mapped to the endpoint's parameters by the widgets' labels)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gradio_client import Client

import app

ROOT = Path(__file__).resolve().parents[2]
OUTPUT = ROOT / "tests" / "output"
_, _VIEWS = app.build_page("toy")
LABELS = {name: widget.label for name, widget in _VIEWS.controls.items()}  # Controls field -> widget label
OPTION_LABELS = [widget.label for widget in _VIEWS.options.values()]  # the compare view's widgets: sent as null (off)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def served(*flags: str, log_name: str = "app-api.log", timeout_s: float = 120) -> Iterator[tuple[str, int]]:
    """`python app.py --pair toy --no-preload FLAGS` on a free port: yields (url, pid); stopped after."""
    OUTPUT.mkdir(parents=True, exist_ok=True)
    port = free_port()
    env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", "SPECSCOPE_DEVICE": "cpu"}
    with open(OUTPUT / log_name, "w", encoding="utf-8") as log:
        proc = subprocess.Popen([sys.executable, "app.py", "--pair", "toy", "--no-preload", "--host", "127.0.0.1",
                                 "--port", str(port), *flags], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}/"
        try:
            _wait_until_up(url, proc, timeout_s)
            yield url, proc.pid
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()


def _wait_until_up(url: str, proc: subprocess.Popen, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the app exited with code {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(f"the app did not answer on {url} within {timeout_s} s")


class AppSession:
    """One browser-less user: a gradio_client Client (its own session and gr.State on the server)."""

    def __init__(self, url: str) -> None:
        self.client = Client(url, verbose=False, download_files=False)
        api = self.client.view_api(return_format="dict", print_info=False)["named_endpoints"]
        self.order = [p["label"] for p in api["/step"]["parameters"]]  # the endpoint's positional order
        assert sorted(self.order) == sorted([*LABELS.values(), *OPTION_LABELS]), self.order

    def call(self, endpoint: str, controls: dict) -> tuple:
        """Step or Run with these raw control values (by Controls field name); the endpoint's outputs."""
        by_label = {LABELS[name]: value for name, value in controls.items()}
        result = self.client.predict(*[by_label.get(label) for label in self.order], api_name=endpoint)
        return result if isinstance(result, tuple) else (result,)

    def step(self, controls: dict) -> str:
        """The status line after one Step (the endpoint's first output)."""
        return self.call("/step", controls)[0]
