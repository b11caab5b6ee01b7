"""The page's tab bars hold tabs only. Gradio's front end numbers each gr.Tab by its index among its gr.Tabs'
children and keeps its tab list by that number: any other child (a gr.State created inside `with gr.Tabs()` but
outside a tab) shifts the numbers of the tabs after it, and selecting one of those wrote it over its neighbour's
entry: its label drawn twice, the neighbour gone from the bar (tests/browser/test_tabs_browser.py shows it)."""

from __future__ import annotations

import app
from ui.links import TAB_LABELS


def tab_bars(config: dict) -> list[list[dict]]:
    """Each gr.Tabs of the page as the list of its children's component configs, in layout order."""
    components = {c["id"]: c for c in config["components"]}
    bars = []

    def walk(node: dict) -> None:
        if components.get(node["id"], {}).get("type") == "tabs":
            bars.append([components[child["id"]] for child in node.get("children", [])])
        for child in node.get("children", []):
            walk(child)

    walk(config["layout"])
    return bars


def test_every_child_of_a_tab_bar_is_a_tab():
    demo, _ = app.build_page("toy")
    bars = tab_bars(demo.get_config_file())
    assert bars, "the page has its tabs"
    for bar in bars:
        assert [c["type"] for c in bar] == ["tabitem"] * len(bar), [(c["type"], c["props"].get("label")) for c in bar]
    main = next(bar for bar in bars if bar[0]["props"].get("label") == "Compare verifiers")
    assert [c["props"]["label"] for c in main] == list(TAB_LABELS)  # and the links' tab ids name these tabs
