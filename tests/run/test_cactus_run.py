"""cactus through the engine (toy pair): the run uses the DecodeConfig's δ (not the registry's default), δ is in
the trace, and δ = 0 runs exactly as SD does (same text, same per-node exact acceptance)."""

from __future__ import annotations

import pytest

from decoding.models import pairs as models
from decoding.run import engine
from decoding.run.config import DecodeConfig

CHAIN = (1, 1, 1)


@pytest.fixture(scope="module")
def toy():
    return models.load_pair("toy")


def _trace(toy, verifier: str, delta: float):
    config = DecodeConfig(verifier=verifier, branching=CHAIN, temperature=1.0, seed=5, max_new_tokens=16,
                          cactus_delta=delta)
    return engine.generate(toy, config, "the cat")


def test_recorded_acceptance_uses_the_configs_delta(toy):
    trace = _trace(toy, "cactus", 0.3)
    assert trace.steps and trace.config["cactus_delta"] == 0.3
    sd = _trace(toy, "sd", 0.3)
    assert "cactus_delta" in sd.config  # a changed value is written whatever the verifier
    raised = [v.alpha_exact for s in trace.steps for v in s.visits]
    assert raised and all(a is not None and 0 <= a <= 1 for a in raised)
    assert sum(raised) / len(raised) > 0.9  # δ = 0.3 lifts nearly every drafted token past q on the toy
    # δ = 0 is SD: the same seed gives the same steps and the same per-node acceptance
    zero, plain = _trace(toy, "cactus", 0.0), _trace(toy, "sd", 0.0)
    assert zero.generated_ids == plain.generated_ids
    assert [v.alpha_exact for s in zero.steps for v in s.visits] == pytest.approx(
        [v.alpha_exact for s in plain.steps for v in s.visits], abs=1e-12)
