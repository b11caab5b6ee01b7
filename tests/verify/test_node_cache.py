"""khisti_is through a NodeCache (what the compare Monte-Carlo uses): the same verdicts as without it,
one induced-law fit per node however many times it is verified, and never a stale law for a node
whose rows changed in place."""

from __future__ import annotations

import torch

from decoding.verify.registry import VERIFIERS
from decoding.verify.rules.fast import khisti_lazy
from decoding.verify.rules.node_cache import NodeCache

F64 = torch.float64
V, K = 3000, 4  # above the enumeration limit: the integral path, whose fit is what the cache saves


def _rows(seed: int, n: int = 3) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    p = torch.softmax(torch.randn(n, V, generator=g, dtype=F64) * 2, -1)  # [n, V]
    q = torch.softmax(torch.randn(n, V, generator=g, dtype=F64) * 2, -1)
    return p, q


def _candidates(q: torch.Tensor, seed: int) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    return [VERIFIERS["khisti_is"].sample(q[i], K, g) for i in range(q.shape[0])]


def _verdicts(verify, p, q, xs, draws: int) -> list[tuple]:
    g = torch.Generator().manual_seed(7)
    out = []
    for j in range(draws):
        i = j % p.shape[0]
        v = verify(p[i], q[i], xs[i], g)
        out.append((v.accepted, v.token, tuple(t.threshold for t in v.tests)))
    return out


def test_memoised_verdicts_equal_plain_ones_with_one_fit_per_node():
    p, q = _rows(0)
    xs = _candidates(q, 1)
    cache = NodeCache()
    memo = VERIFIERS["khisti_is"].memoised(cache)
    assert _verdicts(memo.verify, p, q, xs, 30) == _verdicts(VERIFIERS["khisti_is"].verify, p, q, xs, 30)
    assert (cache.misses, cache.hits, len(cache)) == (3, 27, 3)


def test_a_row_changed_in_place_is_refit():
    p, q = _rows(2, n=1)
    xs = _candidates(q, 3)[0]
    cache = NodeCache()
    khisti_lazy.verify(p[0], q[0], xs, torch.Generator().manual_seed(0), cache=cache)
    p[0] = torch.softmax(torch.randn(V, generator=torch.Generator().manual_seed(9), dtype=F64), 0)  # same memory
    v = khisti_lazy.verify(p[0], q[0], xs, torch.Generator().manual_seed(0), cache=cache)
    fresh = khisti_lazy.verify(p[0].clone(), q[0].clone(), xs, torch.Generator().manual_seed(0))
    assert cache.misses == 2
    assert [t.denominator for t in v.tests] == [t.denominator for t in fresh.tests]  # r(y) of the new rows
    assert (v.accepted, v.token) == (fresh.accepted, fresh.token)


def test_the_cache_is_bounded_and_other_entries_are_unchanged():
    p, q = _rows(4, n=5)
    xs = _candidates(q, 5)
    cache = NodeCache(max_nodes=2)
    memo = VERIFIERS["khisti_is"].memoised(cache)
    _verdicts(memo.verify, p, q, xs, 10)
    assert len(cache) == 2 and cache.misses == 10  # round robin over 5 nodes with room for 2: never a hit
    assert VERIFIERS["rrs"].memoised() is VERIFIERS["rrs"]
