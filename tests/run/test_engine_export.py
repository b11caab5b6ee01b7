"""A specscope run exported in the engines' shapes (decoding/run/engine_export.py, docs/verifiers.md §22) and
read back gives the run's own per-position counts, counted here from its records' node statuses; trees are
refused in one line; the run's own exact expectation comes from its records."""

from __future__ import annotations

import pytest

from decoding.models import pairs as models
from decoding.run import engine, engine_export, engine_shape, engine_traces
from decoding.run.config import DecodeConfig, Sequences
from decoding.run.schema import ACCEPTED, ROOT


@pytest.fixture(scope="module")
def toy():
    return models.load_pair("toy")


def run(toy, **settings):
    settings = {"verifier": "sd", "temperature": 1.0, "seed": 3, "max_new_tokens": 40, **settings}
    if "shape" not in settings:
        settings.setdefault("branching", (1, 1, 1))
    config = DecodeConfig(**settings)
    return engine.generate(toy, config, "the cat")


def own_counts(trace) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Per depth i: steps whose chain has a node at depth i under an accepted (or root) parent, and steps whose
    node at depth i was accepted, read from the node statuses the recorder wrote."""
    depth = max(n.depth for s in trace.steps for n in s.nodes)
    reached, accepted = [0] * depth, [0] * depth
    for step in trace.steps:
        for node in step.nodes:
            if node.depth == 0:
                continue
            if step.nodes[node.parent].status in (ROOT, ACCEPTED):
                reached[node.depth - 1] += 1
            if node.status == ACCEPTED:
                accepted[node.depth - 1] += 1
    return tuple(reached), tuple(accepted)


SETTINGS = [dict(), dict(branching=(1, 1, 1, 1, 1), seed=11), dict(shape=Sequences(1, 4), seed=2),
            dict(verifier="pointmass", temperature=0.0)]


@pytest.mark.parametrize("settings", SETTINGS, ids=["chain3", "chain5", "sequence4", "greedy"])
@pytest.mark.parametrize("shape", engine_export.SHAPES)
def test_a_run_exported_then_imported_gives_back_its_own_per_position_counts(toy, settings, shape):
    trace = run(toy, **settings)
    assert len(trace.steps) >= 3
    text = engine_export.export_text(trace, shape)
    record = engine_traces.parse_text(text)
    assert record.engine == shape
    got = engine_shape.positions(record)
    assert (got.reached, got.accepted) == own_counts(trace)
    drafted = sum(len(s.nodes) - 1 for s in trace.steps)
    accepted = sum(len(s.accepted_path) - 1 for s in trace.steps)
    assert (record.steps, record.drafted, record.accepted) == (len(trace.steps), drafted, accepted)


def test_a_tree_run_is_refused_in_one_line(toy):
    trace = run(toy, verifier="rrs", branching=(2, 2))
    with pytest.raises(ValueError) as err:
        engine_export.export_text(trace, "vllm")
    assert "drafted a tree (2 children at a node)" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(ValueError, match="unknown engine shape"):
        engine_export.export_text(run(toy), "trt")


def test_the_runs_own_exact_expectation(toy):
    trace = run(toy)
    alphas = engine_export.depth_alphas(trace.steps)
    root = [v.alpha_exact for s in trace.steps for v in s.visits if v.node == 0]
    assert alphas[0] == pytest.approx(sum(root) / len(root))
    assert len(alphas) == 3 and all(0 < a <= 1 for a in alphas)
    block = run(toy, verifier="block")
    assert "no exact per-node acceptance" in engine_export.depth_alphas(block.steps)
