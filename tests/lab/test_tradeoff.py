"""The lossy trade-off (decoding/lab/tradeoff.py, viz tradeoff_figure): fuzzy's staircase is exact at every
threshold, lossless verifiers sit on TV = 0, greedy and typical beside them."""

from __future__ import annotations

import math

import pytest

from decoding.lab import language as lang
from decoding.lab.exact import check_case
from decoding.lab.tradeoff import thresholds, tradeoff
from decoding.verify.registry import VERIFIERS
from decoding.verify.rules.fuzzy import js_divergence
from viz.lab import fuzzy_markers, tradeoff_figure

SHAPE = (2, 1)


@pytest.fixture(scope="module")
def context3():
    return lang.load(lang.presets()["context3"])


@pytest.fixture(scope="module")
def swept(context3):
    return tradeoff(VERIFIERS, context3, SHAPE, ["rrs", "ot_optimal", "greedy", "typical", "sd", "fuzzy"])


@pytest.fixture(scope="module")
def points(swept):
    return swept[0]


def test_thresholds_are_the_languages_js_steps(context3):
    ts = thresholds(context3)
    js = sorted({js_divergence(context3.p(pre), context3.q(pre)) for pre in context3.draft})
    assert ts[0] == 0.0 and ts[-1] == math.log(2) and ts == sorted(ts)
    assert len(ts) == len([v for v in js if v > 0]) + 2
    for t, v in zip(ts[1:-1], [v for v in js if v > 0], strict=True):
        assert v < t < v * (1 + 1e-8)  # just above each step


def test_fuzzy_curve_runs_from_lossless_to_always_accepting(points, context3):
    curve = [p for p in points if p.verifier == "fuzzy"]
    assert [p.threshold for p in curve] == thresholds(context3)
    assert curve[0].tv < 1e-12 and curve[0].expected_tokens == pytest.approx(1.0)  # T = 0: q never equals p here
    assert curve[-1].expected_tokens == pytest.approx(len(SHAPE) + 1)  # T = ln 2: every draft accepted
    tvs, tokens = [p.tv for p in curve], [p.expected_tokens for p in curve]
    assert tokens == sorted(tokens) and tvs[-1] > 0.1  # more accepted as T grows, and further from p
    middle = curve[len(curve) // 2]  # one step recomputed independently of the sweep
    again = check_case(VERIFIERS["fuzzy"].with_params(threshold=middle.threshold), context3, SHAPE)
    assert again.tv == middle.tv and again.expected_tokens == middle.expected_tokens


def test_lossless_points_on_zero_and_the_lossy_baselines_off_it(points, swept):
    by_key = {p.verifier: p for p in points if p.threshold is None}
    assert "sd" not in by_key and swept[1][0].startswith("sd: ")  # k = 2 at the root: left out with a note
    for key in ("rrs", "ot_optimal"):
        assert by_key[key].tv < 1e-9 and by_key[key].lossless
    for key in ("greedy", "typical"):
        assert by_key[key].tv > 0.05 and not by_key[key].lossless
    assert by_key["ot_optimal"].expected_tokens >= by_key["rrs"].expected_tokens - 1e-12


def test_figure_draws_one_fuzzy_marker_per_distinct_result_and_the_points(points):
    fig = tradeoff_figure(points, "context3")
    names = [t.name for t in fig.data]
    assert names[0] == "fuzzy, threshold T moving" and names[-1] == "lossy"
    curve = [(p.tv, p.expected_tokens) for p in points if p.verifier == "fuzzy"]  # in threshold order
    distinct = [xy for i, xy in enumerate(curve) if i == 0 or xy != curve[i - 1]]
    assert len(distinct) < len(curve)  # context3 has thresholds that change nothing: drawn once, not again
    assert list(zip(fig.data[0].x, fig.data[0].y, strict=True)) == distinct
    runs = fuzzy_markers(points)  # the thresholds each marker stands for, its hover giving their range
    assert sum(len(r) for r in runs) == len(curve) and len(runs) == len(distinct)
    assert [t.startswith("T from ") for t in fig.data[0].text] == [len(r) > 1 for r in runs]
    zero = [t for t in fig.data if t.legendgroup == "lossless"]
    assert sorted(t.name.split(":")[0] for t in zero) == ["ot_optimal", "rrs"] and all(t.x[0] < 1e-9 for t in zero)
    assert set(fig.data[-1].text) == {"greedy", "typical"}
    assert tradeoff_figure([]).layout.annotations[0].text.startswith("nothing to draw")
