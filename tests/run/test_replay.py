"""Runs replay exactly (decoding/run/replay.py): a run rebuilt from its plain state (evicted from the app's run
cache, a restarted server) or from an imported trace continues with the tokens, generator state and adaptive
chain statistics of the uninterrupted run; a replay that does not reproduce the state is refused, never used.

Oracle: the same run stepped without interruption. The real pairs are few and short (slow): every shipped kind
but the toy one, which runs for every verifier family here without a model."""

from __future__ import annotations

import pytest

from decoding.models import pairs as models
from decoding.models.kinds import BUILT_IN
from decoding.run import engine, replay
from decoding.run.config import DecodeConfig
from decoding.run.schema import trace_from_json, trace_to_json

PROMPT_TOY = "the cat"
PROMPT = "Write a short poem about the sea."
TOY_CONFIGS = [
    DecodeConfig(verifier="rrs", branching=(3, 2), temperature=1.0, seed=5, max_new_tokens=60),
    DecodeConfig(verifier="rrs_wor", branching=(2, 2), temperature=0.8, seed=11, max_new_tokens=60),
    DecodeConfig(verifier="traversal", branching=(2, 2), temperature=1.0, seed=2, max_new_tokens=60),
    DecodeConfig(verifier="sd", branching=(1, 1, 1, 1), temperature=1.0, seed=7, max_new_tokens=60, adaptive=True),
]


def stepped(pair, config: DecodeConfig, prompt: str, n: int) -> engine.Run:
    run = engine.start(pair, config, prompt)
    for _ in range(n):
        run.step()
    return run


def continued(run: engine.Run, n: int) -> engine.Run:
    for _ in range(n):
        run.step()
    return run


def assert_replays(pair, config: DecodeConfig, prompt: str, before: int, after: int) -> None:
    """`before` steps, a rebuild from the plain state, `after` more steps == `before + after` uninterrupted steps."""
    whole = stepped(pair, config, prompt, before + after)
    cut = stepped(pair, config, prompt, before)
    again = continued(replay.replay(pair, cut.state), after)
    assert again.state.generated_ids == whole.state.generated_ids
    assert again.state.rng_state == whole.state.rng_state
    assert (again.chain_stats.tested, again.chain_stats.accepted) == (whole.chain_stats.tested,
                                                                      whole.chain_stats.accepted)


@pytest.mark.parametrize("config", TOY_CONFIGS, ids=lambda c: c.verifier + ("-adaptive" if c.adaptive else ""))
def test_a_rebuilt_toy_run_continues_as_the_uninterrupted_one(config) -> None:
    assert_replays(models.load_pair("toy"), config, PROMPT_TOY, before=3, after=3)


def test_a_replay_keeps_the_records_the_user_saw() -> None:
    pair = models.load_pair("toy")
    cut = stepped(pair, TOY_CONFIGS[0], PROMPT_TOY, 3)
    again = replay.replay(pair, cut.state)
    assert again.state == cut.state  # same records, tokens, generator, stop reason and time


def test_an_imported_trace_continues_as_the_uninterrupted_run() -> None:
    pair, config = models.load_pair("toy"), TOY_CONFIGS[1]
    whole = stepped(pair, config, PROMPT_TOY, 6)
    trace = trace_from_json(trace_to_json(stepped(pair, config, PROMPT_TOY, 3).trace()))  # export, then import
    state = replay.state_of_trace(trace)
    assert state.rng_state == b""  # a trace does not carry the generator: the replay recomputes it
    again = continued(replay.replay(pair, state), 3)
    assert again.state.generated_ids == whole.state.generated_ids


def test_a_state_the_steps_do_not_reproduce_is_refused_and_resumed_instead() -> None:
    pair, config = models.load_pair("toy"), TOY_CONFIGS[0]
    cut = stepped(pair, config, PROMPT_TOY, 3)
    other = stepped(pair, config.with_(seed=6), PROMPT_TOY, 3)
    tampered = engine.RunState(**{**cut.state.__dict__, "generated_ids": other.state.generated_ids,
                                  "rng_state": other.state.rng_state})
    with pytest.raises(replay.ReplayMismatch, match="other tokens from token"):
        replay.replay(pair, tampered)
    run, why = replay.rebuild(pair, tampered)
    assert "other tokens" in why and run.state.generated_ids == other.state.generated_ids  # resumed as it was
    without_generator = engine.RunState(**{**tampered.__dict__, "rng_state": b""})
    with pytest.raises(replay.ReplayMismatch):
        replay.rebuild(pair, without_generator)  # an imported trace that does not replay: nothing to resume


REAL_KINDS = [kind for kind in BUILT_IN if kind != "toy"]


@pytest.mark.slow
@pytest.mark.parametrize("kind", REAL_KINDS)
def test_a_rebuilt_run_of_every_shipped_pair_continues_as_the_uninterrupted_one(kind) -> None:
    """A sampled run on a branching tree (the draft's q and the target's p both drawn from): 2 steps, a
    rebuild, 2 more steps emit the tokens of 4 uninterrupted steps."""
    config = DecodeConfig(verifier="rrs_wor", branching=(2, 1), temperature=1.0, seed=3, max_new_tokens=40)
    assert_replays(models.load_pair(kind, progress=lambda *a: None), config, PROMPT, before=2, after=2)
