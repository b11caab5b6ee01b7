"""fuzzy (docs/verifiers.md §16.2): the JS test, its exact (lossy) node law, and the threshold's path from the
CLI through DecodeConfig to the rule the engine runs."""

from __future__ import annotations

import math

import pytest
import torch
from scipy.spatial.distance import jensenshannon

from decoding.cli.main import build_parser, config_from_args
from decoding.run.config import DecodeConfig
from decoding.verify.registry import VERIFIERS
from decoding.verify.rules import fuzzy
from decoding.verify.rules.common import Final, Test, chain_law
from tests.verifier_oracles import adversarial_pairs, dirichlet_pair, mixed_law, tv

F64 = torch.float64
ENTRY = VERIFIERS["fuzzy"]


def _pairs():
    g = torch.Generator().manual_seed(5)
    return [dirichlet_pair(g, 5, c, s) for c, s in [(0.3, False), (1.0, False), (3.0, False), (0.7, True)]] + [
        (p, q) for _, p, q in adversarial_pairs(5)
    ]


def test_js_divergence_matches_scipy():
    for p, q in _pairs():
        want = float(jensenshannon(p.numpy(), q.numpy())) ** 2  # scipy returns the JS distance, sqrt(JS), in nats
        assert abs(fuzzy.js_divergence(p, q) - want) < 1e-12
        assert 0.0 <= fuzzy.js_divergence(p, q) <= math.log(2) + 1e-12


@pytest.mark.parametrize("threshold", [0.0, 0.02, 0.1, 0.4, math.log(2)])
def test_exact_node_law_is_q_below_the_threshold_and_p_above(threshold):
    """Mixed over every i.i.d. tuple: the output is q when JS(p, q) <= T, else p; TV = TV(p, q) · 1[JS <= T]."""
    entry = ENTRY.with_params(threshold=threshold)
    for p, q in _pairs():
        close = fuzzy.js_divergence(p, q) <= threshold
        for k in (1, 2, 3):
            out = mixed_law(entry.conditional, p, q, k, "iid")
            assert float((out - (q if close else p)).abs().max()) < 1e-12
            assert abs(tv(out, p) - (tv(p, q) if close else 0.0)) < 1e-12
            assert entry.acceptance(p, q, k) == (1.0 if close else 0.0)


def test_broken_variant_sd_residual_on_rejection_is_caught():
    """Broken variant: on rejection draw from SD's residual (p - q)_+ instead of p. Above the threshold the
    output must be p; with that residual it is not (measured TV 0.30 on this pair)."""
    p = torch.tensor([0.5, 0.3, 0.15, 0.05], dtype=F64)
    q = torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=F64)
    assert fuzzy.js_divergence(p, q) > 0.1

    def broken(p, q, xs):
        div = fuzzy.js_divergence(p, q)
        events = [Test(i, x, 0.1, div, "", outcome=div <= 0.1) for i, x in enumerate(xs)]
        r = (p - q).clamp(min=0)
        return chain_law(iter(events + [Final(r / r.sum())]), list(xs), p.shape[0])

    assert tv(mixed_law(ENTRY.with_params(threshold=0.1).conditional, p, q, 1, "iid"), p) < 1e-12
    assert tv(mixed_law(broken, p, q, 1, "iid"), p) > 0.05


def test_threshold_flows_from_the_cli_to_the_engine_entry():
    args = build_parser().parse_args(["generate", "--prompt", "x", "--verifier", "fuzzy", "--fuzzy-threshold", "0.05"])
    config = config_from_args(args)
    assert config.fuzzy_threshold == 0.05 and config.to_dict()["fuzzy_threshold"] == 0.05
    assert DecodeConfig.from_dict(config.to_dict()).fuzzy_threshold == 0.05
    p = torch.tensor([0.5, 0.3, 0.2], dtype=F64)
    q = torch.tensor([0.4, 0.35, 0.25], dtype=F64)  # JS = 0.0051: accepted at 0.05, rejected at 0.001
    assert float(config.entry().conditional(p, q, [0])[0][0]) == 1.0
    assert float(config.with_(fuzzy_threshold=0.001).entry().conditional(p, q, [0])[0][0]) == 0.0
    default = build_parser().parse_args(["generate", "--prompt", "x"])
    assert config_from_args(default).fuzzy_threshold == fuzzy.DEFAULT_THRESHOLD == DecodeConfig().fuzzy_threshold


@pytest.mark.parametrize("bad", [-0.1, math.nan, math.inf, "0.3"])
def test_a_bad_threshold_is_one_line(bad):
    with pytest.raises(ValueError) as err:
        DecodeConfig(verifier="fuzzy", fuzzy_threshold=bad)
    assert "\n" not in str(err.value) and "fuzzy threshold" in str(err.value)


def test_an_unknown_parameter_is_refused():
    with pytest.raises(ValueError, match="takes no parameter"):
        ENTRY.with_params(alpha=1.0)
    with pytest.raises(ValueError, match="takes no parameter"):
        VERIFIERS["sd"].with_params(threshold=1.0)


def test_the_threshold_is_inclusive():
    """accept iff JS <= T (the reference code's `divs <= div_threshold`): T = 0 accepts where q = p, and a
    node whose JS equals T exactly passes."""
    p = torch.tensor([0.5, 0.3, 0.2], dtype=F64)
    q = torch.tensor([0.2, 0.3, 0.5], dtype=F64)
    assert float(ENTRY.with_params(threshold=0.0).conditional(p, p.clone(), [0])[0][0]) == 1.0
    at = fuzzy.js_divergence(p, q)
    assert float(ENTRY.with_params(threshold=at).conditional(p, q, [1, 0])[0][0]) == 1.0
    assert float(ENTRY.with_params(threshold=at * (1 - 1e-9)).conditional(p, q, [1, 0])[0].sum()) == 0.0
