"""The browser waits return the state they checked (tests/browser/waits.py), on a page that moves on as a Run does.

test_pairs.py's Stop test failed once in a full run with the status at "Step 5 of 5": its helper waited for
"Step 3 of", then read the status again while the Run went on. Here the page's status advances one step just
after each time the page reads it (as a streaming Run redraws it between the wait and a second read), so a helper
that reads again fails every time, and one that returns what its wait saw passes."""

from __future__ import annotations

import pytest

from tests.browser import waits
from tests.browser.test_pairs import wait_status as pairs_wait_status

pytestmark = pytest.mark.browser

# A status that a "Run" moves one step on just after the page reads it (once per task: each poll of a wait sees
# the next step, none is skipped). Playwright's own inner_text reads the element from its utility world, which
# sees the DOM and not this getter: the second read of a helper that reads again.
MOVING = """<div id="status"></div><script>
  let n = 0, pending = false;
  const el = document.getElementById('status');
  const show = () => { n += 1; el.textContent = `Step ${n} of ${n} · running`; };
  const read = Object.getOwnPropertyDescriptor(HTMLElement.prototype, 'innerText').get;
  show();
  Object.defineProperty(el, 'innerText', {get() {
    if (!pending) { pending = true; setTimeout(() => { pending = false; show(); }, 0); }
    return read.call(this);
  }});
</script>"""


@pytest.fixture
def moving(browser):
    page = browser.new_page()
    try:
        page.set_content(MOVING)
        yield page
    finally:
        page.close()


def test_the_pairs_helper_returns_the_status_its_wait_saw(moving):
    assert pairs_wait_status(moving, "Step 3 of ", timeout_ms=10_000) == "Step 3 of 3 · running"
    assert "Step 3 of" not in moving.inner_text("#status")  # the page went on: a second read sees a later step


def test_wait_step_and_wait_text_return_the_text_they_matched(moving):
    assert waits.wait_step(moving, 2, timeout_ms=10_000) == "Step 2 of 2 · running"
    assert waits.wait_text(moving, "#status", "Step 4 of", "⚠️", timeout_ms=10_000) == "Step 4 of 4 · running"
    assert waits.wait_value(moving, "() => document.querySelector('#status').innerText.match(/Step (6) of/)?.[1]",
                            timeout_ms=10_000) == "6"


# A number box whose mount writes its old value back once, just after the first value typed into it commits (an
# accordion's slider opened by a click and filled at once: a full run read 48 after typing 512).
REMOUNTING = """<input id="n" type="number" value="48"><script>(() => {
  const el = document.getElementById('n'); let mounted = false;
  el.addEventListener('change', () => {
    if (!mounted) { mounted = true; setTimeout(() => { el.value = '48'; }, 100); } });
})();</script>"""  # in a function: the page is set twice, and a second top-level `let` would not run


def test_set_number_types_again_until_the_box_keeps_the_value(browser):
    page = browser.new_page()
    try:
        page.set_content(REMOUNTING)
        box = page.locator("#n")
        box.fill("512")
        box.press("Enter")
        box.press("Tab")
        page.wait_for_timeout(300)
        assert box.input_value() == "48"  # typed once: the mount wrote the old value back
        page.set_content(REMOUNTING)
        assert waits.set_number(page, "#n", "512", settle_ms=300) == "512"
        page.wait_for_timeout(300)
        assert page.locator("#n").input_value() == "512"
    finally:
        page.close()
