"""The "How to read this" tab (ui/help.py): the README's panel guide as the app shows it. It must describe every
tab and every model pair the page offers, and it must not link to repository files the app does not serve (a
relative link opened http://host/docs/speed.md: a 404 page)."""

from __future__ import annotations

import re

import app
from ui import help as help_tab
from ui.session import PAIRS

TABS = ("Compare verifiers", "Run statistics", "Trace: export / import", "Verifier lab", "Speed")


def test_the_help_tab_has_no_link_the_app_cannot_serve():
    text = help_tab.help_text()
    links = re.findall(r"\]\(([^)]*)\)", text)
    assert all(re.match(r"[a-z]+:", target) for target in links), links
    assert "docs/speed.md (in specscope's repository)" in text  # the file is still named, as words


def test_a_link_to_a_repository_file_becomes_words_and_a_web_link_stays(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"{help_tab.HELP_HEADING}\n\nSee [docs/speed.md](docs/speed.md), [the notes](docs/x.md#a), "
                      "[gradio](https://gradio.app) and [above](#top).\n## Next\n", encoding="utf-8")
    text = help_tab.help_text(readme)
    assert "See docs/speed.md (in specscope's repository), the notes (docs/x.md#a in specscope's repository)" in text
    assert "[gradio](https://gradio.app)" in text and "[above](#top)" in text


def test_the_help_tab_describes_every_tab_and_every_pair_the_page_offers():
    text = help_tab.help_text()
    demo, _ = app.build_page("toy")
    labels = {block.label for block in demo.blocks.values() if type(block).__name__ == "Tab"}
    assert set(TABS) <= labels  # the tabs this test expects are the page's
    for label in TABS:
        assert f"**{label} (tab).**" in text, label
    for _, kind in PAIRS:
        assert f"`{kind}`" in text, kind
