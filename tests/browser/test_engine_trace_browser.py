"""The Trace tab's Engine traces panel in the real page: a vLLM record uploaded (PR #48915's example) is drawn with
its per-position rates and the embedded pair's exact expectation beside it, its numbers in words, with no serious
axe-core violation on the tab; a bad record shows its one-line reason and the page keeps serving. Screenshots in
tests/output/ (engine_trace_*.png)."""

from __future__ import annotations

import json

import pytest

from tests.browser.axe import serious, summary, violations
from tests.browser.waits import wait_text, wait_value
from tests.served import OUTPUT, ROOT, open_tab, opened

pytestmark = pytest.mark.browser
VLLM = ROOT / "assets" / "engine_traces" / "vllm_pr48915_summary.json"
EXPECTATION = "embedded pair, T = 0.8 (shipped)"
POINTS = "(sel) => document.querySelectorAll(sel).length"


def choose(page, elem_id: str, label: str) -> None:
    box = page.locator(f"#{elem_id} input").first
    box.click()
    box.fill(label)
    page.locator("[role=option]", has_text=label).first.click()
    wait_value(page, "(id) => document.querySelector('#' + id + ' input').value", elem_id)


def clear(page) -> None:
    page.locator("#engine-trace-upload button[aria-label='Clear']").first.click()
    page.wait_for_selector("#engine-trace-upload input[type=file]", state="attached", timeout=30_000)


def test_a_vllm_record_is_drawn_beside_the_exact_expectation(browser, app_url, tmp_path):
    with opened(browser, app_url) as page:
        open_tab(page, "Trace: export / import")
        page.wait_for_selector("#engine-trace-upload input[type=file]", state="attached", timeout=30_000)
        choose(page, "engine-trace-expect", EXPECTATION)
        page.set_input_files("#engine-trace-upload input[type=file]", str(VLLM))
        words = wait_text(page, "#engine-trace-summary", "10 of 129 drafts accepted (0.0775), 43 verification steps")
        assert "mean acceptance length 1.2326" in words and "embedded pair's shipped chain acceptance" in words
        # the engine's 3 rates and the 3 exact depths, and the histogram's 4 bars
        assert wait_value(page, f"() => ({POINTS})('#engine-trace-plot .scatterlayer .point') >= 6 || null")
        assert page.evaluate(POINTS, "#engine-trace-plot .barlayer .point") == 4
        page.wait_for_timeout(500)  # plotly's drawing settled, for the screenshot
        OUTPUT.mkdir(parents=True, exist_ok=True)
        page.locator("#engine-trace-plot").screenshot(path=str(OUTPUT / "engine_trace_vllm.png"))
        page.locator("#engine-trace-plot").scroll_into_view_if_needed()
        page.screenshot(path=str(OUTPUT / "engine_trace_vllm_page.png"))
        found = serious(violations(page))  # the drawn panel adds no serious or critical accessibility violation
        assert found == [], summary(found)

        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps({"metrics": {"speculative_decoding": {
            "num_spec_steps": 43, "num_draft_tokens": 129, "num_accepted_draft_tokens": 10, "num_spec_tokens": 3,
            "acceptance_histogram": [38, 1, 0, 3]}}}))
        clear(page)  # a File box holding a file shows no upload input until cleared
        page.set_input_files("#engine-trace-upload input[type=file]", str(bad))
        wait_text(page, "#engine-trace-summary", "the acceptance histogram sums to 42 steps, but the record counts 43")
        clear(page)
        page.locator("#engine-trace-draw").click()  # the page still serves: the picked example is drawn
        wait_text(page, "#engine-trace-summary", "**vLLM record (summary)**", "vLLM record (summary): 10 of 129")
