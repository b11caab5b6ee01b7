"""The T = 0 acceptance table: A(k, d) is the rate at which the target's argmax is among the draft's k best
tokens (acceptance.top_k_rate), computed from every row whose q ranks more than one token; rows of a
one-hot q (a sampling law at T = 0) give A(1) and the calibration's ratios the rest. And the chains that
measure it at T = 0 are pointmass's, whose q rows are the draft's untempered law."""

from __future__ import annotations

import pytest
import torch

from decoding.speed import acceptance, pair_acceptance
from decoding.verify import laws

V = 6


def one_hot(i: int) -> torch.Tensor:
    p = torch.zeros(V, dtype=torch.float64)
    p[i] = 1.0
    return p


def ranked(order: list[int]) -> torch.Tensor:
    """A q whose tokens rank in `order` (first best)."""
    q = torch.zeros(V, dtype=torch.float64)
    for r, t in enumerate(order):
        q[t] = 2.0 ** -r
    return q / q.sum()


def test_top_k_rates_count_the_targets_argmax_among_the_drafts_best():
    rows = [(1, one_hot(0), ranked([0, 1, 2, 3, 4, 5])),  # rank 1
            (1, one_hot(2), ranked([1, 2, 0, 3, 4, 5])),  # rank 2
            (1, one_hot(5), ranked([3, 4, 5, 0, 1, 2])),  # rank 3
            (1, one_hot(4), ranked([0, 1, 2, 3, 4, 5]))]  # rank 5
    table = acceptance.table_from_rows(rows, (1, 2, 3, 4), greedy=True)
    assert table.rates[1][0] == pytest.approx(1 / 4)
    assert table.rates[2][0] == pytest.approx(2 / 4)
    assert table.rates[3][0] == pytest.approx(3 / 4)
    assert table.rates[4][0] == pytest.approx(3 / 4)
    # sd's own rate on such a q (sum min(p, q)) is not the top-1 rate: the greedy table must not use it
    assert acceptance.table_from_rows(rows, (1,)).rates[1][0] != pytest.approx(1 / 4)


def test_one_hot_rows_give_a1_and_the_ratios_the_rest():
    rows = [(1, one_hot(0), one_hot(0)), (1, one_hot(1), one_hot(0))]
    table = acceptance.table_from_rows(rows, (1, 2), ratios={2: 1.5}, greedy=True)
    assert table.rates[1][0] == pytest.approx(0.5) and table.rates[2][0] == pytest.approx(0.75)


def test_the_t0_measuring_chain_is_pointmass_and_the_others_sd():
    greedy, sampled = pair_acceptance.chain(0.0), pair_acceptance.chain(0.8)
    assert greedy.verifier == "pointmass" and laws.get("any").ranked
    assert sampled.verifier == "sd" and greedy.shape == sampled.shape


def test_a_greedy_runs_seen_numbers_are_top_k_rates():
    """The Speed tab reads a run's logged numbers (run/seen.py) once its rows are gone: at T = 0 they must be the
    top-k rates too. sd's sum min(p, q) on the untempered q would log q(argmax p) = 0.25 here, not 0."""
    from types import SimpleNamespace

    from decoding.run.seen import Seen

    record = SimpleNamespace(nodes=[SimpleNamespace(depth=0)], visits=[SimpleNamespace(node=0)])
    q = ranked([1, 2, 0, 3, 4, 5])  # the target's argmax, 2, is the draft's second best
    greedy, sampled = Seen(greedy=True), Seen()
    greedy.add_step(record, [(0, one_hot(2), q)])
    sampled.add_step(record, [(0, one_hot(2), q)])
    assert greedy.ones == [(1, 0.0)] and greedy.wide == [(0.0, 1.0)]
    assert sampled.ones[0][1] == pytest.approx(float(q[2]))


def test_a_one_hot_q_counts_only_its_one_token_for_every_k():
    """A lookup guess (one-hot q) drafts one candidate whatever k (laws.within_support): its top-4 rate must not
    count a hit on the zero-q tokens a plain top-4 of that q would list (the lowest ids: 0, 1, 2, ...)."""
    from decoding.run.seen import top_k_rate

    guess = one_hot(4)  # q: the guess is token 4
    assert top_k_rate(one_hot(2), guess, 4) == 0.0  # the target's argmax, id 2, is no candidate of this node
    assert top_k_rate(one_hot(4), guess, 4) == 1.0
    assert top_k_rate(one_hot(2), ranked([4, 3, 2, 0, 1, 5]), 3) == 1.0  # a full-support q: its top 3 count
