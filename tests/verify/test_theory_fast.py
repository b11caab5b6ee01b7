"""The fast paths of the without-replacement theory: the pruned α* scan and the blocked race quadrature.

Oracles: the unpruned scan over every prefix (same quadrature, all |V| + 1 prefixes) and exact
enumeration of the without-replacement law, with the token blocks and the row rescaling forced on.
"""

from __future__ import annotations

import pytest
import torch

from decoding.verify import laws, optimal
from decoding.verify.races import without_replacement as theory_race
from decoding.verify.races.without_replacement import wor_miss_prefixes
from tests.verify.test_theory import enumerated_miss


def llm_like(V: int, g: torch.Generator, temperature: float, spread: float = 3.0):
    logits = spread * torch.randn(V, generator=g, dtype=torch.float64)
    noise = torch.randn(V, generator=g, dtype=torch.float64)
    return torch.softmax((logits + noise) / temperature, 0), torch.softmax(logits / temperature, 0)


def full_scan(p: torch.Tensor, q: torch.Tensor, k: int) -> float:
    """min over all |V| + 1 ratio-sorted prefixes, nothing pruned."""
    order = optimal.ratio_order(p, q)
    return float((optimal._prefix_mass(p[order]) + wor_miss_prefixes(q[order], k)).min())


def laws_for_pruning(seed: int):
    g = torch.Generator().manual_seed(seed)
    for i in range(24):
        V = int(torch.randint(50, 5001, (1,), generator=g))
        temperature = (0.3, 0.8, 1.5)[i % 3]
        p, q = llm_like(V, g, temperature, spread=(3.0, 6.0)[i % 2])
        if i % 4 == 3:  # p close to q: the minimum sits where the bounds are tight
            p = 0.98 * q + 0.02 * p
        yield p, q


@pytest.mark.parametrize("block", [64, theory_race.BLOCK])
@pytest.mark.parametrize("k", [3, 4])
def test_pruned_scan_equals_full_scan(monkeypatch, k, block):
    monkeypatch.setattr(theory_race, "BLOCK", block)  # 64: the blocks before the first kept prefix are skipped
    pruned_some = 0
    for p, q in laws_for_pruning(seed=k):
        got, want = optimal._scan_wor(p, q, k), full_scan(p, q, k)
        assert got == pytest.approx(want, abs=1e-15, rel=0), (p.shape[0], k)
        order = optimal.ratio_order(p, q)
        outside = optimal._suffix_mass(q[order]).clamp(0.0, 1.0)
        start, end = optimal._pruned_range(optimal._prefix_mass(p[order]), outside, q, k)
        pruned_some += start > 0 and end < p.shape[0]
    assert pruned_some >= 12  # the pruning is exercised at both ends, not vacuous


def test_miss_bounds_hold_against_enumeration():
    g = torch.Generator().manual_seed(5)
    for _ in range(20):
        V = int(torch.randint(4, 8, (1,), generator=g))
        q = torch.softmax(3 * torch.randn(V, generator=g, dtype=torch.float64), 0)
        for k in range(2, min(V, 4) + 1):
            order = torch.randperm(V, generator=g)
            miss = enumerated_miss(q, k, order)
            outside = optimal._suffix_mass(q[order]).clamp(0.0, 1.0)
            lower = laws.iid_hit(outside, k)
            upper = 1.0 - optimal._contained_lower(outside, q, k)
            assert bool((lower <= miss + 1e-13).all()) and bool((miss <= upper + 1e-13).all()), (q, k)


def test_prefix_values_do_not_depend_on_stop():
    g = torch.Generator().manual_seed(9)
    p, q = llm_like(3000, g, 0.8)
    order = optimal.ratio_order(p, q)
    full = wor_miss_prefixes(q[order], 3)
    for stop in (0, 1, 7, 2047, 2048, 2049, 2999):
        assert torch.equal(wor_miss_prefixes(q[order], 3, stop=stop), full[: stop + 1]), stop


@pytest.mark.parametrize("k", [3, 4])
def test_prefixes_from_start_match_the_full_computation(monkeypatch, k):
    monkeypatch.setattr(theory_race, "BLOCK", 100)
    g = torch.Generator().manual_seed(10 + k)
    p, q = llm_like(1500, g, 0.8)
    order = optimal.ratio_order(p, q)
    full = wor_miss_prefixes(q[order], k)
    for start, stop in ((1, 1500), (99, 700), (100, 700), (101, 1200), (950, 1499), (1500, 1500)):
        got = wor_miss_prefixes(q[order], k, stop=stop, start=start)
        assert torch.allclose(got[start:], full[start : stop + 1], atol=1e-15, rtol=0), (start, stop)
        assert bool((got[:start] == 1.0).all())  # not computed: the trivial upper bound


@pytest.mark.parametrize("k", [3, 4])
@pytest.mark.parametrize("scaled", [False, True])
def test_blocked_quadrature_matches_enumeration(monkeypatch, k, scaled):
    monkeypatch.setattr(theory_race, "BLOCK", 3)  # many blocks: every carry between blocks is used
    if scaled:
        monkeypatch.setattr(theory_race, "UNSCALED_EXPONENT", -1.0)  # the rescaled rows of huge vocabularies
    g = torch.Generator().manual_seed(20 + k)
    V = 13
    for q in (
        torch.softmax(torch.randn(V, generator=g, dtype=torch.float64) * 4.0, 0),
        torch.softmax(torch.randn(V, generator=g, dtype=torch.float64), 0),
    ):
        order = torch.randperm(V, generator=g)
        assert torch.allclose(wor_miss_prefixes(q[order], k), enumerated_miss(q, k, order), atol=1e-10, rtol=0)
