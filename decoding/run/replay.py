"""A run rebuilt EXACTLY: its steps re-run from the seed, so it continues with the tokens the uninterrupted run
would have emitted.

Why not `engine.resume` (one prefill of the context per model): the live run built its KV caches a tree
level at a time, a rebuilt one in one forward of the whole context. Float products of different shapes
round differently (last bits), and the int8 self-draft turns such a last-bit difference into a different
int8 activation now and then (one quantum of a row's scale), which moved q by up to 0.2 at a root in a
measured run: the same seed then continued differently. Re-running the same forwards in the same order
gives the same bits (the same process, or a restart on the same machine and versions), the same generator
state and the same adaptive chain statistics; the result is CHECKED against the plain state (tokens,
generator bytes, stop reason), and `ReplayMismatch` says when it does not hold (a trace made on another
machine, or a run whose steps were compare steps: drafted as a forest), so the caller can fall back to
`engine.resume`.

Cost: one draft-and-score per past step, without records (the state's records are kept as they were).
"""

from __future__ import annotations

from dataclasses import replace

from decoding.run import engine
from decoding.run.config import DecodeConfig
from decoding.run.schema import Trace
from decoding.verify.sampling import make_generator


class ReplayMismatch(ValueError):
    """Re-running the steps did not reproduce the plain state; the message is one line."""


def replay(pair, state: engine.RunState, *, lazy_theory: bool = False) -> engine.Run:
    """The live run at `state` (same KV caches, generator and chain statistics as the uninterrupted run),
    by re-running its steps from the seed; ReplayMismatch when they do not reproduce `state`."""
    config = DecodeConfig.from_dict(state.config)
    run = engine.Run(pair, config, first_state(pair, state, config), lazy_theory=lazy_theory, replaying=True)
    want = state.generated_ids
    while len(run.state.generated_ids) < len(want) and run.step() is not None:
        pass
    run.replaying = False
    check_same(run.state, state)
    run.restore(replace(run.state, steps=state.steps, seconds=state.seconds))  # the records the user saw
    return run


def first_state(pair, state: engine.RunState, config: DecodeConfig) -> engine.RunState:
    """`state` before its first step: the seed's generator, nothing generated."""
    return replace(state, pair=pair.describe(), generated_ids=(), steps=(), stop_reason=None, seconds=0.0,
                   rng_state=make_generator(config.seed).get_state().numpy().tobytes())


def check_same(got: engine.RunState, want: engine.RunState) -> None:
    """Refuse a replay that differs from the plain state: tokens, stop reason, generator (when it is known)."""
    if got.generated_ids != want.generated_ids:
        n = next((i for i, (a, b) in enumerate(zip(got.generated_ids, want.generated_ids, strict=False)) if a != b),
                 min(len(got.generated_ids), len(want.generated_ids)))
        raise ReplayMismatch(f"re-running the steps gave other tokens from token {n} on "
                             f"({len(got.generated_ids)} vs {len(want.generated_ids)} tokens)")
    if got.stop_reason != want.stop_reason:
        raise ReplayMismatch(f"re-running the steps stopped with {got.stop_reason!r}, "
                             f"the run with {want.stop_reason!r}")
    if want.rng_state and got.rng_state != want.rng_state:
        raise ReplayMismatch("re-running the steps left the generator in another state")


def state_of_trace(trace: Trace) -> engine.RunState:
    """The plain state an imported trace describes, generator unknown (b""): `replay` recomputes it."""
    summary = trace.summary
    stop = None if summary is None or summary.stop_reason == "stopped" else summary.stop_reason
    return engine.RunState(
        pair=dict(trace.models), config=dict(trace.config), prompt=trace.prompt, prompt_ids=tuple(trace.prompt_ids),
        generated_ids=tuple(trace.generated_ids), steps=tuple(trace.steps), rng_state=b"", stop_reason=stop,
        seconds=summary.seconds if summary is not None else 0.0,
    )


def rebuild(pair, state: engine.RunState, *, lazy_theory: bool = False) -> tuple[engine.Run, str | None]:
    """The run at `state`: replayed exactly when it can be, else resumed from its plain state (one prefill per
    model, the same seed's generator state). The second value says why it is not exact (None when it is)."""
    try:
        return replay(pair, state, lazy_theory=lazy_theory), None
    except ReplayMismatch as err:
        if not state.rng_state:  # an imported trace: no generator state to resume from
            raise
        return engine.resume(pair, state, lazy_theory=lazy_theory), str(err)
