"""The real page in headless Chromium: launch the app (toy pair) on a free port, click Step, wait
for the tree, take a screenshot (tests/output/screenshot.png; with SPECSCOPE_UPDATE_SCREENSHOT=1
also assets/screenshot.png, the README's picture)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from playwright import sync_api

ROOT = Path(__file__).resolve().parents[2]
OUTPUT = ROOT / "tests" / "output"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]

pytestmark = pytest.mark.browser


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_up(url: str, proc: subprocess.Popen, timeout_s: float = 120) -> None:
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


@pytest.fixture(scope="module")
def app_url():
    OUTPUT.mkdir(parents=True, exist_ok=True)
    port = free_port()
    env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", "SPECSCOPE_DEVICE": "cpu"}
    log = open(OUTPUT / "app.log", "w", encoding="utf-8")
    proc = subprocess.Popen([sys.executable, "app.py", "--pair", "toy", "--host", "127.0.0.1", "--port", str(port)],
                            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    try:
        wait_until_up(url, proc)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="module")
def page(app_url):
    assert Path(CHROMIUM).exists(), "Debian's chromium is missing: apt-get install -y chromium"
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1440, "height": 1000})
        page.goto(app_url)
        page.wait_for_selector("#step-btn", timeout=60_000)
        yield page
        browser.close()


def test_step_draws_the_tree_and_the_screenshot_is_saved(page):
    for n in (1, 2, 3):
        page.click("#step-btn")
        page.wait_for_function(f"document.querySelector('#status')?.innerText.includes('Step {n} of {n}')",
                               timeout=60_000)
    page.wait_for_selector("#tree-plot .scatterlayer .point", timeout=30_000)
    assert page.locator("#tree-plot .scatterlayer .point").count() >= 4  # root, drafts, emitted token
    assert page.locator("#node-plot .barlayer .point").count() > 0
    assert "Step 3 of 3" in page.inner_text("#status")
    # plotly's drag layer covers the markers, so hover by moving the mouse onto one: the lowest
    # marker in the left half, whose label then covers little of the tree in the screenshot
    page.locator("#tree-plot").scroll_into_view_if_needed()
    plot = page.locator("#tree-plot").bounding_box()
    points = page.locator("#tree-plot .scatterlayer .point")
    boxes = [points.nth(i).bounding_box() for i in range(points.count())]
    box = max((b for b in boxes if b["x"] < plot["x"] + 0.45 * plot["width"]), key=lambda b: b["y"])
    page.mouse.move(box["x"] - 40, box["y"] - 40)
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2, steps=5)
    page.wait_for_selector("#tree-plot .hoverlayer .hovertext", state="attached", timeout=10_000)
    hover = page.locator("#tree-plot .hoverlayer").text_content()
    assert "token" in hover and "status" in hover
    assert "Traceback" not in page.content()
    shot = OUTPUT / "screenshot.png"  # with the hover label showing: the README explains it
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 20_000
    if os.environ.get("SPECSCOPE_UPDATE_SCREENSHOT"):  # refresh the README's picture on request only
        shutil.copyfile(shot, ROOT / "assets" / "screenshot.png")


def test_the_slider_replays_an_earlier_step(page):
    box = page.locator("#step-slider input[type=number]")
    box.fill("1")
    box.press("Enter")
    page.wait_for_function("document.querySelector('#status')?.innerText.includes('Step 1 of 3')", timeout=30_000)
    page.wait_for_selector("#tree-plot .scatterlayer .point", timeout=30_000)


def test_a_bad_tree_shape_shows_a_message_and_the_page_stays_up(page):
    box = page.get_by_label("children per node at each depth")
    box.fill("3,banana")
    page.click("#step-btn")
    page.wait_for_function("document.querySelector('#status')?.innerText.includes('⚠️')", timeout=30_000)
    assert "comma-separated positive integers" in page.inner_text("#status")
    box.fill("3,2")
    page.click("#step-btn")
    page.wait_for_function("document.querySelector('#status')?.innerText.includes('Step 1 of 1')",
                           timeout=60_000)


def test_run_streams_to_the_end_and_the_slider_replays(page):
    page.click("#reset-btn")
    page.wait_for_function("document.querySelector('#status')?.innerText.includes('Reset')", timeout=30_000)
    page.click("#run-btn")
    page.wait_for_function("document.querySelector('#status')?.innerText.includes('finished (')", timeout=120_000)
    status = page.inner_text("#status")
    assert "Step " in status and "Traceback" not in page.content()


def test_export_then_import_through_the_page(page, tmp_path):
    page.click("#reset-btn")
    page.click("#step-btn")
    page.wait_for_function("document.querySelector('#status')?.innerText.includes('Step 1 of 1')", timeout=60_000)
    page.get_by_role("tab", name="Trace: export / import").click()
    page.click("#export-btn")
    link = page.wait_for_selector("#trace-file a[href]", timeout=30_000)
    href = link.get_attribute("href")
    url = href if href.startswith("http") else page.url.rstrip("/") + "/" + href.lstrip("/")
    body = urllib.request.urlopen(url, timeout=10).read()
    assert b'"format": "specscope-trace"' in body
    saved = tmp_path / "trace.json"
    saved.write_bytes(body)
    page.click("#reset-btn")
    page.wait_for_function("document.querySelector('#status')?.innerText.includes('Reset')", timeout=30_000)
    page.set_input_files("input[type=file][accept='.json']", str(saved))  # the UploadButton's input
    page.wait_for_function("document.querySelector('#status')?.innerText.includes('Imported a trace of 1 steps')",
                           timeout=30_000)
    assert page.locator("#tree-plot .scatterlayer .point").count() >= 2
