"""The bridge from a session to `decoding.run`: load the pair, start or resume a run, commit its state.

Models are process-wide, read-only and cached by `decoding.models.pairs.load_pair`; everything per user stays in
the Session the handler returns.

The app's runs are lazy-theory runs (`engine.start(..., lazy_theory=True)`): a step's exact and optimal
acceptance (alpha, alpha*: the heavy part of a record for without-replacement laws at k >= 3) is computed
only for a step a view shows: the step after Step, the last step of a Run (or where Stop left it, from the
rows the Run offered: `offer_shown`), a step the slider moves to, every kept step for the run statistics
and export. A Run does not pay it for the steps it passes. The live run keeps the p/q rows of its last
engine.LAZY_THEORY_STEPS steps; a step whose rows are gone (older, or the run was rebuilt from its plain
state) keeps alpha None, which the views show as "not computed".
"""

from __future__ import annotations

import contextvars
import logging
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as NotYet
from dataclasses import replace
from typing import Any

import gradio as gr

from decoding.compare.selection import check_selection
from decoding.compare.session import CompareRun
from decoding.models.hub import space
from decoding.run import engine, replay
from decoding.run import recorder as recording
from decoding.run.config import DecodeConfig
from decoding.run.schema import StepRecord
from decoding.speed import plan
from ui import zero_gpu
from ui.run_cache import Offer, RunCache
from ui.session import PAIRS, Configured, Controls, Session

log = logging.getLogger("specscope.app")
# A pair already in the process's load cache is back well within this (lookups, the cached plan's small JSON): only a
# load still running after it is announced on the status line (`load`).
ANNOUNCE_AFTER_S = 0.3


def load(controls: Controls, progress: gr.Progress | None = None):
    """The (cached, read-only) model pair the controls name, with this machine's product plan on when a
    calibration of it is cached (docs/speed.md); ModelLoadError with a readable message.

    "loading the ... model pair" goes on the progress line only while a load is really under way (still running
    after ANNOUNCE_AFTER_S: a first load, or a wait on the app's preload), and a load that said anything ends by
    saying the pair is loaded: Gradio shows the last progress message until the event ends, so a Step whose pair
    was already loaded showed "loading ... 0.0%" all through its compared step. A pair already loaded says nothing."""
    kinds = [value for _, value in PAIRS]
    if controls.pair not in kinds:
        raise ValueError(f"unknown model pair {controls.pair!r}; choose one of: {', '.join(kinds)}")
    if controls.pair == "custom" and not (controls.target.strip() and controls.draft.strip()):
        raise ValueError("a custom pair needs both a target and a draft model: hub ids or local folders")
    said: list[str] = []  # what the loader itself reported (a first start's conversion says what it does)
    report = _reporter(progress, said)
    context = contextvars.copy_context()  # the event's: gr.Progress reports through it, from the loading thread too
    with ThreadPoolExecutor(1, thread_name_prefix="specscope-load") as pool:
        loading = pool.submit(context.run, plan.load_planned, controls.pair, target=controls.target.strip() or None,
                              draft=controls.draft.strip() or None, device=device(), progress=report)
        try:
            pair = loading.result(timeout=ANNOUNCE_AFTER_S)
        except NotYet:
            if not said:
                report(0.0, f"loading the {controls.pair} model pair ...")
            pair = loading.result()
    if said:  # the line must not go on saying "loading" (or a loader's step) through the step that follows
        report(1.0, f"the {controls.pair} model pair is loaded")
    return pair


def device() -> str:
    return os.environ.get("SPECSCOPE_DEVICE", "auto")


def _reporter(progress: gr.Progress | None, said: list[str] | None = None) -> Callable[..., None]:
    """Adapt the loader's progress calls (a fraction and/or a message) to gr.Progress and the log; each message is
    also appended to `said`."""
    def report(*args: Any, **kwargs: Any) -> None:
        desc = next((a for a in (*args, *kwargs.values()) if isinstance(a, str)), None)
        frac = next((a for a in args if isinstance(a, (int, float)) and not isinstance(a, bool)), None)
        if desc:
            log.info("%s", desc)
            if said is not None:
                said.append(desc)
        if progress is not None:
            progress(None if frac is None else min(max(float(frac), 0.0), 1.0), desc=desc)
    return report


def open_run(session: Session, configured: Configured, progress: gr.Progress | None,
             compare: Sequence[str] = (), mc_draws: int = 0,
             runs: RunCache | None = None) -> tuple[engine.Run, bool]:
    """Resume the session's run when the controls are unchanged, else start a new one (fresh=True).

    With `compare` keys the run is a CompareRun: those verifiers judge every step too (the run
    verifier still emits); turning compare on or off continues the same run. Without, the live run
    comes out of `runs` when it is there and is exactly the session's run (its KV caches warm);
    otherwise it is rebuilt by re-running its steps (`rebuilt`: the same tokens as the uninterrupted run).
    `configured` comes from the boundary (ui.session.configure): validated within this server's caps before
    anything is loaded.
    """
    controls, config = configured.controls, configured.config
    if compare:
        check_selection(list(compare), config)  # refuse, never drop, a verifier the shape does not allow
    pair = load(controls, progress)
    resume = session.run is not None and session.controls == controls
    live = runs.take(session.key, session.run, pair) if runs is not None and session.run is not None else None
    if not compare:
        if resume:
            return (live if type(live) is engine.Run else rebuilt(pair, session.run)), False
        return engine.start(pair, config, controls.prompt, lazy_theory=True), True
    state = session.run if resume else engine.start(pair, config, controls.prompt).state
    return CompareRun(pair, DecodeConfig.from_dict(state.config), state, list(compare), mc_draws), not resume


def rebuilt(pair, state: engine.RunState) -> engine.Run:
    """The session's run when its live run is not in the cache (evicted, a restarted server): its steps re-run
    from the seed (run/replay.py), so it continues with the uninterrupted run's tokens; a run that does not
    replay (its steps were compare steps) is resumed from its plain state, and the log says why."""
    run, why = replay.rebuild(pair, state, lazy_theory=True)
    if why is not None:
        log.info("run resumed from its plain state, not replayed: %s", why)
    return run


@space.gpu(duration=zero_gpu.step_seconds)
def advance(run: engine.Run) -> StepRecord | None:
    """One step of model work (on ZeroGPU this call holds the GPU for as long as this run's Step needs,
    ui/zero_gpu.py; elsewhere `space.gpu` is the identity). A Run calls it once per step."""
    return run.step()


@space.gpu(duration=zero_gpu.baseline_seconds)
def baseline(pair, prompt_ids: list[int], n_tokens: int, config) -> engine.Baseline:
    """The target alone decoding `n_tokens` (model work: wrapped like `advance`)."""
    return engine.baseline(pair, prompt_ids, n_tokens, config)


def keep(runs: RunCache | None, session: Session, run: engine.Run, request: gr.Request | None) -> None:
    """Put the live run back in the cache under the session's key (not a compare run). A finished run is
    kept too: it holds the p/q rows the slider needs to compute a replayed step's theory."""
    if runs is not None and type(run) is engine.Run:
        runs.put(session.key, run, page=getattr(request, "session_hash", None))


def fill_shown(run: engine.Run, index: int | None = None) -> None:
    """Compute the exact theory of step `index` (default: the latest) on the live run: the step the page
    is about to show. A step already filled, or whose rows are gone, stays as it is."""
    steps = run.state.steps
    if steps:
        run.fill_theory(len(steps) - 1 if index is None else index)


def offer_shown(runs: RunCache | None, session: Session, live: engine.Run) -> None:
    """A Run drew the session's last step without its theory: leave that step's rows in `runs`, for Stop."""
    index = len(session.steps) - 1
    rows = live.kept_rows(index) if runs is not None and index >= 0 else None
    if rows is not None:
        runs.offer(session.key, Offer(index, rows, live.entry))


def with_offered_theory(session: Session, runs: RunCache | None) -> Session:
    """The session with its last step's theory computed from the rows a Run offered for it (no live run
    needed: a cancelled Run never hands its live run back); the session as it is when there is no offer."""
    index = len(session.steps) - 1
    offer = runs.claim(session.key, index) if runs is not None and session.run is not None and index >= 0 else None
    if offer is None:
        return session
    record = recording.with_visit_theory(session.steps[index], offer.rows, offer.entry)
    steps = session.steps[:index] + (record,)
    return replace(session, run=replace(session.run, steps=steps), trace=replace(session.trace, steps=steps))


def lacks_theory(step: StepRecord) -> bool:
    """Whether a record's visits still wait for their exact theory (a lazy run's step not yet shown)."""
    return any(v.alpha_exact is None for v in step.visits)


def with_theory(session: Session, indices: Sequence[int], runs: RunCache | None,
                request: gr.Request | None = None) -> Session:
    """The session with the theory of its steps at `indices` (0-based) computed from its live run's kept
    rows, when that run is in `runs`; otherwise (no cache, a rebuilt or busy run, an imported trace) the
    session as it is: those steps show "not computed" rather than a number from somewhere else."""
    pending = [i for i in indices if 0 <= i < len(session.steps) and lacks_theory(session.steps[i])]
    if runs is None or session.run is None or not pending:
        return session
    live = runs.take(session.key, session.run)
    if live is None:
        return session
    try:
        for i in pending:
            live.fill_theory(i)
    finally:
        keep(runs, session, live, request)
    steps = live.state.steps
    return replace(session, run=replace(session.run, steps=steps), trace=replace(session.trace, steps=steps))


def commit(session: Session, controls: Controls, run: engine.Run, fresh: bool) -> Session:
    baseline = None if fresh else session.baseline
    return replace(session, run=run.state, trace=run.trace(), controls=controls, baseline=baseline)


def finished_note(session: Session, controls: Controls) -> str | None:
    run = session.run
    if run is not None and run.stop_reason and session.controls == controls:
        return (f"This run has finished ({run.stop_reason}). Press **Reset** or change a control to "
                "start a new one; the slider replays its steps.")
    return None


def preload(kind: str, runs: RunCache | None = None) -> None:
    """Load the preselected pair once at start and calibrate it the first time on this machine
    (decoding/speed/plan.py); `runs`: the app's run cache, whose activity says whether anyone stepped meanwhile."""
    plan.preload(kind, device(), (lambda: runs.activity) if runs is not None else None)
