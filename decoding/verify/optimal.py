"""Upper bounds on a node's acceptance for a candidate law: α* (F4) and the membership bound (F3).

F3  α ≤ Σ_x min(p(x), P_Q(x ∈ x̄)).
F4  α*(p, Q) = min over Y ⊆ V of [ p(Y) + 1 − Q(every candidate lies in Y) ]   (max-flow = min-cut).

For i.i.d. and without-replacement drafts the minimum is taken over the |V| + 1 prefixes of the
tokens sorted by p/q ascending (docs/verifiers.md §7.1 route 3). For i.i.d. drafts an exchange
argument proves it; for without-replacement drafts it is checked, not proved: it equals the
2^|V| min-cut on every random instance of tests/test_theory.py (and 300 more during development).
The without-replacement scan gets the exact miss only for the prefixes that cheap two-sided
bounds cannot rule out (_pruned_range); tests/verify/test_theory_fast.py checks it against the full scan.
`min_cut_by_subsets` is that 2^|V| oracle, used for small vocabularies and by the tests.
"""

from __future__ import annotations

import math
from functools import singledispatch

import numpy as np
import torch

from decoding.verify import laws
from decoding.verify.races.without_replacement import wor_miss_prefixes

MAX_SUBSET_V = 12  # 2^V subsets: exact min-cut by enumeration up to this vocabulary size
MAX_SUBSET_TUPLES = 20_000
SLACK = 1e-12  # rounding margin of the pruning bounds in _scan_wor (only widens the exact part)


def _f64(t: torch.Tensor) -> torch.Tensor:
    return t.detach().to(device="cpu", dtype=torch.float64)


def as_law(v: torch.Tensor) -> torch.Tensor:
    """A float64 copy of a distribution [V], renormalised as the verifiers do (float32 sums drift)."""
    v = _f64(v)
    total = float(v.sum())
    if not (total > 0 and math.isfinite(total)):
        raise ValueError(f"a distribution needs finite positive mass, got total {total}")
    return v / total


def top_tokens(q: torch.Tensor, k: int) -> torch.Tensor:
    """laws.top_order(q, k) as a tensor [k]: the k most likely tokens of q, ties to the lower id."""
    return torch.tensor(laws.top_order(q, max(k, 0)), dtype=torch.long)


def _law(law: str | laws.Law, q: torch.Tensor, k: int) -> laws.Law:
    law = laws.get(law)
    law.check_k(q, k)
    return law


# ---------------------------------------------------------------------------------------------
# Inclusion probabilities and the membership bound (F3)
# ---------------------------------------------------------------------------------------------


def inclusion_probabilities(q: torch.Tensor, k: int, law: str | laws.Law) -> torch.Tensor:
    """π(x) = P_Q(x ∈ x̄) [V] for k candidates drawn from q with `law` (see each Law's `inclusion`).

    iid: 1 − (1 − q)^k;  hub: 1 at a = argmax q, q(i)/(1 − q(a)) elsewhere (k = 2);
    topk_plus_random: 1 on the top-(k−1) set T, q(x)/(1 − q(T)) elsewhere;
    without_replacement: exact (races/without_replacement.py); topk / any: indicator of the top-k set.
    """
    q = as_law(q)
    return _law(law, q, k).inclusion(q, k)


def membership_bound(p: torch.Tensor, q: torch.Tensor, k: int, law: str | laws.Law) -> float:
    """F3: Σ_x min(p(x), P_Q(x ∈ x̄)), an upper bound on every verifier's acceptance under `law`."""
    return min(1.0, float(torch.minimum(as_law(p), inclusion_probabilities(q, k, law)).sum()))


# ---------------------------------------------------------------------------------------------
# The optimal-transport bound α* (F4)
# ---------------------------------------------------------------------------------------------


def ratio_order(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Token ids by p/q ascending: p = 0 first, q = 0 < p last (§7.1 route 3). [V] long."""
    ratio = torch.where(q > 0, p / q.clamp_min(1e-300), torch.full_like(p, math.inf))
    ratio = torch.where(p > 0, ratio, torch.zeros_like(p))
    return torch.sort(ratio, stable=True).indices


def _prefix_mass(v: torch.Tensor) -> torch.Tensor:
    """[V] -> [V+1]: mass of each prefix, starting with the empty one."""
    return torch.cat([torch.zeros(1, dtype=v.dtype), torch.cumsum(v, 0)])


def _suffix_mass(v: torch.Tensor) -> torch.Tensor:
    """[V] -> [V+1]: mass left outside each prefix (summed from the small end, so tails stay exact)."""
    tail = torch.flip(torch.cumsum(torch.flip(v, [0]), 0), [0])
    return torch.cat([tail, torch.zeros(1, dtype=v.dtype)])


def _scan_iid(p: torch.Tensor, q: torch.Tensor, k: int) -> float:
    """min over prefixes Y of p(Y) + 1 − q(Y)^k, with 1 − q(Y)^k = −expm1(k log(1 − q(V∖Y)))."""
    order = ratio_order(p, q)
    p_in = _prefix_mass(p[order])  # [V+1]
    q_out = _suffix_mass(q[order]).clamp(0.0, 1.0)  # [V+1] = 1 − q(Y)
    return float((p_in + laws.iid_hit(q_out, k)).min())  # miss = 1 − Q(x̄ ⊆ Y) = 1 − q(Y)^k


def _scan_wor(p: torch.Tensor, q: torch.Tensor, k: int) -> float:
    """min over ratio-sorted prefixes Y of p(Y) + 1 − Q_wo(x̄ ⊆ Y) (exponential race, races/without_replacement.py).

    Only the prefixes that can hold the minimum get the exact (quadrature) miss: see _pruned_range.
    """
    support = int((q > 0).sum())
    if k > support:
        return _wor_exhausted(p, q, k, support)
    order = ratio_order(p, q)
    p_in = _prefix_mass(p[order])  # [V+1]
    q_ord = q[order]
    start, end = _pruned_range(p_in, _suffix_mass(q_ord).clamp(0.0, 1.0), q, k)
    miss = wor_miss_prefixes(q_ord, k, stop=end, start=start)  # [end+1] = 1 − Q(x̄ ⊆ Y_j), exact for j ≥ start
    return float((p_in[start : end + 1] + miss[start:]).min())


def _pruned_range(p_in: torch.Tensor, outside: torch.Tensor, q: torch.Tensor, k: int) -> tuple[int, int]:
    """The first and last prefix indices j that can hold the minimum of p(Y_j) + miss_j; others cannot.

    With o = 1 − q(Y) and T_i the mass of the i heaviest tokens of q, for k draws without replacement
        1 − (1 − o)^k  ≤  miss(Y)  ≤  1 − Π_{i<k} max(0, 1 − o/(1 − T_i)).
    Lower: given i earlier draws inside Y (mass b), the next lands in Y with probability
    (q(Y) − b)/(1 − b) ≤ q(Y). Upper: that probability falls with b and b ≤ T_i, so it is at least
    (q(Y) − T_i)/(1 − T_i) = 1 − o/(1 − T_i) when positive. Any prefix's upper value bounds the
    minimum from above, so a prefix whose lower value exceeds min_j upper_j is never the minimum.
    SLACK covers rounding in both bounds; it only keeps more prefixes, so the scan stays exact.
    """
    lower = p_in + laws.iid_hit(outside, k)  # [V+1]
    upper = p_in + 1.0 - _contained_lower(outside, q, k)
    keep = torch.nonzero(lower <= float(upper.min()) + SLACK)
    return int(keep.min()), int(keep.max())


def _contained_lower(outside: torch.Tensor, q: torch.Tensor, k: int) -> torch.Tensor:
    """Π_{i<k} max(0, 1 − o/(1 − T_i)) [V+1]: a lower bound on Q_wo(x̄ ⊆ Y) (see _pruned_range)."""
    top, heavy = torch.topk(q, k)  # [k] heaviest masses; k ≤ |supp q| here
    light = float(q.index_fill(0, heavy, 0.0).sum())  # the others' mass, summed directly (no cancellation)
    left = light + torch.flip(torch.cumsum(torch.flip(top, [0]), 0), [0])  # [k] 1 − T_i = q(all but the top i)
    out = torch.ones_like(outside)
    for i in range(k):
        out = out * (1.0 - outside / float(left[i])).clamp_min(0.0)
    return out


def _wor_exhausted(p: torch.Tensor, q: torch.Tensor, k: int, support: int) -> float:
    """k > |supp q|: every tuple holds all of supp q, then k − s uniform draws from the n0 others.

    Q(x̄ ⊆ Y) = 1[supp q ⊆ Y] · C(m, k − s) / C(n0, k − s) with m = |Y ∖ supp q|, so the best Y is
    supp q plus the m zero-q tokens of least p.
    """
    zero_p = torch.sort(p[q <= 0]).values  # [n0]
    n0, extra = zero_p.shape[0], k - support
    m = torch.arange(n0 + 1, dtype=torch.float64)
    contained = torch.zeros(n0 + 1, dtype=torch.float64)  # [n0+1], indexed by m
    ok = m >= extra
    log_all = math.lgamma(n0 + 1) - math.lgamma(n0 - extra + 1)
    contained[ok] = torch.exp(torch.lgamma(m[ok] + 1) - torch.lgamma(m[ok] - extra + 1) - log_all)
    p_y = float(p[q > 0].sum()) + _prefix_mass(zero_p)  # [n0+1]
    return min(1.0, float((p_y + 1.0 - contained).min()))


def optimal_acceptance(p: torch.Tensor, q: torch.Tensor, k: int, law: str | laws.Law) -> float:
    """α* = max over lossless verifiers of P(accept) for k candidates drawn with `law` (F4).

    k = 1 (random laws): 1 − TV(p, q).  iid / without_replacement: sorted-prefix min-cut scan
    (exact 2^|V| min-cut for without_replacement at small V).  hub / topk_plus_random: the
    membership bound, which these sparse laws attain.  topk / any: p(C) for C = top-k of q.
    """
    p, q = as_law(p), as_law(q)
    law = _law(law, q, k)
    if k == 1 and not isinstance(law, laws.TopK):
        return float(torch.minimum(p, as_law(law.single_draw(q))).sum())
    return _optimum(law, p, q, k)


@singledispatch
def _optimum(law: laws.Law, p: torch.Tensor, q: torch.Tensor, k: int) -> float:
    """α* for k ≥ 2 candidates, by the law's class (a new law registers its own route)."""
    raise NotImplementedError(f"no optimal-acceptance route for the {law} law")


@_optimum.register
def _(law: laws.TopK, p: torch.Tensor, q: torch.Tensor, k: int) -> float:
    return float(p[top_tokens(q, k)].sum())


@_optimum.register(laws.Hub)
@_optimum.register(laws.TopkPlusRandom)
def _(law: laws.Law, p: torch.Tensor, q: torch.Tensor, k: int) -> float:
    return membership_bound(p, q, k, law)  # the sparse laws attain their membership bound


@_optimum.register
def _(law: laws.IID, p: torch.Tensor, q: torch.Tensor, k: int) -> float:
    return min(1.0, max(0.0, _scan_iid(p, q, k)))


@_optimum.register
def _(law: laws.WithoutReplacement, p: torch.Tensor, q: torch.Tensor, k: int) -> float:
    if p.shape[0] <= MAX_SUBSET_V and law.count(p.shape[0], k) <= MAX_SUBSET_TUPLES:
        return min_cut_by_subsets(p, q, k, law)
    return min(1.0, max(0.0, _scan_wor(p, q, k)))


def min_cut_by_subsets(p: torch.Tensor, q: torch.Tensor, k: int, law: str | laws.Law) -> float:
    """F4 by brute force: min over all 2^|V| subsets Y of p(Y) + 1 − Q(x̄ ⊆ Y), Q from enumeration.

    Q(x̄ ⊆ Y) for every Y at once is the subset-sum (zeta) transform of the tuples' masks.
    """
    p, q = as_law(p), as_law(q)
    V = p.shape[0]
    contained = np.zeros(2**V)  # [2^V], indexed by subset bit mask
    for cands, prob in laws.enumerate_tuples(law, q, k):
        contained[sum(1 << x for x in set(cands))] += prob
    p_of = np.zeros(2**V)
    for bit in range(V):
        p_of[1 << bit] = float(p[bit])
    for bit in range(V):  # zeta transform: f(Y) = Σ_{S ⊆ Y} f(S)
        for arr in (contained, p_of):
            view = arr.reshape(-1, 2, 2**bit)
            view[:, 1, :] += view[:, 0, :]
    return min(1.0, max(0.0, float((p_of + 1.0 - contained).min())))
