"""Acceptance of recursive rejection sampling without replacement (rrs_wor, docs/verifiers.md §4) at any V.

Structure used here [D, checked against enumeration in tests/test_theory.py]. After i rejections,

    r_{i+1} = (p − ρ_{i+1} q)_+ / G(ρ_{i+1}),   G(ρ) = Σ_x (p(x) − ρ q(x))_+,
    ρ_1 = 0,   ρ_{i+1} = ρ_i + G(ρ_i) / m_i,     m_i = q(tokens not yet drafted),

because subtracting d_i = q/m_i from (p − ρ_i q)_+/G(ρ_i) only raises the threshold, and every
rejected token already has p < ρ q. So the residual depends on the rejected tokens only through
their q-mass, G is one sorted scan, and by F1 the last test needs no sum over its token:

    P(all k rejected) = Σ_{x_1..x_{k−1}} Π_{i<k} w_i(x_i) · G(ρ_{k+1}) / G(ρ_k),
    w_i(x) = (d_i(x) − r_i(x))_+  (draw x, then reject it).

Once supp q is used up (k > |supp q|) the law draws uniformly among the n undrafted tokens; the
residual is then (p − τ)_+ on them and, per draw, τ ← τ + H(τ)/n with H(τ) = Σ_{q=0} (p − τ)_+,
which does not depend on the token drawn: a deterministic factor H(τ_end)/H(0).

Prefixes x_1..x_{k−1} are summed exactly over the most likely tokens (all of them for k ≤ 2 or a
small support); the remaining prefixes are sampled by sequential importance sampling from the
rejection weights w_i themselves (stratified, unbiased, with a standard error).
"""

from __future__ import annotations

import math

import torch

from decoding.verify.theory.acceptance import Acceptance

MAX_PREFIXES = 65_536  # exact sum over at most this many candidate prefixes
NEGLIGIBLE = 1e-12  # prefixes outside the head carrying at most this much are dropped (method stays exact)


class _Threshold:
    """G(ρ) = Σ (p − ρ q)_+ for many ρ at once, from the tokens sorted by p/q."""

    def __init__(self, p: torch.Tensor, q: torch.Tensor, order: _RatioOrder):
        desc = torch.flip(order.token, [0])  # largest ratios first (q = 0 < p first of all)
        self.ratio_asc = order.ratio  # [V] for searchsorted
        zero = torch.zeros(1, dtype=p.dtype)
        self.p_cum = torch.cat([zero, torch.cumsum(p[desc], 0)])  # [V+1], largest ratios first
        self.q_cum = torch.cat([zero, torch.cumsum(q[desc], 0)])

    def __call__(self, rho: torch.Tensor) -> torch.Tensor:
        n = self.ratio_asc.shape[0]
        above = n - torch.searchsorted(self.ratio_asc, rho, right=True)  # tokens with p/q > ρ
        return (self.p_cum[above] - rho * self.q_cum[above]).clamp_min(0.0)


class _RatioOrder:
    """Every token by p/q ascending, one sort shared by G and the sampler: p = 0 < q first (ratio 0),
    then supp q by ratio, then q = 0 (ratio +inf; they add nothing to G when p = 0 too)."""

    def __init__(self, p: torch.Tensor, q: torch.Tensor):
        ratio = torch.where(q > 0, p / q, torch.full_like(p, math.inf))  # [V]
        self.ratio, self.token = torch.sort(ratio, stable=True)  # [V], [V]
        self.support = int((q > 0).sum())  # the first `support` tokens of the order are supp q


def _ratio(num: torch.Tensor, den: torch.Tensor) -> torch.Tensor:
    """num/den, 0 where den holds (numerically) nothing."""
    return torch.where(den > 1e-300, num / den.clamp_min(1e-300), torch.zeros_like(num))


class _Law:
    """The per-prefix state of rrs_wor: remaining draft mass m, threshold ρ and G(ρ)."""

    def __init__(self, p: torch.Tensor, q: torch.Tensor, k: int):
        self.p, self.q, self.k = p, q, k
        self.order = _RatioOrder(p, q)
        self.G = _Threshold(p, q, self.order)
        self.heavy = torch.topk(q, min(k, q.shape[0])).indices  # [k] masses subtracted exactly
        light = torch.ones_like(q, dtype=torch.bool)
        light[self.heavy] = False
        self.light_mass = float(q[light].sum())
        self.is_light = light

    def mass(self, prefix: torch.Tensor) -> torch.Tensor:
        """q(V ∖ prefix) [N] for prefixes [N, L], without cancellation when a heavy token is drafted."""
        drafted_light = (self.q[prefix] * self.is_light[prefix]).sum(1)
        heavy_in = (prefix[:, :, None] == self.heavy[None, None, :]).any(1)  # [N, k]
        heavy_left = (self.q[self.heavy][None, :] * ~heavy_in).sum(1)
        return (self.light_mass - drafted_light).clamp_min(0.0) + heavy_left

    def start(self, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.zeros(n, dtype=torch.float64), torch.ones(n, dtype=torch.float64)  # ρ_1, G(ρ_1)

    def step(self, prefix: torch.Tensor, rho: torch.Tensor, g: torch.Tensor):
        """(m_i, ρ_{i+1}, G(ρ_{i+1})) for prefixes [N, i−1] whose state is (ρ_i, G(ρ_i))."""
        m = self.mass(prefix)
        rho_next = rho + _ratio(g, m)
        return m, rho_next, self.G(rho_next)

    def reject_weight(self, x: torch.Tensor, m, rho, g) -> torch.Tensor:
        """w_i(x) = (q(x)/m − (p(x) − ρ q(x))_+/G)_+ : P(draw x and reject it). Broadcasts."""
        d = _ratio(self.q[x], m)
        r = _ratio((self.p[x] - rho * self.q[x]).clamp_min(0.0), g)
        return (d - r).clamp_min(0.0)

def _uniform_phase(p: torch.Tensor, q: torch.Tensor, draws: int) -> float:
    """P(all `draws` uniform fallback draws are rejected | supp q all drafted and rejected)."""
    if draws <= 0:
        return 1.0
    zero_p = p[q <= 0]
    total = float(zero_p.sum())
    if total <= 0:
        return 0.0
    n_left, tau, h = zero_p.shape[0], 0.0, total
    for _ in range(draws):
        tau += h / n_left
        h = float((zero_p - tau).clamp_min(0.0).sum())
        n_left -= 1
    return h / total


def _last_factor(law: _Law, prefix: torch.Tensor, rho, g) -> torch.Tensor:
    """P(the last q-phase draw is rejected | prefix) = G(ρ_{k+1}) / G(ρ_k), by F1. [N]"""
    _, _, g_next = law.step(prefix, rho, g)
    return _ratio(g_next, g)


def _exact_head(law: _Law, head: torch.Tensor, length: int) -> torch.Tensor:
    """Σ over prefixes of `length` distinct head tokens of Π w_i · G(ρ_{L+2})/G(ρ_{L+1}). Scalar."""
    prefix = torch.zeros(1, 0, dtype=torch.long)
    weight = torch.ones(1, dtype=torch.float64)
    rho, g = law.start(1)
    for _ in range(length):
        m, rho_next, g_next = law.step(prefix, rho, g)
        w = law.reject_weight(head[None, :], m[:, None], rho[:, None], g[:, None])  # [N, h]
        w = w * (prefix[:, :, None] != head[None, None, :]).all(1)  # distinct tokens only
        n_idx, h_idx = torch.nonzero(w > 0, as_tuple=True)
        weight = weight[n_idx] * w[n_idx, h_idx]
        prefix = torch.cat([prefix[n_idx], head[h_idx][:, None]], 1)
        rho, g = rho_next[n_idx], g_next[n_idx]
    if prefix.shape[0] == 0:
        return torch.zeros((), dtype=torch.float64)
    return (weight * _last_factor(law, prefix, rho, g)).sum()


class _RejectedDraws:
    """Draws x_i with probability ∝ w_i(x | prefix) = P(draft x, then reject it), many prefixes at once.

    On supp q sorted by p/q ascending, w_i/q is 1/m up to the ratio ρ, falls linearly to 0 at
    ρ' = ρ + G/m and stays 0: the cumulative weight W(n) of the first n tokens is closed form in
    the prefix sums of q and p. Drafted tokens (all with ratio < ρ) are taken out as q/m each.
    Inverse-CDF sampling is then a vectorised binary search over n.
    """

    def __init__(self, p: torch.Tensor, q: torch.Tensor, order: _RatioOrder):
        s = order.support
        self.ratio, self.token = order.ratio[:s], order.token[:s]  # [s] supp q by p/q ascending
        zero = torch.zeros(1, dtype=q.dtype)
        self.q_cum = torch.cat([zero, torch.cumsum(q[self.token], 0)])  # [s+1]
        self.p_cum = torch.cat([zero, torch.cumsum(p[self.token], 0)])
        self.pos = torch.full(q.shape, -1, dtype=torch.long)
        self.pos[self.token] = torch.arange(s)
        self.q = q

    def draw(self, m, rho, g, drafted, generator) -> tuple[torch.Tensor, torch.Tensor]:
        """(tokens [M], total weights Z [M]) for states (m, ρ, G) [M] and drafted tokens [M, i−1]."""
        size = self.ratio.shape[0]
        weight_below = _WeightBelow(self, m, rho, g, drafted)
        total = weight_below(torch.full_like(weight_below.n_rho, size))  # [M] = G(ρ')/G(ρ) by F1
        target = torch.rand(total.shape, generator=generator, dtype=torch.float64) * total
        lo, hi = torch.zeros_like(total, dtype=torch.long), torch.full_like(total, size, dtype=torch.long)
        for _ in range(max(1, size.bit_length())):  # W(lo) ≤ target < W(hi)
            mid = (lo + hi) // 2
            above = weight_below(mid) > target
            hi, lo = torch.where(above, mid, hi), torch.where(above, lo, mid)
        return self.token[(hi - 1).clamp(0, size - 1)], total


class _WeightBelow:
    """W(n) [M]: total w over the first n tokens of the ratio order, drafted tokens excluded.

    What does not depend on n (the edges ρ and ρ', the masses there, the guarded divisors) is
    computed once per draw; the binary search calls this about log2 |supp q| times.
    """

    def __init__(self, draws: _RejectedDraws, m, rho, g, drafted):
        self.q_cum, self.p_cum, self.rho = draws.q_cum, draws.p_cum, rho
        self.n_rho = torch.searchsorted(draws.ratio, rho, right=True)  # tokens with ratio ≤ ρ
        self.n_top = torch.searchsorted(draws.ratio, rho + _ratio(g, m), right=False)  # tokens with ratio < ρ'
        self.p_rho, self.q_rho = draws.p_cum[self.n_rho], draws.q_cum[self.n_rho]
        self.m_ok, self.m = m > 1e-300, m.clamp_min(1e-300)  # as _ratio guards them
        self.g_ok, self.g = g > 1e-300, g.clamp_min(1e-300)
        self.q_drafted, self.pos_drafted = draws.q[drafted], draws.pos[drafted]  # [M, i−1]

    def __call__(self, n: torch.Tensor) -> torch.Tensor:
        n = torch.minimum(n, self.n_top)  # w = 0 from ratio ρ' on
        q_n, p_n = self.q_cum[n], self.p_cum[n]
        slope = (p_n - self.p_rho) - self.rho * (q_n - self.q_rho)  # Σ (p − ρq) over ρ < ratio
        zero = torch.zeros_like(q_n)
        steep = torch.where(self.g_ok, slope / self.g, zero)
        below = torch.where(self.m_ok, q_n / self.m, zero) - torch.where(n > self.n_rho, steep, zero)
        if self.q_drafted.shape[1]:
            taken = (self.q_drafted * (self.pos_drafted < n[:, None])).sum(1)
            below = below - torch.where(self.m_ok, taken / self.m, zero)
        return below.clamp_min(0.0)


def _sampled_tail(law: _Law, head: torch.Tensor, length: int, samples: int, generator) -> tuple[float, float]:
    """Mean and stderr of the part of P(all rejected) from prefixes with a token outside `head`.

    Sequential importance sampling: x_i ~ w_i(·|prefix)/Z_i, so Σ_prefix Π w_i F = E[Π Z_i F] with
    F = G(ρ_{L+2})/G(ρ_{L+1}); Π Z_i F telescopes to G(ρ_{L+2}), a smooth function of the drafted
    masses, which keeps the variance far below sampling prefixes from the law itself.
    """
    sampler = _RejectedDraws(law.p, law.q, law.order)
    prefix = torch.zeros(samples, 0, dtype=torch.long)
    value = torch.ones(samples, dtype=torch.float64)
    rho, g = law.start(samples)
    for _ in range(length):
        m, rho_next, g_next = law.step(prefix, rho, g)
        x, total = sampler.draw(m, rho, g, prefix, generator)
        value = value * total
        prefix = torch.cat([prefix, x[:, None]], 1)
        rho, g = rho_next, g_next
    value = value * _last_factor(law, prefix, rho, g)
    value = torch.where(torch.isin(prefix, head).all(1), torch.zeros_like(value), value)
    stderr = float(value.std()) / math.sqrt(samples) if samples > 1 else math.inf
    return float(value.mean()), stderr


def _head_size(support: int, length: int, budget: int) -> int:
    """Largest m ≤ support with m!/(m − length)! ≤ budget prefixes."""
    if length == 0 or math.perm(support, length) <= budget:
        return support
    m = max(length, int(budget ** (1.0 / length)))
    while m + 1 <= support and math.perm(m + 1, length) <= budget:
        m += 1
    return m


def rrs_wor_acceptance(
    p: torch.Tensor,
    q: torch.Tensor,
    k: int,
    *,
    generator: torch.Generator,
    samples: int = 256,
    budget: int = MAX_PREFIXES,
) -> Acceptance:
    """P(accept) of rrs_wor with k candidates drawn without replacement from q [V]; p [V] target.

    Exact ("enumeration") whenever the (k−1)-prefixes over supp q number at most `budget` (always
    for k ≤ 2), or when the prefixes left out can carry at most NEGLIGIBLE; otherwise the prefixes
    made of the most likely tokens (at most `budget` of them) are summed exactly and the others
    sampled ("monte_carlo", with the standard error of that part).
    """
    p, q = p.to(torch.float64), q.to(torch.float64)
    if k == 1:  # plain SD
        return Acceptance(float(torch.minimum(p, q).sum()), 0.0, "closed_form")
    support = int((q > 0).sum())
    k_q = min(k, support)
    length = k_q - 1
    law = _Law(p, q, k)
    uniform = _uniform_phase(p, q, k - k_q)
    size = _head_size(support, length, budget)
    head = torch.nonzero(q > 0).squeeze(1) if size == support else torch.topk(q, size).indices  # [m]
    reject = float(_exact_head(law, head, length)) * uniform
    bound = 0.0 if head.shape[0] == support else _tail_bound(q, head, length)
    if bound <= NEGLIGIBLE:
        return Acceptance(min(1.0, max(0.0, 1.0 - reject)), 0.0, "enumeration")
    tail, stderr = _sampled_tail(law, head, length, samples, generator)
    if stderr == 0.0:  # no sampled prefix left the head: use the bound on the estimator's spread
        stderr = math.sqrt(bound / samples)
    return Acceptance(min(1.0, max(0.0, 1.0 - reject - tail * uniform)), stderr * uniform, "monte_carlo")


def _tail_bound(q: torch.Tensor, head: torch.Tensor, length: int) -> float:
    """Upper bound on the sampled part: P(some x_i ∉ head) ≤ Σ_i q(tail) / (1 − q(top i−1 tokens)).

    Each sampled value lies in [0, 1] (Π w_i ≤ Q(prefix), F ≤ 1), so the part is at most this.
    """
    outside = torch.ones_like(q, dtype=torch.bool)
    outside[head] = False
    tail = float(q[outside].sum())
    top = torch.topk(q[head], min(length, head.shape[0])).values  # [L] heaviest head tokens
    left = tail + float(q[head].sum()) - torch.cat([torch.zeros(1, dtype=q.dtype), torch.cumsum(top, 0)])
    return float((tail / left[:length].clamp_min(tail)).sum())
