"""A whole run as ONE self-contained HTML file that needs no server and no network: for slides, a course page,
an email, a static Space.

Drawn from the trace's records only: each step's story block (viz/story_block.py, the live page's words),
its tree (viz/tree_figure.py) and every node's p/q/residual figure (viz/node_figure.py) as plain SVG
(viz/svg_figure.py), each node's tests table, a compared step's small multiples (viz/compare.py), and the
generated text coloured and marked by origin. The story is moved through by the page's own assets/story.js;
assets/replay.js shows one step at a time (each step waits in a <template>, inert until shown), lets the
inspector follow the story and holds the projector and dark-theme switches; assets/replay.css lays it out.
No plotly.js (4.8 MB alone, over the file's budget), no fetch, no external URL.

Element ids of the page are kept where they mean the same thing (#story, #story-prev/-next/-play/-text/
-position, #tree-plot, #node-select, #tests-table, #story-verifier, #compare-multiples), so one script and one
browser test read both.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path

from decoding.run.schema import BONUS, DRAFT, RESIDUAL, RESIDUAL_HIT, StepRecord, Trace
from viz import compare, node_figure, svg_figure, tree_figure
from viz.narrate import About, plural
from viz.palette import ORIGIN_COLORS, ORIGIN_NAMES
from viz.story_block import story_block
from viz.tokens import shorten, visible

ASSETS = Path(__file__).resolve().parents[1] / "assets"
SCRIPTS = ("story.js", "replay.js")
STYLE = "replay.css"
# Each origin is told by an underline of its own style and a name in the legend, not by colour alone.
ORIGIN_LINES = {DRAFT: "solid", RESIDUAL: "dashed", BONUS: "double", RESIDUAL_HIT: "dotted"}
# what the symbols in the tests' notes stand for (the page's legend under the table: ui/inspector.py)
SYMBOLS = ("p = the target's probability, q = the draft's; r = the residual, the target's mass left after the "
           "rejections so far; d = the law the candidate was drawn from (q without the earlier candidates, for "
           "draws without replacement); q' = q without the rejected candidates. A test passes when u ≤ threshold "
           "= min(1, numerator / denominator).")
KEYS = "Keys: ← → events · space plays · n next step · p previous step"


def replay_html(trace: Trace, about_of: Callable[[str], About] | None = None, title: str = "") -> str:
    """The file's text. `about_of(key)`: what the story says beyond the records (ui/story_about.py)."""
    if not trace.steps:
        raise ValueError("this trace has no steps: there is nothing to replay")
    steps = [_step_template(step, i + 1, about_of) for i, step in enumerate(trace.steps)]
    heading = title or "specscope replay"
    return ("<!doctype html>\n"
            f'<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{html.escape(heading)}: {html.escape(shorten(trace.prompt, 60))}</title>"
            f"<style>{_asset(STYLE)}</style>"
            + "".join(f"<script>{_asset(name)}</script>" for name in SCRIPTS)
            + "</head><body>"
            f"{_header(trace, heading)}{_nav(trace)}{_text(trace)}"
            '<main id="replay-stage" aria-live="off"></main>'
            f"{''.join(steps)}{_footer()}</body></html>")


def _asset(name: str) -> str:
    """An asset's text, safe inside <script> / <style> (no closing tag can end it early)."""
    return (ASSETS / name).read_text(encoding="utf-8").replace("</", "<\\/")


def _header(trace: Trace, heading: str) -> str:
    config, models = trace.config, trace.models
    shape = (f"{config.get('sequences')} sequences of depth {config.get('depth')}" if config.get("sequences")
             else "tree " + ",".join(str(w) for w in config.get("branching") or ()))
    tokens = sum(s.n_emitted for s in trace.steps)
    facts = (f"pair {models.get('kind', '?')} · verifier {config.get('verifier', trace.steps[0].verifier)} · {shape} · "
             f"T = {config.get('temperature', '?')} · seed {config.get('seed', '?')} · "
             f"{plural(len(trace.steps), 'step')}, {plural(tokens, 'token')}")
    return ('<header class="replay-head">'
            f'<h1>{html.escape(heading)}</h1><p class="replay-facts">{html.escape(facts)}</p>'
            f'<p class="replay-prompt">Prompt: <q>{html.escape(trace.prompt)}</q></p>'
            '<div class="replay-toggles">'
            '<button type="button" id="present-toggle" aria-pressed="false">projector mode</button>'
            '<button type="button" id="theme-toggle" aria-pressed="false">dark theme</button>'
            f'<span class="replay-keys">{html.escape(KEYS)}</span></div></header>')


def _nav(trace: Trace) -> str:
    items = "".join(
        f'<li><button type="button" data-step="{i + 1}" aria-label="step {i + 1}: {s.n_emitted} '
        f'{"token" if s.n_emitted == 1 else "tokens"}">{i + 1}<small> · {s.n_emitted}</small></button></li>'
        for i, s in enumerate(trace.steps))
    return ('<nav id="replay-steps" aria-label="steps of the run">'
            '<button type="button" id="replay-prev-step" aria-label="previous step">◀ step</button>'
            f'<ol>{items}</ol>'
            '<button type="button" id="replay-next-step" aria-label="next step">step ▶</button>'
            f'<span id="replay-step-position" aria-live="polite">step 1 of {len(trace.steps)}</span></nav>')


def _text(trace: Trace) -> str:
    """The generated text up to the shown step: each token underlined in its origin's colour and line style."""
    spans = "".join(f'<span class="tok origin-{e.kind}" data-step="{s.index + 1}" '
                    f'title="step {s.index + 1}: {html.escape(ORIGIN_NAMES[e.kind], quote=True)}">'
                    f"{html.escape(e.text)}</span>" for s in trace.steps for e in s.emitted)
    legend = "".join(f'<span class="tok origin-{k}">{html.escape(name)}</span>' for k, name in ORIGIN_NAMES.items())
    colours = "".join(f".origin-{k}{{text-decoration-color:{ORIGIN_COLORS[k]};text-decoration-style:{ORIGIN_LINES[k]}}}"
                      for k in ORIGIN_COLORS)
    return (f"<style>{colours}</style>"
            '<section id="replay-text" aria-label="generated text, marked by origin">'
            f'<p class="replay-legend">{legend}</p>'
            f'<p id="generated-text"><span class="prompt">{html.escape(trace.prompt)}</span>{spans}</p></section>')


def _step_template(step: StepRecord, position: int, about_of: Callable[[str], About] | None) -> str:
    verdicts = [v.key for v in step.compare.verdicts] if step.compare is not None else []
    others = "".join(f'<template class="replay-story" data-step="{position}" data-verifier="{html.escape(k, True)}">'
                     f"{story_block(step, position, k, about_of)}</template>" for k in verdicts if k != step.verifier)
    return (f'<template class="replay-step" data-step="{position}">'
            '<div class="replay-grid">'
            f'<section class="story-area" aria-label="the story of step {position}">'
            f"{_whose(step, verdicts)}{story_block(step, position, None, about_of)}</section>"
            f'<section id="tree-plot" aria-label="draft tree of step {position}">'
            f"{svg_figure.svg(tree_figure.tree_spec(step), 620, css_class='figure tree')}</section>"
            f"{_inspector(step)}{_compared(step)}</div></template>{others}")


def _whose(step: StepRecord, verdicts: list[str]) -> str:
    if not verdicts:
        return ""
    options = "".join(f'<option value="{html.escape(k, True)}"{" selected" if k == step.verifier else ""}>'
                      f"{html.escape(k)}</option>" for k in verdicts)
    return ('<label class="story-whose">whose story (this step was compared) '
            f'<select id="story-verifier">{options}</select></label>')


def _inspector(step: StepRecord) -> str:
    shown = step.visits[-1].node if step.visits else 0  # the last verified node, as the page's default
    options = "".join(f'<option value="{n.id}"{" selected" if n.id == shown else ""}>'
                      f"{html.escape(node_label(step, n.id))}</option>" for n in step.nodes)
    panels = "".join(f'<div class="node-panel" data-node="{n.id}"{"" if n.id == shown else " hidden"}>'
                     f"{svg_figure.svg(node_figure.node_spec(step, n.id), 640, css_class='figure node')}"
                     f"{_tests_table(step, n.id)}</div>" for n in step.nodes)
    return ('<section id="inspector" aria-label="node inspector">'
            '<label for="node-select">inspect a node of this step</label>'
            f'<select id="node-select">{options}</select>{panels}'
            f'<p class="tests-legend"><small>{html.escape(SYMBOLS)}</small></p></section>')


def node_label(step: StepRecord, node: int) -> str:
    """A node as the page's node menu names it (ui/inspector.py's node_choices)."""
    n = step.nodes[node]
    verified = ", verified" if any(v.node == node for v in step.visits) else ""
    return f"{n.id}: {shorten(visible(n.text), 20)} ({n.status}{verified})"


def _tests_table(step: StepRecord, node: int) -> str:
    rows = node_figure.tests_table(step, node)
    head = "".join(f'<th scope="col">{html.escape(h)}</th>' for h in node_figure.TEST_HEADERS)
    body = "".join("<tr>" + "".join(f"<td>{_cell(c)}</td>" for c in row) + "</tr>" for row in rows)
    empty = f'<tr><td colspan="{len(node_figure.TEST_HEADERS)}">no tests at this node</td></tr>'
    # a region that may scroll sideways: focusable (keys scroll it) and named
    return (f'<div class="table-wrap" tabindex="0" role="region" aria-label="tests at node {node}">'
            f'<table class="tests-table"><caption>tests at node {node}, in order</caption>'
            f"<thead><tr>{head}</tr></thead><tbody>{body or empty}</tbody></table></div>")


def _cell(value) -> str:
    text = "" if value is None else str(value)
    mark = {"yes": "✓ yes", "no": "✗ no"}.get(text, text)  # passed: a shape beside the word
    return html.escape(mark)


def _compared(step: StepRecord) -> str:
    if step.compare is None:
        return ""
    figure = compare.small_multiples(step.compare).to_plotly_json()
    return ('<section id="compare-multiples" aria-label="the verifiers compared on this step">'
            f"{svg_figure.svg(figure, 960, css_class='figure compare')}</section>")


def _footer() -> str:
    return ('<footer class="replay-foot"><p>Made by specscope from the run\'s records only: open it from disk, '
            "no server or network needed.</p></footer>")
