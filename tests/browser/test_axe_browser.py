"""Accessibility, checked by axe-core (tests/browser/axe.py) as a screen-reader user or a keyboard user would meet
the pages: the app's page on every tab after a compared Step, the replay file at every step (a compared one
included, in light and projector-dark), and the lesson site's index and every replay it embeds. No serious or
critical violation anywhere; and in the replay file an accepted draft, a residual sample and a bonus token are
told apart by the line under them and their name, not by colour alone."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.browser.axe import serious, summary, violations
from tests.served import open_tab, opened
from ui import lesson, replay_file
from ui.link_query import Link, link_query
from ui.links import TAB_LABELS
from ui.session import Controls

pytestmark = pytest.mark.browser

TOY = replace(Controls(), pair="toy", prompt="the cat", verifier="rrs", branching="2,2", seed=3, max_new_tokens=12)
STATUS = "document.querySelector('#status')?.innerText"


def clean(page, where: str) -> None:
    found = violations(page)
    print(f"axe on {where}: {len(found)} violations, {len(serious(found))} serious or critical\n{summary(found)}")
    assert serious(found) == [], f"{where}:\n{summary(serious(found))}"


def test_the_page_on_every_tab(browser, app_url):
    link = Link(TOY, 2, ("rrs", "rrs_wor"))
    with opened(browser, app_url + "?" + link_query(link)) as page:
        page.wait_for_function(f"{STATUS}?.includes('Step 2 of 2')", timeout=60_000)
        page.wait_for_selector("#tree-plot .js-plotly-plot", timeout=30_000)
        for label in TAB_LABELS:
            open_tab(page, label)
            page.wait_for_timeout(500)
            clean(page, f"the page, tab {label!r}")


@pytest.fixture(scope="module")
def replay_path(tmp_path_factory):
    from tests.ui.test_replay_file import compared_toy_trace  # three steps, the second compared

    path = tmp_path_factory.mktemp("axe") / "replay.html"
    path.write_text(replay_file.document(compared_toy_trace()), encoding="utf-8")
    return path


def test_the_replay_file_at_every_step(browser, replay_path):
    context = browser.new_context(viewport={"width": 1440, "height": 1000})
    try:
        page = context.new_page()
        for query in ("", "?present=1&theme=dark"):
            page.goto(replay_path.as_uri() + query)
            page.wait_for_selector("#story")
            steps = page.locator("#replay-steps button[data-step]").count()
            for s in range(1, steps + 1):
                page.click(f"#replay-steps button[data-step='{s}']")
                page.wait_for_function(f"document.querySelector('#story').dataset.key.startsWith('{s}:')")
                clean(page, f"the replay file{query}, step {s}")
        origins = page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('.replay-legend .tok')]
          .map(t => [t.textContent, getComputedStyle(t).textDecorationStyle]))""")
        assert len(origins) == 4 and len(set(origins.values())) == 4, origins  # each origin its own line and name
    finally:
        context.close()


def test_the_lesson_site(browser, tmp_path):
    lesson.build(tmp_path / "site")
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    context.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:") else r.abort())
    try:
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto((tmp_path / "site" / "index.html").as_uri())
        clean(page, "the lesson's index")
        for idea in lesson.IDEAS:
            frame = page.frame_locator(f"iframe[src='replay-{idea.slug}.html']")
            frame.locator("#story").wait_for(state="attached", timeout=10_000)  # the embedded replay is drawn
            page.goto((tmp_path / "site" / f"replay-{idea.slug}.html").as_uri())
            page.wait_for_selector("#story")
            clean(page, f"the lesson's replay {idea.slug!r}")
            page.goto((tmp_path / "site" / "index.html").as_uri())
        assert errors == []
    finally:
        context.close()
