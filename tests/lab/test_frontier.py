"""The lossy price frontier (decoding/lab/frontier.py, docs/verifiers.md §21): on docs §12's toy each point's exact
acceptance, TV and KL are the numbers computed by hand or in §18; the frontier is what no point beats; the lab's
handler draws it and refuses a bad table in one line."""

from __future__ import annotations

import math

import pytest
import torch

from decoding.lab import frontier
from decoding.verify.registry import VERIFIERS
from ui.lab import price_chart

F64 = torch.float64
P = torch.tensor([0.50, 0.30, 0.15, 0.05], dtype=F64)
Q = torch.tensor([0.20, 0.50, 0.20, 0.10], dtype=F64)
POINTS = {(pt.rule, pt.setting): pt for pt in frontier.frontier(VERIFIERS, P, Q)}


def test_the_points_on_the_toy():
    sd = POINTS[("sd", "")]
    assert (sd.acceptance, sd.tv, sd.kl) == pytest.approx((0.7, 0.0, 0.0), abs=1e-12) and sd.lossless
    for delta, (acc, tv, kl) in {0.01: (0.8456, 0.1456, 0.0457), 0.05: (0.9449, 0.2449, 0.1305)}.items():
        pt = POINTS[("cactus", f"δ = {delta:g}")]
        assert (pt.acceptance, pt.tv, pt.kl) == pytest.approx((acc, tv, kl), abs=5e-5) and pt.budget == delta
        assert pt.kl > 2 * pt.budget  # the emitted law is further than the advertised per-candidate budget
    greedy = POINTS[("greedy", "")]  # top-1 of q is B, argmax p is A: never accepted, always emits A
    assert (greedy.acceptance, greedy.tv, greedy.kl) == pytest.approx((0.0, 0.5, math.log(2)), abs=1e-12)
    accepting = next(pt for key, pt in POINTS.items() if key[0] == "fuzzy" and pt.acceptance > 0.999)
    assert accepting.tv == pytest.approx(0.3, abs=1e-12)  # accepting every draft emits q: TV(p, q)
    assert accepting.kl == pytest.approx(float((Q * (Q / P).log()).sum()), abs=1e-12)


def test_the_frontier_is_what_no_point_beats():
    points = list(POINTS.values())
    best = frontier.pareto(points)
    for pt in points:
        beaten = any(o.acceptance > pt.acceptance + 1e-12 and o.tv < pt.tv - 1e-12 for o in points)
        on = pt in best
        assert not (on and beaten)
    accs = [pt.acceptance for pt in best]
    assert accs == sorted(accs) and best[0].rule == "sd"  # at TV 0 the best is the lossless rule


def test_a_point_emitting_tokens_p_never_does_has_infinite_kl():
    p = torch.tensor([0.6, 0.4, 0.0], dtype=F64)
    q = torch.tensor([0.2, 0.3, 0.5], dtype=F64)
    points = {(pt.rule, pt.setting): pt for pt in frontier.frontier(VERIFIERS, p, q)}
    assert math.isinf(next(pt for key, pt in points.items() if key[0] == "fuzzy" and pt.acceptance > 0.999).kl)


def test_the_lab_handler_draws_it_and_refuses_a_bad_table():
    table = [["A", 0.5, 0.2], ["B", 0.3, 0.5], ["C", 0.15, 0.2], ["D", 0.05, 0.1]]
    figure, rows, note = price_chart(VERIFIERS, table)
    assert figure is not None and "On the frontier" in note
    assert ["cactus", "δ = 0.01", "0.8456", "0.1456", "0.0457 nats", "0.01"] in rows
    assert price_chart(VERIFIERS, [["A", "x", 0.2], ["B", 0.5, 0.8]]) == (None, [], "⚠️ every p and q cell must "
                                                                              "be a number")
    assert price_chart(VERIFIERS, None)[2].startswith("⚠️ the table needs")
