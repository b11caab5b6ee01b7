"""Through the real page (toy pair): export after 3 Steps, import into a fresh page whose prompt was changed,
Step 3 more times: the exported trace has the tokens of 6 uninterrupted Steps (ui/trace_run.py), and the
import set the controls back to the trace's."""

from __future__ import annotations

import json
import urllib.request

import pytest

from tests.browser.waits import wait_status, wait_step
from tests.served import open_tab, opened

pytestmark = pytest.mark.browser


def steps(page, first: int, last: int) -> None:
    for n in range(first, last + 1):
        page.click("#step-btn")
        wait_step(page, n)


def exported(page) -> dict:
    open_tab(page, "Trace: export / import")
    page.evaluate("() => document.querySelector('#trace-file a[href]')?.remove()")  # wait for THIS export's link
    page.click("#export-btn")
    href = page.wait_for_selector("#trace-file a[href]", timeout=30_000).get_attribute("href")
    url = href if href.startswith("http") else page.url.split("?")[0].rstrip("/") + "/" + href.lstrip("/")
    return json.loads(urllib.request.urlopen(url, timeout=10).read())


def test_steps_after_an_import_continue_the_trace(browser, app_url, tmp_path):
    with opened(browser, app_url) as page:
        steps(page, 1, 6)
        whole = exported(page)
    with opened(browser, app_url) as page:
        steps(page, 1, 3)
        first = exported(page)
    saved = tmp_path / "trace.json"
    saved.write_text(json.dumps(first), encoding="utf-8")
    with opened(browser, app_url) as page:
        prompt = page.get_by_label("prompt", exact=True)
        prompt.fill("the dog")
        open_tab(page, "Trace: export / import")
        page.set_input_files("input[type=file][accept='.json']", str(saved))
        wait_status(page, "re-ran them here")
        assert prompt.input_value() == first["prompt"]  # the controls are the trace's again
        steps(page, 4, 6)
        after = exported(page)
    assert len(whole["steps"]) == 6 and after["prompt_ids"] == whole["prompt_ids"]
    assert after["generated_ids"] == whole["generated_ids"]
