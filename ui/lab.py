"""The verifier lab tab: pick a tiny language or edit p and q, choose k and verifiers, see every verifier's
exact output law against p, its acceptance against alpha* and the membership bound, and a Monte-Carlo
histogram from its real `verify`; then certify one verifier on a tree shape at sequence level.

Handlers are plain functions of the component values (no module state); the registry is handed in by the
app (the built-ins plus any `--verifier-file` registered at launch).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import gradio as gr
import torch

from decoding.lab import frontier as price
from decoding.lab import language as lang
from decoding.lab.custom import is_custom
from decoding.lab.node import node_report, sequence_report
from decoding.lab.tradeoff import FUZZY, tradeoff, tradeoff_size
from decoding.lab.trees import PastLimit, enumeration_size
from decoding.run.config import parse_branching
from decoding.verify.entry import Verifier
from decoding.verify.registry import unknown_verifier
from ui.endpoints import public
from ui.session import shown_number
from viz import frontier as viz_frontier
from viz import lab as viz_lab

HEADERS = ["token", "p (target)", "q (draft)"]
DEFAULT_PRESET = "worked_example"
DEFAULT_KEYS = ("rrs", "rrs_wor", "spectr", "greedy")
MAX_K = 4
MAX_SAMPLES = 20_000
TRADEOFF_ALWAYS = ("greedy", "typical")  # the lossy baselines drawn beside fuzzy's curve whatever is checked
SHAPE_FIELD = "tree shape"  # the shape box's label, named in its refusals (the CLI names its --tree flag)
# The most tree nodes (drafted trees x nodes per tree, plus padded sequences: trees.enumeration_size) one
# Certify may enumerate. Certify walks the trees twice, three times when lossy, so its time grows with these
# units; 100k keeps a Certify to a few seconds on a loaded 2-core CPU (docs/speed.md, "Measurements the code's
# comments cite"), which matters because one running Certify holds the queue for every user. Tree shape
# 4,4,4,4 on worked_example is ~1e201 trees: it did not finish when tried. The CLI keeps no limit.
MAX_CERTIFY_WORK = 100_000
# The trade-off walks each tree once per verifier (no Monte-Carlo, no worst-case pass: about half a Certify's
# cost per unit) and fuzzy once per threshold: the default (worked_example, 2,2, four verifiers, the two baselines,
# fuzzy at 3 thresholds) is 156k units; every verifier ticked at 2,2 is 256k. 300k lets every verifier draw at the
# default shape and holds the chart to several seconds (docs/speed.md, "Measurements the code's comments cite").
MAX_TRADEOFF_WORK = 300_000
# The most Monte-Carlo draws (runs x verifiers) one node-level redraw may make: every verifier ticked at k = 2 with
# 20,000 runs each held the queue for every user for more than half a minute on a loaded 2-core CPU; 60,000 keeps
# a redraw to a few seconds (docs/speed.md, "Measurements the code's comments cite"; the defaults, 4 verifiers x
# 1,000 runs, are 4,000).
MAX_NODE_DRAWS = 60_000


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
    """-> (node figure, acceptance figure, summary rows, notes markdown). A refused input empties the plots
    with its own reason (never "choose at least one verifier" while some are chosen)."""
    try:
        vocab, p, q, notes = rows_of(table)
        k, samples = _int(k, "k (candidates)", 1, MAX_K), _int(samples, "Monte-Carlo runs", 10, MAX_SAMPLES)
        check_draws(samples, len(keys or []))
    except ValueError as err:
        return *_nothing_drawn(f"Input: {err}"), [], f"**Input:** {err}"
    reports = []
    for key in keys or []:
        try:
            reports.append(node_report(registry[key], p, q, k, samples=samples))
        except (KeyError, ValueError) as err:
            notes.append(f"{key}: {err}")
    md = "\n".join(f"- {n}" for n in notes) or "All inputs valid."
    if keys and not reports:
        return *_nothing_drawn(f"none of the chosen verifiers can run with k = {k}: see the notes"), [], md
    return (viz_lab.node_figure(reports, vocab), viz_lab.acceptance_figure(reports), viz_lab.summary_rows(reports),
            md)


def check_draws(samples: int, verifiers: int) -> None:
    """ValueError (the limit and what to do) when the redraw would make more than MAX_NODE_DRAWS draws."""
    if samples * verifiers > MAX_NODE_DRAWS:
        raise ValueError(f"{samples:,} Monte-Carlo runs for each of {verifiers} verifiers is {samples * verifiers:,} "
                         f"draws; this server draws at most {MAX_NODE_DRAWS:,} per redraw (about 6 s). Lower the runs "
                         f"to {MAX_NODE_DRAWS // verifiers:,} or uncheck some verifiers")


def _nothing_drawn(reason: str):
    """(node figure, acceptance figure), both saying why they are empty."""
    return viz_lab.message_figure(reason), viz_lab.message_figure(reason)


def price_chart(registry: Mapping[str, Verifier], table: Any):
    """-> (figure, rows, note): every node-level lossy rule's exact acceptance against the exact TV and KL of what it
    emits at the table's node (one draft), sd at TV 0, the frontier dashed (decoding/lab/frontier.py). A bad
    table empties the chart with its one line."""
    try:
        _, p, q, _ = rows_of(table)
    except ValueError as err:
        return None, [], f"⚠️ {err}"
    points = price.frontier(registry, p, q)
    best = price.pareto(points)
    note = ("Each point is one rule at one setting; hover for its advertised budget beside the KL it really emits. "
            "On the frontier: " + ", ".join(f"{pt.rule} {pt.setting}".strip() for pt in best) + ".")
    return viz_frontier.frontier_figure(points, best), viz_frontier.budget_rows(points), note


def certify_shape(registry: Mapping[str, Verifier], preset: str, table: Any, key: str, shape: str):
    """-> (sequence figure, markdown): the preset language with its root rows taken from the table."""
    try:
        language, levels = with_root(load_preset(preset), table), parse_branching(shape, SHAPE_FIELD)
        check_size(registry[key], language, levels)
        report = sequence_report(registry[key], language, levels)
    except KeyError:
        return viz_lab.message_figure("nothing certified"), f"**Input:** {unknown_verifier(key)}"
    except ValueError as err:
        return viz_lab.message_figure("nothing certified"), f"**Input:** {err}"
    lines = [f"**{key}** on *{language.name}*, tree {shape}: "
             + ("certified lossless" if report.lossless else f"**NOT lossless**, TV {viz_lab.tv_text(report.tv)}")]
    if report.monte_carlo_flagged:
        lines.append("- its `verify` disagrees with its own `conditional` (Monte-Carlo check)")
    if not report.lossless:
        lines.append(f"- worst case: `{report.worst_case}`")
    return viz_lab.sequence_figure(report), "\n".join(lines)


def tradeoff_chart(registry: Mapping[str, Verifier], preset: str, table: Any, keys: list[str] | None, shape: str):
    """-> (trade-off figure, markdown): fuzzy's exact points as its threshold moves, greedy and typical, and
    the checked verifiers, on the preset language (root rows from the table) and the tree shape."""
    chosen = [k for k in (keys or []) if k in registry and k != FUZZY]
    chosen += [k for k in TRADEOFF_ALWAYS if k in registry and k not in chosen]
    chosen += [FUZZY] if FUZZY in registry else []
    try:
        language, levels = with_root(load_preset(preset), table), parse_branching(shape, SHAPE_FIELD)
        try:
            tradeoff_size(registry, language, levels, chosen, MAX_TRADEOFF_WORK)
        except PastLimit:
            raise ValueError(_tradeoff_too_large(language, levels)) from None
        points, notes = tradeoff(registry, language, levels, chosen)
    except ValueError as err:
        return viz_lab.message_figure("nothing drawn"), f"**Input:** {err}"
    title = f"{language.name}, tree {shape}: tokens per step against TV(output, target), exact"
    return viz_lab.tradeoff_figure(points, title), drawn_note(points, notes)


def _tradeoff_too_large(language: lang.TinyLanguage, shape: tuple[int, ...]) -> str:
    what = "the chosen verifiers (fuzzy once per threshold)"
    command = cli_command(None, language, shape)
    return (f"{too_large(shape, 'for the trade-off', what, MAX_TRADEOFF_WORK)} Uncheck some verifiers or try a "
            f"smaller shape such as {_smaller(shape)}; `{command}` prints one verifier's exact TV and tokens per "
            "step, no limit.")


def _smaller(shape: tuple[int, ...]) -> str:
    return "2,1" if shape == (2, 2) else "2,2"


def drawn_note(points: list, notes: list[str]) -> str:
    """What the trade-off chart shows, in a sentence, then each verifier left out and why."""
    fuzzy = len(viz_lab.fuzzy_markers(points))
    names = ([f"fuzzy ({fuzzy} distinct point{'s' if fuzzy != 1 else ''} as T moves)"] if fuzzy else [])
    names += [p.verifier for p in points if p.threshold is None]
    lines = [f"Drawn: {', '.join(names)}." if names else "Nothing drawn."]
    return "\n".join([*lines, *(f"- left out: {n}" for n in notes)])


def check_size(entry: Verifier, language: lang.TinyLanguage, shape: tuple[int, ...]) -> None:
    """ValueError (one line: the limit and what to do) when a Certify of `shape` would pass MAX_CERTIFY_WORK."""
    try:
        enumeration_size(entry, language, shape, MAX_CERTIFY_WORK)
    except PastLimit:
        raise ValueError(f"{too_large(shape, 'to certify', entry.name, MAX_CERTIFY_WORK)} Try a smaller shape such "
                         f"as {_smaller(shape)}, or run `{cli_command(entry, language, shape)}` on your own machine "
                         "(no limit).") from None


def too_large(shape: tuple[int, ...], action: str, what: str, limit: int) -> str:
    return (f"{SHAPE_FIELD} {','.join(map(str, shape))} is too large {action} here: {what} would enumerate more "
            f"than {limit:,} tree nodes (drafted trees x nodes per tree), the limit that keeps it to a few seconds.")


def cli_command(entry: Verifier | None, language: lang.TinyLanguage, shape: tuple[int, ...]) -> str:
    """The certify command line for the same check (the preset's file; a custom verifier by its file; no
    entry: a placeholder KEY)."""
    if entry is None:
        who = "--verifier KEY"
    else:
        who = "--verifier-file YOUR_FILE.py" if is_custom(entry) else f"--verifier {entry.name}"
    path = lang.presets().get(language.name)
    where = f" --language {path.relative_to(path.parents[2])}" if path else ""
    return f"./specscope certify {who}{where} --tree {','.join(map(str, shape))}"


def with_root(language: lang.TinyLanguage, table: Any) -> lang.TinyLanguage:
    """The language with the table's p and q as its root rows (the vocabulary must match)."""
    vocab, p, q, _ = rows_of(table)
    if len(vocab) != language.V:
        raise ValueError(f"the table has {len(vocab)} tokens but the language {language.name!r} has {language.V}")
    return lang.TinyLanguage(language.name, language.vocab, {**language.target, (): p}, {**language.draft, (): q},
                             language.notes)


def _int(value: Any, name: str, low: int, high: int) -> int:
    """A whole number in low..high from what the page sends (a float, None for an empty box, text via the API)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        raise ValueError(f"{name} is empty: type a whole number from {low} to {high}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a whole number from {low} to {high}, got {value!r}") from None
    if isinstance(value, bool) or not math.isfinite(number) or number != int(number) or not low <= number <= high:
        raise ValueError(f"{name} must be a whole number from {low} to {high}, got {_shown(value)}")
    return int(number)


def _shown(value: Any) -> str:
    """A finite number as the controls' messages write it (ui.session.shown_number: 2.0 -> "2", as gr.Number
    sends floats), other values as typed."""
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return shown_number(value)
    return repr(value) if isinstance(value, str) else str(value)


def build(registry: Mapping[str, Verifier]) -> dict[str, Any]:
    """The tab's components (call inside a gr.Tab) and their wiring."""
    gr.Markdown("Pick a tiny language or edit p and q (the root node); every verifier's **exact** output law "
                "is drawn against p, with diamonds from its real `verify`. A lossy or wrong verifier is drawn "
                "in orange.")
    keys = [k for k in DEFAULT_KEYS if k in registry] + [k for k, e in registry.items() if is_custom(e)]
    with gr.Row():
        preset = gr.Dropdown(preset_names(), value=DEFAULT_PRESET, label="tiny language", elem_id="lab-preset")
        # no minimum/maximum: the handler refuses a bad k with the lab's own line (gradio's would be a toast)
        k = gr.Number(value=2, precision=0, label="k (candidates)", elem_id="lab-k")
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
                "Exact numbers on the language and tree shape above (root rows from the table): fuzzy as its "
                "threshold T grows (one marker per distinct result, joined in order of T: there is nothing "
                "between the markers; hover for the range of T), greedy and typical, and the checked verifiers; "
                "lossless ones sit on the TV = 0 line. Takes a few seconds.")
    tradeoff_btn = gr.Button("Draw the trade-off", elem_id="lab-tradeoff-btn")
    tradeoff_md = gr.Markdown(elem_id="lab-tradeoff-md")
    tradeoff_plot = gr.Plot(label="tokens per step vs TV", elem_id="lab-tradeoff-plot")
    _wire(registry, preset, table, k, verifiers, samples, (node_plot, acc_plot, summary, notes),
          (seq_key, shape, go_btn, seq_plot, seq_md))

    def tradeoff_click(name, table_value, keys, shape_text):
        return tradeoff_chart(registry, name, table_value, keys, shape_text)

    tradeoff_btn.click(tradeoff_click, [preset, table, verifiers, shape], [tradeoff_plot, tradeoff_md])
    gr.Markdown("### Lossy price at the root node: exact acceptance against the exact TV and KL of what each rule "
                "emits\nOne draft at the table's node: cactus as δ grows, fuzzy below and at this node's JS, greedy "
                "and typical, sd (lossless) at TV = 0. A rule's advertised budget stands beside the KL it emits.")
    price_btn = gr.Button("Draw the price frontier", elem_id="lab-price-btn")
    price_md = gr.Markdown(elem_id="lab-price-md")
    price_plot = gr.Plot(label="acceptance vs TV", elem_id="lab-price-plot")
    price_table = gr.Dataframe(headers=viz_frontier.BUDGET_HEADERS, interactive=False, label="budget vs emitted",
                               elem_id="lab-price-table", visible=False)  # shown once drawn: no empty table

    def price_click(table_value):
        figure, rows, note = price_chart(registry, table_value)
        return figure, gr.update(value=rows, visible=bool(rows)), note

    price_btn.click(price_click, [table], [price_plot, price_table, price_md])
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
    # user edits only (a preset pick runs above); the one of these five redraws published as /lab_node
    table.input(redraw, inputs, outputs, trigger_mode="always_last", **public("lab_node"))
    k.change(redraw, inputs, outputs, trigger_mode="always_last")
    samples.change(redraw, inputs, outputs, trigger_mode="always_last")
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
