"""bench/head_eval.beats: a new head ships (--ship auto) only where its first-level gain clears the check's noise
at every temperature and its chain of 4 expects more tokens a step."""

from __future__ import annotations

from bench import head_eval

CHAIN = ",".join(["1"] * head_eval.DEPTH)


def result(first: float, nodes: int, chain: float) -> dict:
    return {"by_depth": [first, 0.6, 0.6, 0.6], "nodes": [nodes, 300, 200, 100], "expected": {CHAIN: chain}}


def both(first: float, nodes: int = 500, chain: float | None = None) -> dict:
    chain = 2 + first if chain is None else chain  # a better first level, a longer chain
    return {"0.0": result(first, nodes, chain), "0.8": result(first - 0.07, nodes, chain - 0.2)}


def test_a_gain_within_the_checks_noise_does_not_beat_the_shipped_head() -> None:
    old = both(0.683)
    assert not head_eval.beats(both(0.700), old)  # +0.017 over ~500 nodes: one standard error is ~0.029
    assert head_eval.beats(both(0.72), old)  # +0.037 clears it
    assert not head_eval.beats(both(0.700, nodes=5000), old)  # ~0.022 with 10x the new head's nodes: within
    assert head_eval.beats(both(0.700, nodes=50000), both(0.683, nodes=50000))  # ~0.003: clear


def test_every_temperature_and_the_chain_must_improve() -> None:
    old = both(0.683)
    new = both(0.75)
    new["0.8"]["by_depth"][0] = old["0.8"]["by_depth"][0]  # no gain at T = 0.8
    assert not head_eval.beats(new, old)
    assert not head_eval.beats(both(0.75, chain=2.5), old)  # a better first level, a worse chain
