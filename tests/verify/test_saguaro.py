"""Saguaro sampling (decoding/verify/saguaro.py, decoding/lab/saguaro.py; docs/verifiers.md §23): q' as SSD's
`apply_sampler_x_rescaling` builds it, SD against q' certified lossless exactly by the lab, the same drafts tested
with the raw q certified lossy (the broken variant), and the exact cache-hit probability against what SSD's
verify-and-cache process does, drawn (node level) and summed over chains (a depth-1 chain by hand)."""

from __future__ import annotations

import math

import pytest
import torch

from decoding.lab import saguaro as lab_saguaro
from decoding.lab.certify import certify
from decoding.lab.language import load, presets, random_language
from decoding.verify import saguaro

P = torch.tensor([0.5, 0.3, 0.15, 0.05], dtype=torch.float64)  # docs/verifiers.md §12's toy
Q = torch.tensor([0.2, 0.5, 0.2, 0.1], dtype=torch.float64)


def ssd_rescale(probs: torch.Tensor, x: float, F: int) -> torch.Tensor:
    """SSD's apply_sampler_x_rescaling, restated: topk(F + 1) times x, renormalised (no ties in these rows)."""
    _, top = torch.topk(probs, F + 1)
    mask = torch.zeros_like(probs, dtype=torch.bool)
    mask[top] = True
    out = torch.where(mask, probs * x, probs)
    return out / out.sum()


def test_q_prime_is_ssds_rescale():
    g = torch.Generator().manual_seed(0)
    for _ in range(20):
        q = torch.rand(30, generator=g, dtype=torch.float64).softmax(0)
        for F, C in ((1, 0.5), (3, 0.25), (5, 2.0)):
            assert saguaro.rescaled(q, F, C) == pytest.approx(ssd_rescale(q, C, F), abs=1e-15)
    assert saguaro.rescaled(Q, 1, 0.5).tolist() == pytest.approx([0.1 / 0.65, 0.25 / 0.65, 0.2 / 0.65, 0.1 / 0.65])
    assert saguaro.rescaled(Q, 2, 1.0).tolist() == pytest.approx(Q.tolist())  # C = 1 is q: plain SD


def test_the_cache_is_qs_top_f_without_the_drafted_token():
    assert saguaro.cached(Q, 2, None) == [1, 0]  # ties to the lower id: 0 before 2
    assert saguaro.cached(Q, 2, 1) == [0, 2]
    assert saguaro.cached(Q, 2, 3) == [1, 0]


@pytest.mark.parametrize("F, C", [(1, 0.5), (2, 0.3), (1, 2.0)])
def test_sd_against_q_prime_is_certified_lossless_and_against_q_not(F, C):
    languages = [load(presets()["worked_example"]), load(presets()["context3"]), random_language(0, 5, 3)]
    good = certify(saguaro.entry(F, C), languages, (1, 1))
    assert good.lossless and good.to_json()["max_tv"] < 1e-12
    raw = certify(saguaro.entry(F, C, verified_against_q_prime=False), languages, (1, 1))
    assert not raw.lossless and raw.to_json()["max_tv"] > 0.1
    # the lab's k = 1 optimum is the law the drafts follow: sum min(p, q') at the root, not sum min(p, q)
    case = good.cases[0]
    p0, q0 = languages[0].p(()), languages[0].q(())
    assert case.alpha_star == pytest.approx(float(torch.minimum(p0, saguaro.rescaled(q0, F, C)).sum()))
    assert case.root_acceptance == pytest.approx(case.alpha_star)  # SD against the drafts' law reaches it


def test_the_raw_q_variant_is_sd_where_q_prime_is_q():
    """C = 1, or F + 1 >= V: q' = q, so forgetting the rescale changes nothing; its bonus is a draw from p as in
    SSD (as a lossy entry it once took argmax p at the leaf, which added TV of its own: 0.15 on binary_toy)."""
    languages = [load(presets()["binary_toy"]), load(presets()["context3"]), random_language(0, 5, 3)]
    assert certify(saguaro.entry(1, 1.0, verified_against_q_prime=False), languages, (1, 1)).lossless
    assert certify(saguaro.entry(1, 0.5, verified_against_q_prime=False), languages[:1], (1, 1)).lossless


def test_the_exact_node_hit_on_the_toy():
    sd = saguaro.node_hit(P, Q, 1, 1.0)
    # C = 1 is SD: residual = token 0 only; a rejected x = 1 (0.5 - 0.3) has cache {0}: a hit, x != 1 caches {1}
    assert (sd.acceptance, sd.rejection_hit, sd.bonus_hit) == pytest.approx((0.7, 0.2, 0.3))
    half = saguaro.node_hit(P, Q, 1, 0.5)
    assert half.acceptance == pytest.approx(0.85 / 1.3) and half.rejection_hit == pytest.approx(0.055 / 0.65)
    assert saguaro.node_hit(P, Q, 1, 0.1).rejection_hit == pytest.approx(0.16486486486486485)


def drawn(p, q, F, C, n, g) -> tuple[float, float]:
    """SSD's process drawn n times: x ~ q' (the law), SD's verdict against q' (the entry), a rejection's token looked
    up in the cache of x's position (q's top F without x). (frequency of rejected-and-hit, of accepted)."""
    entry, hits, accepted = saguaro.entry(F, C), 0, 0
    for _ in range(n):
        x = entry.law.sample(q, 1, g)[0]
        verdict = entry.verify(p, q, [x], g)
        if verdict.accepted is not None:
            accepted += 1
        elif verdict.token in saguaro.cached(q, F, x):
            hits += 1
    return hits / n, accepted / n


def within(got: float, want: float, n: int) -> bool:
    return abs(got - want) <= 4.5 * math.sqrt(want * (1 - want) / n) + 1e-9


def test_node_hit_against_the_drawn_process():
    g = torch.Generator().manual_seed(1)
    for trial in range(3):
        p = (torch.randn(12, generator=g, dtype=torch.float64) * 1.5).softmax(0)
        q = (p.log() + torch.randn(12, generator=g, dtype=torch.float64)).softmax(0)
        F, C = 1 + trial, (0.5, 0.25, 1.5)[trial]
        exact = saguaro.node_hit(p, q, F, C)
        hit, accepted = drawn(p, q, F, C, 20000, g)
        assert within(hit, exact.rejection_hit, 20000) and within(accepted, exact.acceptance, 20000), trial


def wrong_hit(p, q, F, C) -> float:
    """A broken exact formula: the cache read from q' instead of q (the drafter's logits are q's, not q')."""
    q_prime = saguaro.rescaled(q, F, C)
    excess = (p - q_prime).clamp(min=0)
    residual = excess / excess.sum()
    return sum(float(q_prime[x] - min(q_prime[x], p[x])) * float(residual[saguaro.cached(q_prime, F, x)].sum())
               for x in range(q.shape[0]))


def test_a_broken_hit_formula_fails_the_drawn_process():
    p = torch.tensor([0.05, 0.40, 0.30, 0.25], dtype=torch.float64)
    q = torch.tensor([0.34, 0.33, 0.32, 0.01], dtype=torch.float64)  # q and q' rank the tokens differently
    F, C = 1, 0.2
    hit, _ = drawn(p, q, F, C, 20000, torch.Generator().manual_seed(2))
    assert within(hit, saguaro.node_hit(p, q, F, C).rejection_hit, 20000)
    assert not within(hit, wrong_hit(p, q, F, C), 20000)


def test_the_chain_hit_of_depth_1_by_hand():
    language = load(presets()["context3"])
    F, C = 1, 0.5
    p0, q0 = language.p(()), language.q(())
    q_prime = saguaro.rescaled(q0, F, C)
    node = saguaro.node_hit(p0, q0, F, C)
    # a rejection at the root (node_hit), or the draft x accepted and the bonus y ~ p(. | x) in q(. | x)'s top F
    accepted_then_hit = sum(float(torch.minimum(p0, q_prime)[x]) * float(language.p((x,))[saguaro.cached(
        language.q((x,)), F, None)].sum()) for x in range(p0.shape[0]))
    assert lab_saguaro.chain_hit(language, 1, F, C) == pytest.approx(node.rejection_hit + accepted_then_hit)
    assert 0 < lab_saguaro.chain_hit(language, 2, F, C) < 1


@pytest.mark.parametrize("F, C", [(0, 0.5), (1.5, 0.5), (1, 0.0), (1, -1.0), (1, math.inf), (True, 0.5)])
def test_bad_settings_are_one_line(F, C):
    with pytest.raises(ValueError) as err:
        saguaro.entry(F, C)
    assert "Saguaro" in str(err.value) and "\n" not in str(err.value)


def test_the_law_names_its_settings_and_draws_one_candidate():
    law = saguaro.SaguaroLaw(3, 0.5)
    assert str(law) == "saguaro(F=3, C=0.5)"
    with pytest.raises(ValueError, match="k <= 1"):
        law.check_k(Q, 2)
    assert sum(prob for _, prob in law.enumerate(Q, 1)) == pytest.approx(1)


def test_smaller_c_moves_rejections_into_the_cache_on_random_rows():
    """docs/verifiers.md §23's table: 200 rows, V = 50, target logits N(0, 2^2), draft logits the target's plus
    N(0, 1), F = 3: the rejection's hit rate grows as C shrinks, the acceptance peaks near C = 0.5 and then falls."""
    g = torch.Generator().manual_seed(0)
    rows = []
    for _ in range(200):
        logits = torch.randn(50, generator=g, dtype=torch.float64) * 2
        rows.append((logits.softmax(0), (logits + torch.randn(50, generator=g, dtype=torch.float64)).softmax(0)))
    table = {}
    for C in (1.0, 0.5, 0.25, 0.1):
        hits = [saguaro.node_hit(p, q, 3, C) for p, q in rows]
        table[C] = (sum(h.acceptance for h in hits) / 200,
                    sum(h.rejection_hit for h in hits) / sum(h.rejection for h in hits))
    assert {C: (round(a, 4), round(h, 4)) for C, (a, h) in table.items()} == {
        1.0: (0.6704, 0.3130), 0.5: (0.6825, 0.4345), 0.25: (0.6515, 0.5518), 0.1: (0.5660, 0.6646)}
