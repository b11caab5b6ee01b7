"""cactus (docs/verifiers.md §18): the authors' rule, its exact (lossy) node law on the §12 toy, what δ budgets,
and δ's path from the CLI through DecodeConfig and the trace to the rule the engine runs."""

from __future__ import annotations

import math

import pytest
import torch

from decoding.cli.main import build_parser, config_from_args
from decoding.cli.main import main as cli_main
from decoding.run.config import DecodeConfig
from decoding.verify.registry import VERIFIERS
from decoding.verify.rules import cactus
from decoding.verify.rules.common import Final, Test, chain_law
from tests.verifier_oracles import adversarial_pairs, dirichlet_pair, mixed_law, tv

F64 = torch.float64
ENTRY = VERIFIERS["cactus"]
P = torch.tensor([0.50, 0.30, 0.15, 0.05], dtype=F64)  # docs/verifiers.md §12
Q = torch.tensor([0.20, 0.50, 0.20, 0.10], dtype=F64)
# δ -> (exact acceptance, TV(out, p), KL(out ‖ p) in nats): the transcription numbers, to 4 digits
TOY = {0.01: (0.8456, 0.1456, 0.0457), 0.05: (0.9449, 0.2449, 0.1305)}


def kl(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(torch.special.xlogy(a, a).sum() - torch.special.xlogy(a, b).sum())


def authors_rule(p: torch.Tensor, q: torch.Tensor, n: int, delta: float) -> tuple[float, torch.Tensor]:
    """The authors' batch formula, written independently with their names swapped back (their target_probs is
    our p, their draft_probs our q): (accept probability of draft n, the recovered law)."""
    p_n = p[n]
    h_n = (p_n + torch.sqrt(2 * delta * p_n * (1 - p_n))).clamp(0.0, 1.0)
    factor = torch.nan_to_num((1 - h_n) / (1 - p_n), nan=1.0, posinf=1.0, neginf=0.0)
    h = p * factor
    h[n] = h_n
    h = h.clamp(0.0, 1.0)
    accept = float(torch.minimum(h_n / q[n], torch.tensor(1.0, dtype=F64)))
    rest = (h - q).clamp(min=0.0)
    return accept, torch.nan_to_num(rest / rest.sum(), nan=0.0)


def check_toy(conditional, acceptance=None) -> None:
    """Exact acceptance, TV and KL of the emitted law on the toy at both δ (the goal's numbers)."""
    for delta, (want_accept, want_tv, want_kl) in TOY.items():
        cond = conditional(delta)
        accept = sum(float(Q[x]) * float(cond(P, Q, [x])[0][0]) for x in range(4))
        out = mixed_law(cond, P, Q, 1, "iid")
        assert accept == pytest.approx(want_accept, abs=5e-5)
        assert tv(out, P) == pytest.approx(want_tv, abs=5e-5)
        assert kl(out, P) == pytest.approx(want_kl, abs=5e-5)
        if acceptance is not None:
            assert acceptance(delta)(P, Q, 1) == pytest.approx(accept, abs=1e-15)


def test_toy_numbers_at_both_deltas():
    check_toy(lambda d: ENTRY.with_params(delta=d).conditional, lambda d: ENTRY.with_params(delta=d).acceptance)
    out = mixed_law(ENTRY.conditional, P, Q, 1, "iid")  # the default δ = 0.01: KL 4.6 times the budget
    assert kl(out, P) / cactus.DEFAULT_DELTA == pytest.approx(4.57, abs=0.01)


def test_broken_variant_delta_ignored_fails_the_toy_check():
    """Broken variant: δ ignored (h = p), i.e. plain SD: acceptance 0.700 and TV 0, so the toy check fails."""
    def broken(delta):
        def conditional(p, q, xs):
            x = xs[0]
            r = (p - q).clamp(min=0)
            events = [Test(0, x, float(p[x]), float(q[x]), ""), Final(r / r.sum())]
            return chain_law(iter(events), list(xs), p.shape[0])
        return conditional

    with pytest.raises(AssertionError):
        check_toy(broken)


def test_delta_zero_is_sd_exactly():
    for p, q in _pairs():
        zero, sd = ENTRY.with_params(delta=0.0), VERIFIERS["sd"]
        for x in range(p.shape[0]):
            if float(q[x]) > 0:
                a, r = zero.conditional(p, q, [x])
                b, s = sd.conditional(p, q, [x])
                assert float((a - b).abs().max()) < 1e-15 and float((r - s).abs().max()) < 1e-15
        assert tv(mixed_law(zero.conditional, p, q, 1, "iid"), p) < 1e-12


def _pairs():
    g = torch.Generator().manual_seed(41)
    return [dirichlet_pair(g, 6, c, s) for c, s in [(0.3, False), (1.0, False), (3.0, False), (0.7, True)]] + [
        (p, q) for _, p, q in adversarial_pairs(6)
    ]


@pytest.mark.parametrize("delta", [0.0, 0.01, 0.05, 0.5, 2.0])
def test_the_rule_is_the_authors_formula(delta):
    """Accept probability and recovered law of every draft equal the authors' formula on random and adversarial
    pairs (p = q, one-hot p or q, disjoint supports, q(x) = 0 < p(x))."""
    entry = ENTRY.with_params(delta=delta)
    for p, q in _pairs():
        for x in range(p.shape[0]):
            if float(q[x]) == 0:
                continue  # never drafted
            want_accept, want_residual = authors_rule(p, q, x, delta)
            accept, residual = entry.conditional(p, q, [x])
            assert float(accept[0]) == pytest.approx(want_accept, abs=1e-13)
            if want_accept < 1:
                assert float((residual - want_residual).abs().max()) < 1e-13
        assert entry.acceptance(p, q, 1) == pytest.approx(
            sum(float(q[x]) * authors_rule(p, q, x, delta)[0] for x in range(p.shape[0]) if q[x] > 0), abs=1e-13)


@pytest.mark.parametrize("delta", [0.001, 0.01, 0.05])
def test_what_delta_budgets_half_chi_square_of_each_candidates_lifted_law(delta):
    """½ χ²(h⁽ⁿ⁾ ‖ p) = δ for every token whose lift is not capped at 1: δ budgets each candidate's modified verifier
    law to second order (its exact KL here is 0.73-1.02 δ); the emitted law is NOT held to δ."""
    for n in range(4):
        h = cactus.modified_target(P, n, delta)
        assert float(h.sum()) == pytest.approx(1.0, abs=1e-15)
        if float(h[n]) < 1.0:
            assert 0.5 * float(((h - P) ** 2 / P).sum()) == pytest.approx(delta, rel=1e-12)
            assert 0.7 * delta < kl(h, P) < 1.02 * delta
    assert kl(mixed_law(ENTRY.with_params(delta=delta).conditional, P, Q, 1, "iid"), P) > 2 * delta


def test_delta_flows_from_the_cli_to_the_trace_and_the_engine_entry():
    args = build_parser().parse_args(["generate", "--prompt", "x", "--verifier", "cactus", "--tree", "1,1",
                                      "--cactus-delta", "0.05"])
    config = config_from_args(args)
    assert config.cactus_delta == 0.05 and config.to_dict()["cactus_delta"] == 0.05
    assert DecodeConfig.from_dict(config.to_dict()).cactus_delta == 0.05
    assert config.entry().acceptance(P, Q, 1) == pytest.approx(TOY[0.05][0], abs=5e-5)
    default = build_parser().parse_args(["generate", "--prompt", "x"])
    assert config_from_args(default).cactus_delta == cactus.DEFAULT_DELTA == DecodeConfig().cactus_delta == 0.01


def test_delta_is_written_only_when_set_and_old_traces_read():
    assert "cactus_delta" not in DecodeConfig().to_dict()  # another verifier at the default: no new key
    assert DecodeConfig(cactus_delta=0.2).to_dict()["cactus_delta"] == 0.2
    assert DecodeConfig(verifier="cactus", branching=(1, 1)).to_dict()["cactus_delta"] == 0.01  # a cactus run: kept
    old = DecodeConfig(verifier="sd", branching=(1, 1)).to_dict()
    old.pop("cactus_delta", None)
    assert DecodeConfig.from_dict({**old, "verifier": "cactus"}).cactus_delta == 0.01


@pytest.mark.parametrize("bad", [-0.1, math.nan, math.inf, "0.3", True])
def test_a_bad_delta_is_one_line(bad):
    with pytest.raises(ValueError) as err:
        DecodeConfig(verifier="cactus", branching=(1,), cactus_delta=bad)
    assert "\n" not in str(err.value) and "cactus delta" in str(err.value)


def test_certify_exits_3_and_bad_flags_exit_2(capsys):
    assert cli_main(["certify", "--verifier", "cactus", "--language", "assets/languages/worked_example.json"]) == 3
    assert "NOT lossless" in capsys.readouterr().out
    assert cli_main(["certify", "--verifier", "cactus", "--cactus-delta", "0",
                     "--language", "assets/languages/worked_example.json"]) == 0
    assert cli_main(["certify", "--verifier", "sd", "--cactus-delta", "0.1"]) == 2
    assert cli_main(["certify", "--verifier", "cactus", "--cactus-delta", "-1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: --cactus-delta applies to --verifier cactus only, not 'sd'",
                   "error: the cactus delta is a divergence budget, a finite number >= 0 (0 is plain SD); got -1.0"]


def test_one_candidate_only():
    with pytest.raises(ValueError, match="exactly one candidate"):
        ENTRY.conditional(P, Q, [0, 1])
