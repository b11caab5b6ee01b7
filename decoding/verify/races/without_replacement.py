"""The without-replacement law at any vocabulary size, through the exponential race (docs/verifiers.md §7.1).

Drawing k tokens without replacement from q is the same as giving each token x an arrival time
E_x ~ Exp(q(x)) and keeping the first k arrivals. With z_x(t) = e^{q(x) t} − 1 and e_m the m-th
elementary symmetric polynomial, P(fewer than k of Y arrived by t) = e^{−q(Y) t} Σ_{m<k} e_m(z_Y(t)),
and because the rates add up to 1:

    1 − Q(x̄ ⊆ Y) = (1 − q(Y)) · I(Y),      P(x ∈ x̄) = q(x) · I(V ∖ {x}),
    I(Y) = ∫_0^∞ e^{−t} Σ_{m<k} e_m(z_Y(t)) dt = 1 + Σ_{y∈Y} q(y)/(1 − q(y)) + Σ_{2≤m<k} J_m(Y).

The m ≤ 1 terms are exact; J_m (m ≥ 2, so only k ≥ 3) is a trapezoid rule in u = log t, whose
error falls like exp(−π²/h) for these integrands (every term is a sum of e^{−c t}). The top-(k−1)
tokens H are expanded by hand (see _heavy); for the others the e_m of all prefixes come from
cumulative sums e_m(first i tokens) = Σ_{j≤i} z_j e_{m−1}(first j−1 tokens) of positive terms.
Speed (this runs for every recorded node): the quadrature weights are applied to the increments
before the prefix sum (one matrix product per level instead of a [U, V] prefix matrix per level and
subset of H), and the tokens go by cache-sized blocks whose lower levels carry over (_increments).
Tokens with q = 0 never arrive; laws.py then draws uniformly among them once supp q is used up,
and the callers handle that case (k > |supp q|) in closed form.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import torch

STEP = 0.3  # trapezoid step in log t: measured error ≤ 5e-12 against enumeration (tests)
T_LOW = 1e-5  # J_m, m ≥ 2, loses less than T_LOW^3 below this t
DECAY = 45.0  # integrate until e^{−c t} < e^{−DECAY} for the slowest rate c
U_CHUNK = 64  # quadrature nodes processed at once
BLOCK = 2048  # prefix tokens processed at once: [U_CHUNK, BLOCK] temporaries stay in cache
UNSCALED_EXPONENT = 600.0  # z is left unscaled while (n e^DECAY)^(k−1) < e^UNSCALED_EXPONENT (float64: e^709)


def _others(q: torch.Tensor) -> torch.Tensor:
    """1 − q(x) [V], with the top token's complement summed from the small masses (no cancellation)."""
    out = 1.0 - q
    if q.shape[0] > 1:
        top = int(torch.argmax(q))
        rest = torch.ones_like(q, dtype=torch.bool)
        rest[top] = False
        out[top] = q[rest].sum()
    return out


def _odds(q: torch.Tensor) -> torch.Tensor:
    """q/(1 − q) [V] = ∫ e^{−t} z(t) dt, the exact m = 1 term."""
    return q / _others(q)


def _grid(q: torch.Tensor, heavy: torch.Tensor) -> tuple[torch.Tensor, float]:
    """Quadrature nodes t [U] (log-spaced) and step h, spanning the slowest decay e^{−(1 − q(H)) t}."""
    rest = torch.ones_like(q, dtype=torch.bool)
    rest[heavy] = False
    slowest = float(q[rest].sum())  # 1 − q(H), summed from the small masses; > 0 when |supp q| ≥ k
    u_lo, u_hi = math.log(T_LOW), math.log(DECAY / max(slowest, 1e-300))
    n = int(math.ceil((u_hi - u_lo) / STEP)) + 1
    return torch.exp(torch.linspace(u_lo, u_lo + (n - 1) * STEP, n, dtype=torch.float64)), STEP


def _heavy(q: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The top-(k−1) tokens H (indices) and a mask of the others.

    Every term of e^{−t} e_m(z) decays like e^{−(1 − q(A)) t}, |A| = m < k. Computing −t + q(A) t
    directly loses all precision when q(A) ≈ 1, which only happens through the heaviest tokens;
    so the terms with tokens of H are expanded by hand with 1 − q(B) summed from the other masses.
    """
    heavy = torch.topk(q, min(k - 1, q.shape[0])).indices
    rest = torch.ones_like(q, dtype=torch.bool)
    rest[heavy] = False
    return heavy, rest


def _subsets(q: torch.Tensor, heavy: torch.Tensor, rest: torch.Tensor, t: torch.Tensor, h: float):
    """For every B ⊆ H: (members of B, log of h t e^{−(1 − q(B)) t} Π_{x∈B} (1 − e^{−q(x) t}) [U])."""
    rest_mass = float(q[rest].sum())
    members = [int(x) for x in heavy]
    out = []
    for size in range(len(members) + 1):
        for B in itertools.combinations(members, size):
            outside = rest_mass + sum(float(q[x]) for x in members if x not in B)  # 1 − q(B)
            log_w = math.log(h) + torch.log(t) - outside * t
            for x in B:
                log_w = log_w + torch.log(-torch.expm1(-float(q[x]) * t))
            out.append((B, log_w))
    return out


def _scaled_z(q: torch.Tensor, rest: torch.Tensor, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """z/s [U, n] on the rest tokens (0 on H) and log s [U], s = Σ_rest z, z = e^{q t} − 1.

    No overflow: a rest token has q ≤ q(rest) and t ≤ DECAY/q(rest), so q t ≤ DECAY. Scaling by s
    keeps e_j(z/s) ≤ 1/j! for every j; e_j(z) = s^j e_j(z/s).
    """
    z = torch.expm1(t[:, None] * q[None, :]).masked_fill(~rest[None, :], 0.0)
    s = z.sum(1, keepdim=True).clamp_min(1e-300)
    return z / s, torch.log(s[:, 0])


def _esp_prefixes(z: torch.Tensor, m_max: int) -> list[torch.Tensor]:
    """e_m over the first i tokens, i = 0..n, m = 0..m_max: a list of [U, n+1] (exclusive prefixes).

    e_m(first i+1) = Σ_{l≤i} z_l e_{m−1}(first l): one cumulative sum of positive terms per m.
    """
    U = z.shape[0]
    out = [torch.ones(U, z.shape[1] + 1, dtype=z.dtype)]
    for _ in range(m_max):
        cur = torch.cumsum(z * out[-1][:, :-1], dim=1)  # [U, n]
        out.append(torch.cat([torch.zeros(U, 1, dtype=z.dtype), cur], dim=1))
    return out


def _contract(log_w: torch.Tensor, e: torch.Tensor, top: torch.Tensor) -> torch.Tensor:
    """Σ_u e^{log_w[u]} e[u, i] [n], computed as (e^{log_w} top) @ (e / top) so no factor overflows."""
    weight = torch.exp(log_w + torch.log(top))  # [U]; 0 where top = 0
    return weight @ (e / top.clamp_min(1e-300)[:, None])


def _level_weights(q, heavy, rest, t, h, k, log_s):
    """Weights of e_j(rest ∩ Y) per level j: {j: [(first, weight [U])]}, one row per (B, m), j = m − |B|.

    `first` is the first prefix index whose prefix holds B; log_s [U] undoes z's row scale (0 if none).
    """
    levels: dict[int, list[tuple[int, torch.Tensor]]] = {j: [] for j in range(k)}
    for B, log_w in _subsets(q, heavy, rest, t, h):
        first = max(B) if B else 0  # prefixes from here on contain B
        for m in range(max(2, len(B)), k):
            j = m - len(B)
            levels[j].append((first, torch.exp(log_w + j * log_s)))
    return levels


def _stacked(rows: list[tuple[int, torch.Tensor]]) -> torch.Tensor:
    return torch.stack([w for _, w in rows])  # [r, U]


def _higher_terms_prefixes(q: torch.Tensor, k: int, stop: int | None = None, start: int = 0) -> torch.Tensor:
    """Σ_{2≤m<k} J_m(first i+1 tokens) for i = start..stop−1, in a [stop] tensor whose entries before
    `start` may be left at 0  (q: the arriving tokens, in prefix order).

    e_m(Y) = Σ_{B ⊆ H∩Y} Π_{x∈B} z_x · e_{m−|B|}(Y ∖ H); the rest's e_j come from one recursion
    over the first `stop` tokens (all by default) with the heavy ones zeroed, so no re-indexing is
    needed. The grid and H depend on all of q, so a prefix's value does not depend on start or stop.
    """
    n = q.shape[0] if stop is None else stop
    heavy, rest = _heavy(q, k)
    t_all, h = _grid(q, heavy)
    q_rest = q.masked_fill(~rest, 0.0)[:n]  # [n]
    skip = (min(start, n) // BLOCK) * BLOCK  # whole blocks before `start` only feed the sums
    total = torch.zeros(n, dtype=q.dtype)
    for t in torch.split(t_all, U_CHUNK):
        log_s = _row_scale(q_rest, t, n, k)  # [U]
        levels = _level_weights(q, heavy, rest, t, h, k, log_s)
        for first, w in levels.pop(0):
            total[first:] += float(w.sum())
        weights = {j: _stacked(rows) for j, rows in levels.items() if rows}
        increments, before = _increments(q_rest, t, log_s, weights, k, skip)
        for j, rows in levels.items():
            if rows:  # Σ_u w e_j[u, i] for i ≥ first: the prefix sums of the contracted increments
                sums = torch.cumsum(increments[j], dim=1) + before[j][:, None]  # [r, n − skip]
                for (first, _), row in zip(rows, sums, strict=True):
                    lo = max(first, skip)
                    total[lo:] += row[lo - skip :]
    return total


def _row_scale(q_rest: torch.Tensor, t: torch.Tensor, n: int, k: int) -> torch.Tensor:
    """log c [U]: z is divided by c so that e_j(z/c) stays finite; c = 1 unless (n e^DECAY)^(k−1) could overflow.

    The fallback c = e^{q_max t} − 1 bounds every rest z, so e_j(z/c) ≤ C(n, j).
    """
    if (k - 1) * (math.log(max(n, 1)) + DECAY) < UNSCALED_EXPONENT:
        return torch.zeros_like(t)
    top = float(q_rest.max()) if n else 0.0
    return torch.log(torch.expm1(top * t).clamp_min(1e-300))


def _increments(q_rest, t, log_s, weights: dict[int, torch.Tensor], k: int, skip: int = 0):
    """({j: W_j @ d_j} [r_j, n − skip] for the tokens from `skip` on, {j: Σ of W_j @ d_j over the
    tokens before `skip`} [r_j]): the level-j increments d_j[:, l] = z_l e_{j−1}(first l rest tokens), contracted.

    The tokens go by blocks of BLOCK so the [U, BLOCK] temporaries stay in cache. Inside a block
    e_{j−1}(before l) = Σ_a C_a e_{j−1−a}(block tokens before l), C_a = e_a(earlier blocks), so
    W_j @ d_j = Σ_b (W_j C_{j−1−b}) @ X_b with X_b[:, l] = z_l e_b(block tokens before l): one product
    per b. A block before `skip` needs only Σ_l X_b[:, l] = e_{b+1}(block). All terms are positive.
    """
    n, U = q_rest.shape[0], t.shape[0]
    out = {j: torch.empty(w.shape[0], n - skip, dtype=t.dtype) for j, w in weights.items()}
    before = {j: torch.zeros(w.shape[0], dtype=t.dtype) for j, w in weights.items()}
    carry = [torch.ones(U, dtype=t.dtype)] + [torch.zeros(U, dtype=t.dtype) for _ in range(k - 2)]  # C_a
    scale = torch.exp(-log_s)[:, None]  # [U, 1]
    for lo in range(0, n, BLOCK):
        z = torch.outer(t, q_rest[lo : lo + BLOCK])  # [U, w]
        np.expm1(z.numpy(), out=z.numpy())  # numpy's expm1 is vectorised, about twice torch's speed
        if bool(log_s.any()):
            z.mul_(scale)
        if lo < skip:
            sums = _block_sums(z, k)  # e_0..e_{k−1}(block) [U] each
            for j, w in weights.items():
                before[j] += sum((w * carry[j - 1 - b][None, :]) @ sums[b + 1] for b in range(j))
        else:
            xs, sums = _block_levels(z, k)
            for j, w in weights.items():
                out[j][:, lo - skip : lo - skip + z.shape[1]] = sum(
                    (w * carry[j - 1 - b][None, :]) @ xs[b] for b in range(j)
                )
        carry = [sum(carry[c] * sums[a - c] for c in range(a + 1)) for a in range(k - 1)]
    return out, before


def _block_levels(z: torch.Tensor, k: int) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """X_b [U, w] for b = 0..k−2 (X_0 = z) and the block's e_b [U] (e_0 = 1), b = 0..k−2."""
    xs, sums = [z], [torch.ones(z.shape[0], dtype=z.dtype)]
    for _ in range(1, k - 1):
        inclusive = torch.cumsum(xs[-1], dim=1)  # e_b(block tokens up to l) [U, w]
        x = torch.empty_like(z)
        x[:, 0] = 0.0
        torch.mul(z[:, 1:], inclusive[:, :-1], out=x[:, 1:])
        xs.append(x)
        sums.append(inclusive[:, -1])
    return xs, sums


def _block_sums(z: torch.Tensor, k: int) -> list[torch.Tensor]:
    """The block's e_b [U] for b = 0..k−1; the last one as a row-wise dot product, never written out."""
    x, sums = z, [torch.ones(z.shape[0], dtype=z.dtype)]
    for b in range(1, k - 1):
        inclusive = torch.cumsum(x, dim=1)  # e_b(block tokens up to l) [U, w]
        sums.append(inclusive[:, -1])
        if b < k - 2:
            x = torch.nn.functional.pad(z[:, 1:] * inclusive[:, :-1], (1, 0))  # X_b
    sums.append(torch.einsum("uw,uw->u", z[:, 1:], inclusive[:, :-1]))  # Σ_l z_l e_{k−2}(before l)
    return sums


def wor_miss_prefixes(q_ordered: torch.Tensor, k: int, stop: int | None = None, start: int = 0) -> torch.Tensor:
    """1 − Q_wo(x̄ ⊆ Y_j) [stop+1] for the prefixes Y_j = first j tokens of `q_ordered`, j = 0..stop
    (stop = V by default), k ≤ |supp q|. Prefixes before `start` are not computed: 1.0 (an upper bound)."""
    V = q_ordered.shape[0]
    stop = V if stop is None else stop
    outside = torch.flip(torch.cumsum(torch.flip(q_ordered, [0]), 0), [0])
    outside = torch.cat([outside, torch.zeros(1, dtype=q_ordered.dtype)]).clamp(0.0, 1.0)[: stop + 1]  # [stop+1]
    if k == 1:
        return outside
    nz = q_ordered > 0
    qs = q_ordered[nz]  # [s] tokens that can arrive, in prefix order
    count = torch.cumsum(nz[:stop].long(), 0)  # [stop] arriving tokens in each non-empty prefix
    arriving = int(count[-1]) if stop > 0 else 0
    inside = 1.0 + torch.cumsum(_odds(qs)[:arriving], 0)  # [a] I(Y) up to m = 1
    if k >= 3:
        first = max(int(count[start - 1]) - 1, 0) if 0 < start <= stop else 0  # first arriving index needed
        inside = inside + _higher_terms_prefixes(qs, k, stop=arriving, start=first)
    integral = torch.ones(stop + 1, dtype=torch.float64)
    has = count > 0
    integral[1:][has] = inside[count[has] - 1]
    miss = outside * integral
    miss[1:][count < k] = 1.0  # fewer than k possible arrivals inside Y: some candidate lies outside
    miss[:start] = 1.0
    return miss.clamp(0.0, 1.0)


def _leave_one_out_higher(q: torch.Tensor, k: int) -> torch.Tensor:
    """Σ_{2≤m<k} J_m(V ∖ {x}) [s].

    For x outside H: e_j(rest ∖ x) = e_j(rest) − z_x e_{j−1}(rest ∖ x). x is then never heavier than
    a token of H, so each subtraction loses at most a few ulps of the integral (the terms it removes
    are matched by terms with an H token in x's place). For x in H: the subsets B that leave x out.
    """
    heavy, rest = _heavy(q, k)
    t_all, h = _grid(q, heavy)
    q_rest = q[rest]
    every = torch.ones_like(q_rest, dtype=torch.bool)
    total = torch.zeros_like(q)
    total_rest = torch.zeros_like(q_rest)
    for t in torch.split(t_all, U_CHUNK):
        z, log_s = _scaled_z(q_rest, every, t)  # [U, n], [U]
        full = [e[:, -1] for e in _esp_prefixes(z, k - 1)]  # e_j(rest) [U]
        without = [torch.ones_like(z)]
        for j in range(1, k):
            without.append((full[j][:, None] - z * without[-1]).clamp_min(0.0))  # e_j(rest ∖ x) [U, n]
        for B, log_w in _subsets(q, heavy, rest, t, h):
            for m in range(max(2, len(B)), k):
                j = m - len(B)
                log_wj = log_w + j * log_s
                total_rest += _contract(log_wj, without[j], full[j])
                for x in heavy.tolist():
                    if x not in B:
                        total[x] += float(torch.exp(log_wj + torch.log(full[j])).sum())
    total[rest] = total_rest
    return total


def wor_inclusion(q: torch.Tensor, k: int) -> torch.Tensor:
    """P(x ∈ x̄) [V] for k draws without replacement from q (uniform fallback once supp q is used up)."""
    V = q.shape[0]
    nz = q > 0
    support = int(nz.sum())
    if k == 1:
        return q.clone()
    if k >= support:
        pi = torch.zeros_like(q)
        pi[nz] = 1.0
        if V > support:
            pi[~nz] = (k - support) / (V - support)
        return pi
    qs = q[nz]
    odds = _odds(qs)
    odds_without = (odds.sum() - odds).clamp_min(0.0)  # Σ_{y≠x} q/(1−q)
    top = int(torch.argmax(qs))
    odds_without[top] = torch.cat([odds[:top], odds[top + 1 :]]).sum()  # no cancellation at q(top) ≈ 1
    inside = 1.0 + odds_without
    if k >= 3:
        inside = inside + _leave_one_out_higher(qs, k)
    pi = torch.zeros_like(q)
    pi[nz] = (qs * inside).clamp(0.0, 1.0)
    return pi
