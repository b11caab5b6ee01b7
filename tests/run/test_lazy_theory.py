"""Lazy theory and the fast path: a lazy-theory run decodes exactly like an eager one, its records carry no
theory until a view asks (fill_theory), and then equal the eager records; the fast path (record=False) emits
the same tokens with bare records (no per-node records, no theory)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from decoding.models import pairs as models
from decoding.run import engine
from decoding.run.config import DecodeConfig

CONFIG = DecodeConfig(verifier="rrs_wor", branching=(3, 2), temperature=1.0, max_new_tokens=16, chat=False)
TIMES = {"draft_ms": 0.0, "target_ms": 0.0, "verify_ms": 0.0, "record_ms": 0.0}


@pytest.fixture(scope="module")
def pair():
    return models.load_pair("toy")


def untimed(steps):
    return [replace(s, **TIMES) for s in steps]


def test_lazy_records_fill_to_the_eager_records(pair):
    eager = engine.generate(pair, CONFIG, "the cat")
    run = engine.start(pair, CONFIG, "the cat", lazy_theory=True)
    lazy = list(run)
    assert run.state.generated_ids == eager.generated_ids
    assert all(v.alpha_exact is None and v.alpha_optimal is None for s in lazy for v in s.visits)
    assert untimed(lazy) != untimed(eager.steps)  # the theory is really missing before the fill
    filled = [run.fill_theory(i) for i in range(len(lazy))]
    assert untimed(filled) == untimed(eager.steps)
    assert untimed(run.state.steps) == untimed(eager.steps)
    assert any(v.alpha_exact is not None for s in filled for v in s.visits)


def test_the_fast_path_emits_the_same_tokens_with_bare_records(pair):
    eager = engine.generate(pair, CONFIG, "the cat")
    run = engine.start(pair, replace(CONFIG, record=False), "the cat")
    bare = list(run)
    assert run.state.generated_ids == eager.generated_ids and run.state.steps == ()
    assert [s.emitted for s in bare] == [s.emitted for s in eager.steps]
    assert all(s.nodes == () and s.visits == () and s.expected_tokens is None for s in bare)
    assert all(s.record_ms >= 0.0 for s in bare) and all(s.record_ms > 0.0 for s in eager.steps)
