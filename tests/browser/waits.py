"""Waits on the real page that return what they saw.

A wait and the check after it must read the page once: a Run streams its steps, so a status read again after a
wait for "Step 3 of" can already say "Step 5 of 5" (tests/browser/test_pairs.py failed so in a full run). Each helper
returns the value its condition held on, read in the same JavaScript evaluation; the caller checks that value and
never reads the same state a second time.
"""

from __future__ import annotations

from typing import Any

STATUS = "#status"
# `selector`'s innerText when it includes one of `texts`, else null (Playwright polls until it is not)
TEXT_JS = """([selector, texts]) => { const text = document.querySelector(selector)?.innerText;
  return text && texts.some((t) => text.includes(t)) ? text : null; }"""


def wait_value(page, js: str, arg: Any = None, timeout_ms: float = 60_000) -> Any:
    """Wait until the page function `js` (called with `arg`) returns a truthy value; return that value."""
    return page.wait_for_function(js, arg=arg, timeout=timeout_ms).json_value()


def wait_text(page, selector: str, *texts: str, timeout_ms: float = 60_000) -> str:
    """Wait until `selector`'s innerText includes one of `texts`; return that innerText as it was then."""
    return wait_value(page, TEXT_JS, [selector, list(texts)], timeout_ms)


def wait_status(page, *texts: str, timeout_ms: float = 60_000) -> str:
    """Wait until the status line includes one of `texts`; return the status as it was then."""
    return wait_text(page, STATUS, *texts, timeout_ms=timeout_ms)


def wait_step(page, n: int, timeout_ms: float = 60_000) -> str:
    """Wait until the status shows "Step n of n" (the n-th Step of a run drawn); return the status as it was then."""
    return wait_status(page, f"Step {n} of {n}", timeout_ms=timeout_ms)


def set_number(page, selector: str, value: str, settle_ms: float = 500, timeout_ms: float = 30_000) -> str:
    """Type `value` into the number box `selector` and commit it (Enter, then Tab), again until the box still reads
    it `settle_ms` later: a box that a click just revealed (an accordion opening) may still be mounting, and its
    mount writes the old value back over what was typed (a full run read the page's 48 after typing 512). Returns
    the value the box read on the check."""
    box = page.locator(selector)
    box.wait_for(state="visible", timeout=timeout_ms)
    deadline_ms, read = timeout_ms, None
    while deadline_ms > 0:
        box.fill(value)
        box.press("Enter")
        box.press("Tab")
        page.wait_for_timeout(settle_ms)
        read = box.input_value()
        if read == value:
            return read
        deadline_ms -= settle_ms
    raise AssertionError(f"{selector} still reads {read!r} after typing {value!r} for {timeout_ms / 1000:.0f} s")
