"""A shared link opened in a fresh page (toy pair): it runs its Steps and shows the CLI's text for the same
settings; then the step's story is played to its end in the page (◀ ▶ ▶▶, "event i of n", the narration
changing at every event, the tree highlighting and the inspector following the event's node)."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import replace

import pytest

from tests.browser.waits import wait_step, wait_value
from tests.served import ROOT, opened
from ui.link_query import Link, cli_command, link_query
from ui.session import Controls

pytestmark = pytest.mark.browser

CONTROLS = replace(Controls(), pair="toy", prompt="the cat", verifier="rrs_wor", branching="3,2", seed=5,
                   max_new_tokens=10)
TEXT_JS = ("() => Array.from(document.querySelectorAll('#generated-text .textfield .token .text'))"
           ".map(s => s.textContent).join('')")
NODE_OF = "document.querySelectorAll('#story-events > li')[{}].dataset.node"
POSITION = "(document.querySelector('#story-position')?.innerText || '')"


def cli_run(controls: Controls) -> tuple[str, int]:
    """(text, steps) of `python -m decoding generate` with the link's settings (its own command line)."""
    import shlex

    args = shlex.split(cli_command(controls))[1:]
    done = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=300, check=True)
    steps = int(re.search(r"in (\d+) steps", done.stderr).group(1))
    return done.stdout[:-1], steps  # print() added one newline


def test_a_link_opened_in_a_fresh_page_shows_the_clis_text_and_its_story_plays_to_the_end(browser, app_url):
    text, steps = cli_run(CONTROLS)
    with opened(browser, app_url + "?" + link_query(Link(CONTROLS, steps))) as page:
        wait_step(page, steps)
        shown = wait_value(page, f"() => {{ const shown = ({TEXT_JS})(); "
                                 f"return shown.length >= {len(text.strip())} ? shown : null; }}", timeout_ms=30_000)
        assert shown.removesuffix("<eos>") == text  # the page shows the end-of-sequence token; the CLI stops at it
        assert page.locator("#link-notice").inner_text().strip() == ""

        n = int(page.evaluate(POSITION).split(" of ")[1])
        assert page.evaluate(POSITION) == f"event 1 of {n}" and n >= 4
        seen = [page.inner_text("#story-text")]
        dimmed_at_some_event, followed = False, set()
        for i in range(2, n + 1):
            page.click("#story-next")
            assert page.evaluate(POSITION) == f"event {i} of {n}"
            seen.append(page.inner_text("#story-text"))
            assert seen[-1] != seen[-2], f"event {i} told the same as event {i - 1}"
            dimmed_at_some_event |= page.evaluate(
                "Array.from(document.querySelectorAll('#tree-plot path.point')).some(p => p.style.opacity === '0.15')")
            node = page.evaluate(NODE_OF.format(i - 1))
            followed.add(node)
        page.click("#story-next")  # past the end: stays at the last event
        assert page.evaluate(POSITION) == f"event {n} of {n}"
        assert dimmed_at_some_event
        last = page.evaluate(NODE_OF.format(n - 1))
        page.wait_for_function(f"(document.querySelector('#node-select input')?.value || '').startsWith('{last}:')",
                               timeout=30_000)  # the inspector followed the story to its last node

        # ▶▶ from the end plays the whole story again, every event shown in turn
        page.evaluate("""() => { document.querySelector('#story-pace').value = '300'; window.__told = [];
          new MutationObserver(() => window.__told.push(document.querySelector('#story-text').textContent))
            .observe(document.querySelector('#story-text'),
                     {childList: true, characterData: true, subtree: true}); }""")
        page.click("#story-play")
        told = wait_value(page, f"() => {POSITION} === 'event {n} of {n}' && window.__told.length >= {n} "
                                "&& window.__told.slice()", timeout_ms=30_000)
        assert [t for i, t in enumerate(told) if i == 0 or t != told[i - 1]] == seen


def test_copy_link_gives_the_link_of_what_is_on_screen(browser, app_url):
    controls = replace(CONTROLS, seed=11, verifier="rrs", branching="2,2")
    with opened(browser, app_url + "?" + link_query(Link(controls, 2))) as page:
        wait_step(page, 2)
        page.click("#share button, #share .label-wrap")
        page.click("#copy-link")
        url = wait_value(page, "() => { const url = document.querySelector('#share-link textarea, #share-link input')"
                               "?.value || ''; return url.startsWith('http') ? url : null; }", timeout_ms=30_000)
    assert url.startswith(app_url) and link_query(Link(controls, 2)) in url


def test_a_fresh_compare_tab_shows_no_empty_plot_and_headers_break_between_words(browser, app_url):
    from tests.served import open_tab

    with opened(browser, app_url) as page:
        open_tab(page, "Compare verifiers")
        page.wait_for_selector("#compare-table th", timeout=30_000)
        hidden = page.evaluate("['#compare-multiples', '#compare-laws'].map(s => "
                               "getComputedStyle(document.querySelector(s)).display)")
        assert hidden == ["none", "none"]  # no placeholder icon before the first comparison
        page.click("#step-btn")
        wait_step(page, 1)
        breaks = page.evaluate("Array.from(document.querySelectorAll('#tests-table th span.header')).map(s => "
                               "[getComputedStyle(s).wordBreak, getComputedStyle(s).overflowWrap])")
        assert breaks and all(b == ["normal", "normal"] for b in breaks)
        clipped = page.evaluate("""Array.from(document.querySelectorAll('#tests-table th')).filter(th => {
          const span = th.querySelector('span.header'); const r = document.createRange(); r.selectNodeContents(span);
          return Array.from(r.getClientRects()).some(b => b.right > th.getBoundingClientRect().right + 0.5);
        }).map(th => th.innerText)""")
        assert clipped == []  # every header's words are whole inside its column
