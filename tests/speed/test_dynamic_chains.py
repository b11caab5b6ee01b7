"""The chooser's chains with a minimum confidence (chooser.dynamic, from the measured chain steps): where the
draft's confidence tells accepted steps from rejected ones, a floor drafts deep only where it pays and is
chosen; where it tells nothing, a floor only cuts every step alike, predicts what the shorter chain predicts,
and the chain without a floor is kept. The steps come from the acceptance runs' own records (chain_step)."""

from __future__ import annotations

import math

import pytest

from decoding.fastest import config_for
from decoding.models import pairs
from decoding.run import engine
from decoding.run.costs import StepCosts
from decoding.speed import pair_acceptance
from decoding.speed.chooser import FLOORS, AcceptanceTable, choose, drafted_levels, dynamic, predict

COSTS = StepCosts(target=((1, 20.0), (2, 21.0), (5, 24.0)), draft=((1, 2.0),), overhead=0.5)  # a CPU-like curve
# k accepted with P(k >= d) = 1/2^d over 16 steps: the realized counts agree with A(1, d) = 0.5 exactly
GEOMETRIC = [0] * 8 + [1] * 4 + [2] * 2 + [3, 4]


def test_drafted_levels_count_the_leading_nodes_sure_enough():
    sure = (0.9, 0.6, 0.3, 0.1)
    assert [drafted_levels(sure, 4, c) for c in (0.05, 0.2, 0.5, 0.7, 0.95)] == [4, 4, 3, 2, 1]
    assert drafted_levels(sure, 2, 0.05) == 2 and drafted_levels((0.9,), 4, 0.05) == 1  # the depth, the nodes


def test_a_confidence_that_tells_accepted_from_rejected_steps_is_chosen():
    sure_steps = [(4, (0.9, 0.8, 0.7, 0.6))] * 8  # sure and right: every level accepted
    unsure_steps = [(0, (0.15, 0.01, 0.001, 0.0001))] * 8  # unsure and wrong
    table = AcceptanceTable({1: (0.5, 1.0, 1.0, 1.0)}, chain=tuple(sure_steps + unsure_steps))
    choice = choose(COSTS, table, max_depth=4, chains_only=True)
    best = choice.best
    assert best.levels == (1, 1, 1, 1) and best.floor == 0.2  # the lowest floor that stops the unsure half
    static = predict((1, 1, 1, 1), COSTS, table)
    assert best.tokens_per_step == pytest.approx(static.tokens_per_step)  # the same tokens: only sure levels cut
    assert best.step_ms == pytest.approx((COSTS.step_ms((1, 1, 1, 1)) + COSTS.step_ms((1,))) / 2)
    assert "min confidence 0.2" in choice.why()
    cal = type("Cal", (), {"costs": COSTS})()
    assert config_for(best, 0.8, cal).min_confidence == 0.2  # fastest()'s config carries the floor


def test_a_confidence_that_tells_nothing_keeps_the_chain_without_a_floor():
    table = AcceptanceTable({1: (0.5,) * 4}, chain=tuple((k, (0.5, 0.25, 0.125, 0.0625)) for k in GEOMETRIC))
    for floor in FLOORS:  # every step cut alike: the chain it cuts to, predicted as that chain
        cut = dynamic(4, floor, COSTS, table)
        level = drafted_levels((0.5, 0.25, 0.125, 0.0625), 4, floor)
        same = predict((1,) * level, COSTS, table)
        assert cut.tokens_per_step == pytest.approx(same.tokens_per_step)
        assert cut.step_ms == pytest.approx(same.step_ms)
    assert choose(COSTS, table, max_depth=4, chains_only=True).best.floor == 0.0


def test_the_chain_steps_round_trip_through_the_json():
    table = AcceptanceTable({1: (0.5, 0.4)}, 10, ((1, (0.5, 0.25)), (0, ())))
    assert AcceptanceTable.from_dict(table.to_dict()) == table
    assert "chain" not in AcceptanceTable({1: (0.5,)}).to_dict()  # not measured: no key
    assert AcceptanceTable.from_dict({"rates": {"1": [0.5]}}).chain == ()  # an older file


def test_a_chain_step_is_the_records_accepted_count_and_confidences():
    pair = pairs.load_pair("toy")
    config = pair_acceptance.chain(0.8, new_tokens=10)
    run = engine.generate(pair, config, "the cat")
    assert run.steps
    for record in run.steps:
        k, sure = pair_acceptance.chain_step(record)
        assert k == sum(1 for node in record.nodes if node.status == "accepted")
        chain_nodes = sorted((n for n in record.nodes if n.depth > 0), key=lambda n: n.depth)
        assert len(sure) == len(chain_nodes) == pair_acceptance.DEPTH
        for depth in range(1, len(chain_nodes) + 1):
            expected = math.prod(n.q_token for n in chain_nodes[:depth])
            assert sure[depth - 1] == pytest.approx(expected, abs=1e-4)


def test_a_chain_deeper_than_the_measured_steps_is_predicted_without_its_floor():
    table = AcceptanceTable({1: (0.5,) * 4}, chain=tuple((k, (0.9, 0.1, 0.01, 0.001)) for k in GEOMETRIC))
    deep = predict((1,) * 6, COSTS, table, floor=0.3)
    assert deep == predict((1,) * 6, COSTS, table) and deep.floor == 0.0  # nothing measured past depth 4 to cut
    assert predict((1,) * 4, COSTS, table, floor=0.3).floor == 0.3
