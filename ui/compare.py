"""The compare view: several verifiers judge the same step (small multiples, per-node table, exact vs
Monte-Carlo accepted-length law), and whole runs side by side.

Why a panel of its own: with compare on, Step and Run drive a `decoding.compare` CompareRun, so every
selected verifier judges the step the run verifier emits from, in one target forward; the views are
drawn from the step's `compare` record only, so scrubbing and imported traces replay with no model.
A verifier the tree shape does not allow is refused with a message, never dropped.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

import gradio as gr

from decoding.compare import runs
from decoding.compare.selection import allowed_keys, check_selection
from decoding.run.config import DecodeConfig
from decoding.verify.registry import VERIFIERS, check_keys
from ui import decode
from ui.caps import Caps
from ui.endpoints import public
from ui.session import Controls, Session
from ui.views import Out, Views, md
from viz import compare as vc
from viz.narrate import plural

PROGRESS = gr.Progress()  # Gradio gives each event its own tracker; this default holds no state
MC_DRAWS = 200  # Monte-Carlo walks per verifier and step in the app: enough for the chi-square, cheap on toy
# (within this server's --max-compare-mc: `default_draws`)
MAX_SEEDS = 16


@dataclass
class ComparePanel:
    enabled: gr.Checkbox
    verifiers: gr.Dropdown
    mc_draws: gr.Slider
    allowed: gr.Button
    note: gr.Markdown
    multiples: gr.Plot
    table: gr.Dataframe
    laws: gr.Plot
    seeds: gr.Number
    run_button: gr.Button
    runs_note: gr.Markdown
    runs_plot: gr.Plot
    runs_table: gr.Dataframe

    @classmethod
    def build(cls, default: Controls, caps: Caps | None = None) -> ComparePanel:
        caps = caps or Caps()
        with gr.Tab("Compare verifiers", id="compare", elem_id="compare-tab"):
            gr.Markdown("Tick **compare**, pick verifiers and press **Step**: every one judges the same step "
                        "(one target forward); the main menu's verifier still decides the text.")
            with gr.Row():
                enabled = gr.Checkbox(False, label="compare the selected verifiers on every Step",
                                      elem_id="compare-on")
                allowed = gr.Button("select every lossless verifier this shape allows", size="sm",
                                    elem_id="compare-allowed-btn")
            verifiers = gr.Dropdown(choices(), value=default_keys(default), multiselect=True,
                                    label="verifiers to compare", elem_id="compare-verifiers")
            mc = gr.Slider(0, caps.max_compare_mc, default_draws(caps), step=50,
                           label="Monte-Carlo walks per verifier (0 = off)", elem_id="compare-mc")
            note = gr.Markdown(NOT_COMPARED, elem_id="compare-note")
            multiples = gr.Plot(show_label=False, elem_id="compare-multiples")
            table = gr.Dataframe(headers=vc.TABLE_HEADERS, datatype="str", interactive=False, wrap=True,
                                 label="per node: exact acceptance, alpha* and the membership bound",
                                 elem_id="compare-table")
            laws = gr.Plot(show_label=False, elem_id="compare-laws")
            with gr.Accordion("run-level comparison: each verifier decodes the whole prompt, same seeds",
                              open=False):
                with gr.Row():
                    seeds = gr.Number(3, label="seeds", precision=0, minimum=1, maximum=MAX_SEEDS)
                    run_button = gr.Button("Compare whole runs", size="sm", elem_id="compare-runs-btn")
                runs_note = gr.Markdown()
                runs_plot = gr.Plot(show_label=False, elem_id="compare-runs-plot")
                runs_table = gr.Dataframe(headers=vc.RUNS_HEADERS, datatype="str", interactive=False,
                                          elem_id="compare-runs-table")
        return cls(enabled, verifiers, mc, allowed, note, multiples, table, laws, seeds, run_button, runs_note,
                   runs_plot, runs_table)

    def options(self) -> dict[str, Any]:
        """The widgets Step and Run read besides the controls (Views.options)."""
        return {"compare": self.enabled, "compare_keys": self.verifiers, "compare_mc": self.mc_draws}

    def named(self) -> dict[str, Any]:
        return {"compare_note": self.note, "compare_multiples": self.multiples, "compare_table": self.table,
                "compare_laws": self.laws}

    def draw(self, session: Session, position: int) -> Out:
        step = session.steps[position - 1]
        if step.compare is None:
            return {**self.clear(), self.note: f"Step {position} was not compared. {NOT_COMPARED}"}
        record = step.compare
        return {self.note: summary(position, step.target_forwards, record), self.multiples: vc.small_multiples(record),
                self.table: table(vc.node_table(record)), self.laws: vc.length_law_figure(record)}

    def clear(self) -> Out:
        return {self.note: NOT_COMPARED, self.multiples: None, self.laws: None, self.table: table([])}

    def unchanged(self, before: Session, session: Session) -> Out:
        """Skip the cleared figures and table when no step of either session was compared: every step
        the page could show draws them cleared (a Step's usual case; only the note names the step)."""
        if any(s.compare is not None for s in (*before.steps, *session.steps)):
            return {}
        return {self.multiples: gr.skip(), self.laws: gr.skip(), self.table: gr.skip()}


NOT_COMPARED = "Tick **compare**, choose the verifiers and press **Step** to compare them on one step."


def choices() -> list[tuple[str, str]]:
    return [(f"{key}" + ("" if e.lossless else " (lossy)"), key) for key, e in VERIFIERS.items()]


# Ticked by default on the toy pair only: on a real vocabulary (49,152 tokens) ot_optimal's exact LP refuses
# k >= 2 without a top-k / top-p warp (docs/verifiers.md §16); a user can still tick it. gls is ticked again: its
# verify draws Y given the drafts in O(K V) (~1.5 ms CPU a node at K = 8) and its exact K >= 2 law, built only for
# what the view shows, is one product per chunk of t (~0.1 s a node, was ~1 s; docs/verifiers.md §17.7).
SMALL_VOCABULARY_ONLY = ("ot_optimal",)


def default_keys(controls: Controls) -> list[str]:
    """Every lossless verifier the controls' tree shape allows (greedy and typical are lossy: off), less the
    ones that are only quick on a tiny vocabulary when the pair is a real model."""
    try:
        return quick_on(controls.pair, allowed_keys(controls.config()))
    except ValueError:
        return []


def quick_on(pair: str, keys: list[str]) -> list[str]:
    """`keys` less SMALL_VOCABULARY_ONLY unless the pair is the toy one."""
    return keys if pair == "toy" else [k for k in keys if k not in SMALL_VOCABULARY_ONLY]


def table(rows: list[list]) -> dict:
    return {"data": [[str(c) for c in r] for r in rows] or [[""] * len(vc.TABLE_HEADERS)],
            "headers": list(vc.TABLE_HEADERS)}


def summary(position: int, forwards: int, record) -> str:
    """What the figures show, and any verifier whose real judge disagrees with its exact law."""
    groups = len({v.tree_group for v in record.verdicts})
    line = (f"**Step {position}**: {len(record.verdicts)} verifiers on {groups} drafted tree(s), "
            f"{forwards} target forward over {record.forest_nodes} forest nodes; "
            f"**{md(record.run_verifier)}** emits the text.")
    bad = [v.key for v in record.verdicts if v.mc_pvalue is not None and v.mc_pvalue < 0.001]
    if bad:
        line += f"  \n⚠️ Monte Carlo disagrees with the exact law (χ² p < 0.001) for: {md(', '.join(bad))}"
    return line


# ---- the boundary: what Step and Run read from the compare widgets ---------------------------------------
def selected(views: Views, values: dict) -> tuple[list[str], int]:
    """(keys, Monte-Carlo walks) when compare is ticked, else ([], 0); ValueError for unknown keys."""
    options = views.read_options(values)
    if not options.get("compare"):
        return [], 0
    keys = read_keys(options.get("compare_keys"))
    if not keys:
        raise ValueError("compare is on but no verifier is selected: pick at least one, or untick compare")
    return keys, read_draws(options.get("compare_mc"), views.caps)


def read_keys(raw: Any) -> list[str]:
    keys = [raw] if isinstance(raw, str) else list(raw or [])
    return list(dict.fromkeys(check_keys(keys)))


def read_draws(raw: Any, caps: Caps) -> int:
    """The compare view's Monte-Carlo walks per verifier (a missing value: `default_draws`), within `caps`."""
    try:
        draws = default_draws(caps) if raw in (None, "") else int(float(raw))
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"Monte-Carlo walks must be a whole number, got {raw!r}") from None
    if draws < 0:
        raise ValueError(f"Monte-Carlo walks must be 0 (off) or more, got {draws}")
    caps.check_compare_mc(draws)
    return draws


def default_draws(caps: Caps) -> int:
    """The walks a compared step makes unless asked otherwise (the slider's start, a link's Steps): MC_DRAWS, or
    fewer where this server's cap is lower."""
    return min(MC_DRAWS, caps.max_compare_mc)


# ---- handlers ------------------------------------------------------------------------------------------
def select_allowed(views: Views, values: dict) -> dict:
    """Select every lossless verifier the current tree shape allows, less the tiny-vocabulary-only ones on a real
    pair (`quick_on`); a bad shape keeps the selection."""
    try:
        configured = views.configure(values)
        return gr.update(value=quick_on(configured.controls.pair, allowed_keys(configured.config)))
    except ValueError as err:
        gr.Warning(str(err))
        return gr.update()


def compare_runs(views: Views, panel: ComparePanel, values: dict, progress: gr.Progress | None = PROGRESS) -> Out:
    """Each selected verifier decodes the whole prompt with the same seeds: block efficiency with a CI."""
    try:
        return _compare_runs(views, panel, values, progress)
    except ValueError as err:
        gr.Warning(str(err))
        return {panel.runs_note: f"⚠️ {md(str(err))}", panel.runs_plot: None,
                panel.runs_table: {"data": [[""] * len(vc.RUNS_HEADERS)], "headers": vc.RUNS_HEADERS}}


def _compare_runs(views: Views, panel: ComparePanel, values: dict, progress: gr.Progress | None) -> Out:
    configured = views.configure(values)  # the one boundary: control rules and this server's caps
    controls, config = configured.controls, configured.config
    keys = list(dict.fromkeys([config.verifier, *read_keys(values.get(panel.verifiers))]))
    check_selection(keys, config)
    n = read_seeds(values.get(panel.seeds))
    pair = decode.load(controls, progress)
    seeds, done = list(range(controls.seed, controls.seed + n)), [0]

    def report(message: str) -> None:
        done[0] += 1
        if progress is not None:
            progress(done[0] / (len(keys) * n), desc=message)

    result = runs.runs_json(runs.compare_runs(pair, config, controls.prompt, keys, seeds, report))
    return {panel.runs_note: runs_note(len(keys), seeds, config), panel.runs_plot: vc.runs_figure(result),
            panel.runs_table: {"data": vc.runs_table(result), "headers": vc.RUNS_HEADERS}}


def runs_note(verifiers: int, seeds: list[int], config: DecodeConfig) -> str:
    """What was run; from one seed, that the 95% interval needs two or more (the table and chart show none)."""
    which = (f"1 seed ({seeds[0]}): a 95% interval needs 2+ seeds" if len(seeds) == 1
             else f"{len(seeds)} seeds ({seeds[0]}..{seeds[-1]})")
    return (f"{plural(verifiers, 'verifier')} × {which}; tree {md(config.shape_text())}, "
            f"T = {config.temperature:g}, {config.max_new_tokens} new tokens each.")


def read_seeds(raw: Any) -> int:
    try:
        n = 3 if raw in (None, "") else float(raw)
    except (TypeError, ValueError):
        raise ValueError(f"seeds must be a whole number, got {raw!r}") from None
    if n != int(n) or not 1 <= n <= MAX_SEEDS:
        raise ValueError(f"seeds must be a whole number between 1 and {MAX_SEEDS}, got {raw!r}")
    return int(n)


def wire(views: Views, panel: ComparePanel, decode_queue: dict) -> None:
    widgets = {*views.controls.values()}
    # compare_runs by name, as Step: pair, prompt, ..., compare_keys, seeds
    named = {**views.controls, "compare_keys": panel.verifiers, "seeds": panel.seeds}

    def on_compare_runs(progress: gr.Progress = PROGRESS, **values: Any) -> Out:
        return compare_runs(views, panel, views.values_of(named, values), progress)

    # preprocess=False, as Step: raw values reach the boundary (ui.session.configure), so a client's values
    # over the caps get the same refusal as on Step, not Gradio's own range error.
    panel.allowed.click(partial(select_allowed, views), widgets, [panel.verifiers], show_progress="hidden",
                        preprocess=False, **public("compare_allowed"))
    panel.run_button.click(on_compare_runs, None, [panel.runs_note, panel.runs_plot, panel.runs_table],
                           inputs_kwargs=named, preprocess=False,
                           **public("compare_runs"), **decode_queue)
