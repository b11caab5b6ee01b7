"""The "Speed" tab: on this machine, why the run's draft shape is fast or slow, and which shape would be fastest.

A self-contained tab (built inside its own gr.Tab, no entry in Views). Its button calibrates the pair on this
machine the first time (decoding/speed/calibrate.py: cached per machine, a few seconds to a minute), takes
this run's own p and q rows (the live run keeps its last steps' rows) for the exact acceptance by depth and
by width, and shows the chooser's arithmetic (decoding/speed/chooser.py): the verify cost curve, each
candidate shape's expected tokens per step, its predicted speed-up, and the speed-up this run measured; under
the verdict, the acceptance per depth it predicted with and, for the embedded-head pair, the head's card (its
held-out acceptance against the head it replaced, assets/draft_head/head.json).
A user can pick the shape from it; a teacher can show why a CPU and a GPU disagree (viz/speed.py).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

import gradio as gr

from decoding.models.head import weights as head_files
from decoding.models.pairs import PLAN_KEY
from decoding.run.config import Branching, DecodeConfig
from decoding.run.seen import Seen, fixed_depth, misses
from decoding.speed import acceptance, calibrate, chooser, machine, pair_acceptance
from decoding.speed.calibrate import Calibration
from ui import decode
from ui.run_cache import RunCache
from ui.session import Session
from viz import speed as speed_view
from viz import stats

log = logging.getLogger("specscope.speed")
PROGRESS = gr.Progress()
TOP = 10  # shapes shown


@dataclass
class SpeedPanel:
    show: gr.Button
    force: gr.Button
    summary: gr.Markdown
    plot: gr.Plot


def build() -> SpeedPanel:
    """The tab's content (call inside `with gr.Tab("Speed"):`)."""
    gr.Markdown(speed_view.EXPLAIN)
    with gr.Row():
        show = gr.Button("Explain this run's speed on this machine", variant="primary", size="sm",
                         elem_id="speed-show")
        force = gr.Button("Calibrate this machine again", size="sm", elem_id="speed-force")
    summary = gr.Markdown("Press **Step** or **Run**, then the button above: the first time, the pair is "
                          "calibrated on this machine (timed once, then cached).", elem_id="speed-summary")
    plot = gr.Plot(show_label=False, elem_id="speed-plot")
    return SpeedPanel(show, force, summary, plot)


def wire(panel: SpeedPanel, state: gr.State, runs: RunCache | None, queue: dict) -> None:
    outputs = [panel.summary, panel.plot]
    panel.show.click(partial(explain, runs=runs, force=False), [state], outputs, **queue)
    panel.force.click(partial(explain, runs=runs, force=True), [state], outputs, **queue)


def explain(session: Session | None, runs: RunCache | None = None, force: bool = False,
            progress: gr.Progress = PROGRESS) -> tuple[str, object]:
    """(markdown, figure) for the session's run; a one-line warning instead when it cannot be shown."""
    try:
        facts = facts_of(session or Session(), runs, force, progress)
    except ValueError as err:
        return f"⚠️ {err}", None
    except Exception as err:  # noqa: BLE001 - one user's failure must not take the app down
        log.exception("speed view failed")
        return f"⚠️ internal error ({type(err).__name__}): {str(err)[:200]}", None
    return speed_view.summary_markdown(facts, TOP), speed_view.figure(facts, TOP)


def facts_of(session: Session, runs: RunCache | None, force: bool,
             progress: gr.Progress | None) -> speed_view.SpeedFacts:
    if session.run is None or session.controls is None or not session.steps:
        raise ValueError("press Step or Run first: the view predicts from this run's own p and q")
    config = DecodeConfig.from_dict(session.run.config)
    pair = decode.load(session.controls, progress)
    if progress is not None:
        progress(0.3, desc="calibrating this machine (once; then cached) ...")
    cal = calibrate.calibrated(pair, session.controls.pair, force=force)
    depth = fixed_depth(config)
    rows, seen, missed = live_evidence(session, runs, depth)  # steps not shown yet: p/q rows; shown: their numbers
    # an imported trace has no live run: its shown records' exact sd-family acceptance is what is left
    known = seen.ones + missed if seen is not None else acceptance.known_from_records(session.steps, depth)
    greedy = config.temperature == 0  # trees of the draft's top-k (chooser.verifier_for)
    # the calibration's widths; rrs_wor's A(3) and A(4) on the sampled nodes take seconds (docs/speed.md,
    # "Measurements the code's comments cite")
    widths = pair_acceptance.WIDTHS
    fallback = cal.table(config.temperature)
    ratios = {k: v[0] / fallback.rates[1][0] for k, v in fallback.rates.items() if fallback.rates[1][0] > 0}
    if seen is not None and seen.ratio() is not None:
        ratios[2] = seen.ratio()  # the run's own A(2) / A(1), sampled on the shown steps
    from_run = bool(rows or known)
    # a run's own table carries the calibration's chain steps: a floor's effect as they measured it
    table = (replace(acceptance.table_from_rows(rows, widths, known, ratios, greedy), chain=fallback.chain)
             if from_run else fallback)
    choice = chooser.choose(cal.costs, table, greedy=greedy)
    return _facts(cal, table, choice, session, config, from_run)


def live_evidence(session: Session, runs: RunCache | None, depth: int = 0
                  ) -> tuple[list[acceptance.Row], Seen | None, list[tuple[int, float]]]:
    """The live run's kept (depth, p, q) rows (its steps not shown yet), the numbers it logged of the steps shown
    (run/seen.py), and the levels its unshown steps reached without a guess (seen.no_guess: acceptance 0; a tree
    of `depth` levels); ([], None, []) without a live run (an imported trace)."""
    if runs is None or session.run is None:
        return [], None, []
    live = runs.take(session.key, session.run)
    if live is None:
        return [], None, []
    try:
        unshown = [(r, kept) for r in live.state.steps if (kept := live.kept_rows(r.index)) is not None]
        rows = [row for r, kept in unshown for row in acceptance.rows_of_record(r, kept)]
        return rows, live.seen, misses([r for r, _ in unshown], depth)
    finally:
        decode.keep(runs, session, live, None)


def _facts(cal: Calibration, table: chooser.AcceptanceTable, choice: chooser.Choice, session: Session,
           config: DecodeConfig, from_run: bool) -> speed_view.SpeedFacts:
    alone = choice.alone.tokens_per_s
    ranked = list(choice.ranked[: TOP - 1]) + [choice.alone]
    shapes = tuple(speed_view.ShapeRow(p.label(), p.tokens_per_step, p.step_ms, p.tokens_per_s / alone)
                   for p in sorted(ranked, key=lambda p: -p.tokens_per_s))
    run_label = run_predicted = mine = None
    if isinstance(config.shape, Branching) and config.drafting:
        mine = chooser.predict(config.shape.levels, cal.costs, table, greedy=config.temperature == 0,
                               floor=config.min_confidence)
        run_label, run_predicted = f"{config.verifier} {config.shape_text()}", mine.tokens_per_s / alone
        shapes = shapes + (speed_view.ShapeRow(f"{run_label} (this run)", mine.tokens_per_step, mine.step_ms,
                                               run_predicted),)
    measured, how = measured_speedup(session, cal)
    against = run_against(session)
    below = (speed_view.below_prediction(session.steps, run_predicted, mine.step_ms, measured, against)
             if run_predicted is not None else ())
    key = cal.key
    plan = cal.products_words()
    return speed_view.SpeedFacts(
        machine=f"{key['model']} ({key['device']}, {key['threads']} threads, torch {key['torch']})",
        stock=cal.stock_costs.target, planned=cal.costs.target, plan=plan, draft=cal.costs.draft,
        overhead_ms=cal.costs.overhead, shapes=shapes, chosen=choice.why(), run_label=run_label,
        run_predicted=run_predicted, run_measured=measured, measured_how=how,
        nodes=table.nodes if from_run else 0, overhead_per_row_ms=cal.costs.overhead_per_row,
        run_against=against, run_below=below, depth_rates=table.rates[1],
        card=head_card(session.controls.pair, config.temperature), warning=cal.shared_note())


def head_card(pair: str, temperature: float, folder: Path = head_files.HEAD_DIR) -> speed_view.HeadCard | None:
    """The trained draft head's card (decoding/models/head/weights.card) for the embedded-head pair; None for
    another pair or a head without a card."""
    if pair not in machine.HEAD_KINDS:
        return None
    found = head_files.card(folder)
    return card_at(found, temperature) if found is not None else None


def card_at(card: dict, temperature: float) -> speed_view.HeadCard | None:
    """The card at the temperature nearest `temperature`, as plain numbers: the head it replaced ("shipped" in
    head.json), then this head ("new"); None where a field is missing or unreadable (never an error)."""
    try:
        before, after = card["acceptance"]["shipped"], card["acceptance"]["new"]
        near = min(set(before) & set(after), key=lambda t: abs(float(t) - temperature))
        rows = (_card_row("the head before", before[near]), _card_row("this head", after[near]))
        return speed_view.HeadCard(float(near), int(card["count"]), int(card["new_tokens"]), rows)
    except (KeyError, TypeError, ValueError):  # a field missing, no temperature in both, a number unreadable
        return None


def _card_row(name: str, at: dict) -> speed_view.CardRow:
    expected = at["expected"]  # E[tokens/step] by shape, "1,1,1" a chain of 3
    return speed_view.CardRow(name, tuple(float(a) for a in at["by_depth"]), float(expected["1,1,1"]),
                              float(expected["4,2,2,1"]))


def run_against(session: Session) -> stats.Against | None:
    """The run over the target alone the user ran: the same numbers as the Run statistics tab (viz/stats.py)."""
    seconds = session.trace.summary.seconds if session.trace and session.trace.summary else None
    return stats.against_baseline(session.steps, session.baseline, seconds)


def measured_speedup(session: Session, cal: Calibration) -> tuple[float | None, str]:
    """This run's tokens per second over the calibrated target alone's: its decoding time (draft + target +
    verify of every step after the first, which pays a run's one-time costs; building the app's records
    excluded, as a fast run pays none) against the calibrated one-row forward, with the products the run began
    with (a run started before this view put the machine's plan on decoded with the stock ones). The same
    footing as the prediction; the speed-up over a target alone the user ran is `run_against`. None until a
    step after the first."""
    steps = session.trace.steps[1:] if session.trace else ()
    ms = sum(s.decode_ms for s in steps)
    if not steps or ms <= 0:
        return None, "measured from the steps after the first: Step again"
    speed = sum(s.n_emitted for s in steps) / (ms / 1000.0)
    began_planned = not cal.plan or PLAN_KEY in (session.run.pair if session.run else {})
    alone_ms = cal.costs.alone_ms() if began_planned else cal.stock_costs.alone_ms()
    return speed / (1000.0 / alone_ms), (
        f"its {len(steps)} step{'s' * (len(steps) > 1)} after the first, {stats.DECODING_ONLY}, against the "
        + (f"calibrated target alone ({alone_ms:.1f} ms a token, not run)" if began_planned else
           "target alone with the stock products this run began with; this machine's plan went on when this view "
           "calibrated: Reset and run again to measure with it"))
