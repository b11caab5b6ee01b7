"""The "Museum" tab: real speculative-decoding bugs (decoding/lab/museum.py), each reproduced exactly, and a way
to open one on a live step.

The table lists every exhibit's thread, published number and exact reproduction, computed when the page is built
(every exhibit's node and its fix's certificate take about 0.05 s in all); the first exhibit's toy node is drawn
from the start, and picking another draws its node (p, the bug's emitted law, the fix).
"Open on a live step" sets the controls to the exhibit's buggy rule on the toy pair (a chain of 3, T = 1), when the
app was launched with `--museum` (which registers assets/museum/*.py as custom verifiers); otherwise it says how.
Handlers are plain functions of the component values; the page's null (None) for a pick is handled."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from decoding.lab import museum
from decoding.verify.registry import VERIFIERS
from ui.session import SHAPES
from ui.views import md
from viz import museum as viz_museum

INTRO = ("### Museum: real speculative-decoding bugs, reproduced exactly\n"
         "Each exhibit is a real thread: the buggy rule as a verifier file (`assets/museum/`), the number its "
         "authors published, specscope's exact reproduction on a toy node, the exact TV of what the bug emits, and "
         "the fix certified lossless. The same listing: `./specscope museum`.")
LIVE_CHAIN = "1,1,1"
LIVE_TEMPERATURE = 1.0
LIVE_PROMPT = "the cat"  # a toy-pair prompt


@dataclass
class MuseumPanel:
    table: gr.HTML
    pick: gr.Dropdown
    open: gr.Button
    plot: gr.Plot
    detail: gr.Markdown


def static_rows() -> list[dict[str, Any]]:
    """Each exhibit's thread and published number, before anything is computed."""
    return [{"key": e.key, "title": e.title, "project": e.project, "published": e.published,
             "links": [{"label": label, "url": url} for label, url in e.links]} for e in museum.EXHIBITS]


def build() -> MuseumPanel:
    with gr.Tab("Museum", id="museum"):
        gr.Markdown(INTRO)
        table = gr.HTML(reproduce_all(), elem_id="museum-table-html")
        first = museum.EXHIBITS[0].key
        with gr.Row():
            pick = gr.Dropdown([(f"{e.project}: {e.title}", e.key) for e in museum.EXHIBITS],
                               value=first, label="exhibit", elem_id="museum-pick")
            opener = gr.Button("Open on a live step", elem_id="museum-open")
        figure, text = show(first)  # drawn from the start: no empty plot on a fresh page
        plot = gr.Plot(figure, elem_id="museum-plot", show_label=False)
        detail = gr.Markdown(text, elem_id="museum-detail")
    return MuseumPanel(table, pick, opener, plot, detail)


def reproduce_all() -> str:
    return viz_museum.table_html([rep.to_json() for rep in museum.reports()])


def show(key: str | None) -> tuple[Any, str]:
    """One exhibit: its toy node drawn and its reproduction in words (nothing picked: nothing drawn)."""
    if not key:
        return None, ""
    try:
        rep = museum.report(museum.get(key)).to_json()
    except ValueError as err:
        return None, f"⚠️ {md(str(err))}"
    return viz_museum.law_figure(rep), detail_text(rep)


def detail_text(rep: dict[str, Any]) -> str:
    links = ", ".join(f"[{md(link['label'])}]({link['url']})" for link in rep["links"])
    lines = [f"**{md(rep['title'])}** ({md(rep['project'])}: {links}). {md(rep['status'])}.",
             f"Published: {md(rep['published'])}.",
             f"specscope: {md(viz_museum.reproduction_text(rep))}.",
             f"Exact TV of the bug at the toy node: {md(viz_museum.tv_text(rep))}. "
             f"Fix: {md(viz_museum.fix_text(rep))}.",
             f"Buggy rule: `{rep['file']}`" + (f". {md(rep['notes'])}" if rep.get("notes") else "")]
    return "  \n".join(lines)


def live_key(key: str) -> str:
    """The registry key a `--museum` launch gives the exhibit's file (its NAME: museum_<file stem>)."""
    return "museum_" + museum.get(key).file.removesuffix(".py")


def open_live(key: str | None) -> tuple[dict, dict, dict, dict, dict, dict, str]:
    """The controls set to the exhibit's buggy rule on the toy pair, a chain of 3 at T = 1 (press Step), when the
    app registered the museum's files; else the controls unchanged and the line saying how."""
    keep = (gr.update(),) * 6
    if not key:
        return (*keep, "Pick an exhibit first.")
    try:
        name = live_key(key)
    except ValueError as err:
        return (*keep, f"⚠️ {md(str(err))}")
    if name not in VERIFIERS:
        file = museum.get(key).file
        return (*keep, f"This rule is not registered here: launch `./specscope app --museum` (or `--verifier-file "
                       f"assets/museum/{file}`) to run it on a live step. "
                       + ("Specscope refuses this one (its law is NaN)." if key.startswith("vllm-") else ""))
    return (gr.update(value="toy"), gr.update(value=LIVE_PROMPT), gr.update(value=name), gr.update(value=SHAPES[0]),
            gr.update(value=LIVE_CHAIN), gr.update(value=LIVE_TEMPERATURE),
            f"Controls set: toy pair, `{name}`, chain {LIVE_CHAIN}, T = {LIVE_TEMPERATURE}. Press **Step** above.")


def wire(panel: MuseumPanel, controls: dict[str, Any]) -> None:
    panel.pick.change(show, [panel.pick], [panel.plot, panel.detail])
    panel.open.click(open_live, [panel.pick], [controls["pair"], controls["prompt"], controls["verifier"],
                                               controls["shape"], controls["branching"], controls["temperature"],
                                               panel.detail])
