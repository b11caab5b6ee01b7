"""The verifier lab tab: pick a tiny language or edit p and q, choose k and verifiers, see every verifier's
exact output law against p, its acceptance against alpha* and the membership bound, and a Monte-Carlo
histogram from its real `verify`; then certify one verifier on a tree shape at sequence level.

Handlers are plain functions of the component values (no module state); the registry is handed in by the
app (the built-ins plus any `--verifier-file` registered at launch).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gradio as gr
import torch

from decoding.lab import language as lang
from decoding.lab.custom import is_custom
from decoding.lab.node import node_report, sequence_report
from decoding.lab.tradeoff import FUZZY, tradeoff
from decoding.lab.trees import parse_shape
from decoding.verify.entry import Verifier
from ui.endpoints import public
from viz import lab as viz_lab

HEADERS = ["token", "p (target)", "q (draft)"]
DEFAULT_PRESET = "worked_example"
DEFAULT_KEYS = ("rrs", "rrs_wor", "spectr", "greedy")
MAX_K = 4
MAX_SAMPLES = 20_000
TRADEOFF_ALWAYS = ("greedy", "typical")  # the lossy baselines drawn beside fuzzy's curve whatever is checked


def preset_names() -> list[str]:
    return list(lang.presets())


def load_preset(name: str) -> lang.TinyLanguage:
    paths = lang.presets()
    if name not in paths:
        raise ValueError(f"unknown preset {name!r}; choose one of: {', '.join(paths)}")
    return lang.load(paths[name])


def table_of(language: lang.TinyLanguage) -> list[list[Any]]:
    """The root rows as an editable table: token, p, q."""
    p, q = language.p(()), language.q(())
    return [[tok, round(float(p[i]), 6), round(float(q[i]), 6)] for i, tok in enumerate(language.vocab)]


def rows_of(table: Any) -> tuple[list[str], torch.Tensor, torch.Tensor, list[str]]:
    """(vocab, p [V], q [V], notes) from the table's value; ValueError (one line) on a bad cell."""
    rows = table.values.tolist() if hasattr(table, "values") else list(table or [])
    rows = [r for r in rows if any(str(c).strip() for c in r)]
    if len(rows) < 2:
        raise ValueError("the table needs at least 2 tokens")
    try:
        p = torch.tensor([float(r[1]) for r in rows], dtype=torch.float64)
        q = torch.tensor([float(r[2]) for r in rows], dtype=torch.float64)
    except (ValueError, TypeError, IndexError):
        raise ValueError("every p and q cell must be a number") from None
    notes: list[str] = []
    p = lang.normalise_row(p, "p", notes)
    q = lang.normalise_row(q, "q", notes)
    return [str(r[0]) for r in rows], p, q, notes


def choices(registry: Mapping[str, Verifier]) -> list[tuple[str, str]]:
    """(label, key): custom verifiers carry a "custom" badge, lossy ones say so."""
    def label(key: str, e: Verifier) -> str:
        badge = " [custom]" if is_custom(e) else ("" if e.lossless else " [lossy]")
        return f"{key}{badge}"

    return [(label(k, e), k) for k, e in registry.items()]


def compute(registry: Mapping[str, Verifier], table: Any, k: Any, keys: list[str] | None, samples: Any):
    """-> (node figure, acceptance figure, summary rows, notes markdown)."""
    try:
        vocab, p, q, notes = rows_of(table)
        k, samples = _int(k, "k", 1, MAX_K), _int(samples, "Monte-Carlo runs", 10, MAX_SAMPLES)
    except ValueError as err:
        return viz_lab.node_figure([], []), viz_lab.acceptance_figure([]), [], f"**Input:** {err}"
    reports = []
    for key in keys or []:
        try:
            reports.append(node_report(registry[key], p, q, k, samples=samples))
        except (KeyError, ValueError) as err:
            notes.append(f"{key}: {err}")
    md = "\n".join(f"- {n}" for n in notes) or "All inputs valid."
    return (viz_lab.node_figure(reports, vocab), viz_lab.acceptance_figure(reports), viz_lab.summary_rows(reports),
            md)


def certify_shape(registry: Mapping[str, Verifier], preset: str, table: Any, key: str, shape: str):
    """-> (sequence figure, markdown): the preset language with its root rows taken from the table."""
    try:
        language = with_root(load_preset(preset), table)
        report = sequence_report(registry[key], language, parse_shape(shape))
    except KeyError:
        return viz_lab.node_figure([], []), f"**Input:** unknown verifier {key!r}"
    except ValueError as err:
        return viz_lab.node_figure([], []), f"**Input:** {err}"
    lines = [f"**{key}** on *{language.name}*, tree {shape}: "
             + ("certified lossless" if report.lossless else f"**NOT lossless**, TV {report.tv:.4g}")]
    if report.monte_carlo_flagged:
        lines.append("- its `verify` disagrees with its own `conditional` (Monte-Carlo check)")
    if not report.lossless:
        lines.append(f"- worst case: `{report.worst_case}`")
    return viz_lab.sequence_figure(report), "\n".join(lines)


def tradeoff_chart(registry: Mapping[str, Verifier], preset: str, table: Any, keys: list[str] | None, shape: str):
    """-> (trade-off figure, markdown): fuzzy's exact staircase as its threshold moves, greedy and typical, and
    the checked verifiers, on the preset language (root rows from the table) and the tree shape."""
    chosen = [k for k in (keys or []) if k in registry and k != FUZZY]
    chosen += [k for k in TRADEOFF_ALWAYS if k in registry and k not in chosen]
    try:
        language = with_root(load_preset(preset), table)
        points, notes = tradeoff(registry, language, parse_shape(shape), [*chosen, FUZZY])
    except ValueError as err:
        return viz_lab.tradeoff_figure([]), f"**Input:** {err}"
    title = f"{language.name}, tree {shape}: tokens per step against TV(output, target), exact"
    md = "\n".join(f"- left out: {n}" for n in notes) or "Every chosen verifier ran this shape."
    return viz_lab.tradeoff_figure(points, title), md


def with_root(language: lang.TinyLanguage, table: Any) -> lang.TinyLanguage:
    """The language with the table's p and q as its root rows (the vocabulary must match)."""
    vocab, p, q, _ = rows_of(table)
    if len(vocab) != language.V:
        raise ValueError(f"the table has {len(vocab)} tokens but the language {language.name!r} has {language.V}")
    return lang.TinyLanguage(language.name, language.vocab, {**language.target, (): p}, {**language.draft, (): q},
                             language.notes)


def _int(value: Any, name: str, low: int, high: int) -> int:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if not number == int(number) or not low <= number <= high:
        raise ValueError(f"{name} must be a whole number in {low}..{high}, got {value!r}")
    return int(number)


def build(registry: Mapping[str, Verifier]) -> dict[str, Any]:
    """The tab's components (call inside a gr.Tab) and their wiring."""
    gr.Markdown("Pick a tiny language or edit p and q (the root node); every verifier's **exact** output law "
                "is drawn against p, with diamonds from its real `verify`. A lossy or wrong verifier is drawn "
                "in orange.")
    keys = [k for k in DEFAULT_KEYS if k in registry] + [k for k, e in registry.items() if is_custom(e)]
    with gr.Row():
        preset = gr.Dropdown(preset_names(), value=DEFAULT_PRESET, label="tiny language", elem_id="lab-preset")
        k = gr.Number(value=2, precision=0, minimum=1, maximum=MAX_K, label="k (candidates)", elem_id="lab-k")
        samples = gr.Number(value=1000, precision=0, label="Monte-Carlo runs", elem_id="lab-samples")
    table = gr.Dataframe(value=table_of(load_preset(DEFAULT_PRESET)), headers=HEADERS, type="array",
                         interactive=True, label="p and q at the root (edit a cell)", elem_id="lab-table")
    verifiers = gr.CheckboxGroup(choices(registry), value=keys, label="verifiers", elem_id="lab-verifiers")
    first = compute(registry, table_of(load_preset(DEFAULT_PRESET)), 2, keys, 1000)  # drawn once at build
    notes = gr.Markdown(first[3], elem_id="lab-notes")
    node_plot = gr.Plot(first[0], label="output law vs p", elem_id="lab-node-plot")
    acc_plot = gr.Plot(first[1], label="acceptance vs alpha*", elem_id="lab-acceptance-plot")
    summary = gr.Dataframe(first[2], headers=viz_lab.SUMMARY_HEADERS, interactive=False, label="summary",
                           elem_id="lab-summary")
    gr.Markdown("### Sequence level: certify one verifier on a tree shape over the chosen language")
    with gr.Row():
        seq_key = gr.Dropdown(choices(registry), value=keys[0] if keys else None, label="verifier",
                              elem_id="lab-seq-verifier")
        shape = gr.Textbox(value="2,2", label="tree shape", elem_id="lab-shape")
        go_btn = gr.Button("Certify", elem_id="lab-certify-btn")
    seq_md = gr.Markdown(elem_id="lab-seq-md")
    seq_plot = gr.Plot(label="emitted sequences vs target joint law", elem_id="lab-seq-plot")
    gr.Markdown("### Lossy trade-off: tokens per step against TV from the target, as fuzzy's threshold moves\n"
                "Exact numbers on the language and tree shape above (root rows from the table): fuzzy's "
                "staircase (one marker per step, hover for T), greedy and typical, and the checked verifiers; "
                "lossless ones sit on the TV = 0 line. Takes a few seconds per verifier.")
    tradeoff_btn = gr.Button("Draw the trade-off", elem_id="lab-tradeoff-btn")
    tradeoff_md = gr.Markdown(elem_id="lab-tradeoff-md")
    tradeoff_plot = gr.Plot(label="tokens per step vs TV", elem_id="lab-tradeoff-plot")
    _wire(registry, preset, table, k, verifiers, samples, (node_plot, acc_plot, summary, notes),
          (seq_key, shape, go_btn, seq_plot, seq_md))

    def tradeoff_click(name, table_value, keys, shape_text):
        return tradeoff_chart(registry, name, table_value, keys, shape_text)

    tradeoff_btn.click(tradeoff_click, [preset, table, verifiers, shape], [tradeoff_plot, tradeoff_md])
    return {"table": table, "node_plot": node_plot, "preset": preset}


def _wire(registry, preset, table, k, verifiers, samples, outs, seq) -> None:
    drawn = gr.State(None)  # the inputs last drawn, per user: the table fires twice for one edit

    def redraw(table_value, k_value, keys, n, last):  # not `run`: its API name would take the Run button's /run
        key = repr((_plain(table_value), k_value, keys, n))
        if key == last:
            return (*[gr.skip()] * len(outs), last)
        return (*compute(registry, table_value, k_value, keys, n), key)

    def pick(name):
        try:
            return table_of(load_preset(name))
        except ValueError:
            return gr.update()

    def certify_click(name, table_value, key, shape_text):
        return certify_shape(registry, name, table_value, key, shape_text)

    inputs, outputs = [table, k, verifiers, samples, drawn], [*outs, drawn]
    preset.change(pick, [preset], [table], show_progress="hidden").then(redraw, inputs, outputs)
    # user edits only (a preset pick runs above); the one of these four redraws published as /lab_node
    table.input(redraw, inputs, outputs, trigger_mode="always_last", **public("lab_node"))
    k.change(redraw, inputs, outputs, trigger_mode="always_last")
    verifiers.change(redraw, inputs, outputs, trigger_mode="always_last")
    seq_key, shape, go_btn, seq_plot, seq_md = seq
    go_btn.click(certify_click, [preset, table, seq_key, shape], [seq_plot, seq_md], **public("lab_certify"))


def _plain(table: Any) -> list:
    """The table as plain nested lists of strings (a pandas frame or a list of lists)."""
    rows = table.values.tolist() if hasattr(table, "values") else list(table or [])
    return [[str(c) for c in r] for r in rows]


def demo(registry: Mapping[str, Verifier]) -> gr.Blocks:
    """The lab alone (for development): `python -c "from ui.lab import demo; ..."`."""
    with gr.Blocks(title="specscope lab") as blocks:
        with gr.Tab("Verifier lab"):
            build(registry)
    return blocks
