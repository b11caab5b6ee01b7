"""Gumbel-max list sampling's race: the drafts and the target token from ONE set of shared exponentials, and the
exact joint law of (drafts, target token) (docs/verifiers.md §17).

E is K rows of V i.i.d. Exp(1) variables. Draft k is X_k = argmin_j E[k, j] / q_j, so X_1..X_K are i.i.d. q;
the target token is Y = argmin over (k, j) of E[k, j] / p_j, so Y ~ p (min_k E[k, j] ~ Exp(K) for every j: a
race over j with rates K p_j). GLS accepts iff Y is one of the drafts and always emits Y.

Why a module of its own: the verifier needs P(X = x̄, Y = y) for every y (its exact `conditional`), and that
is a one-dimensional integral over the race's winning time t. With r_j = p_j / q_j and the piecewise-linear
G(u) = Σ_j max(p_j, q_j u) (breakpoints at the r_j, G ≥ 1), one row of the race gives
    f(x, y, t) = P(X = x, Y = y, min_j E_j / p_j ∈ dt) / dt
               = p_y e^{-t G(r_y)}                          (y = x)
               = p_y q_x t ∫_{r_x}^{r_y} e^{-t G(u)} du     (y ≠ x; 0 when r_y ≤ r_x)
    S(x, t)    = P(X = x, min_j E_j / p_j > t) = q_x t ∫_{r_x}^∞ e^{-t G(u)} du,
and the rows are independent, so P(X = x̄, Y = y) = Σ_k ∫_0^∞ f(x_k, y, t) Π_{l≠k} S(x_l, t) dt.
K = 1 integrates in closed form (∫ t e^{-tG} dt = 1/G², and ∫ G⁻² du over a linear piece is Δu / (G_a G_b)),
which gives P(X = Y = y) = 1 / Σ_j max(q_j / q_y, p_j / p_y), the known one-draft (DISD) acceptance.
K ≥ 2 integrates over t by the trapezoid rule in s = log t: every term is a bump e^{s - λ e^s} of the same
width whatever its rate λ, analytic in the strip |Im s| < π/2, so a step h errs by ~e^{-π²/h} (1e-21 at
h = 0.2); the integrand is below 1e-18 outside s ∈ [-42, log(48/K)].
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

F64 = torch.float64
STEP = 0.2  # trapezoid step in s = log t
S_LOW = -42.0  # t = 6e-19: below it the integrand is at most t


def exponentials(generator: torch.Generator, k: int, V: int) -> torch.Tensor:
    """[k, V] i.i.d. Exp(1) from the generator (k * V uniforms, row by row)."""
    u = torch.rand(k, V, generator=generator, dtype=F64)
    return -torch.log1p(-u)


def exponentials_given(generator: torch.Generator, q: torch.Tensor, xs: list[int]) -> torch.Tensor:
    """[K, V] exponentials drawn GIVEN that row k's race on q is won by xs[k] (every q[x] > 0, q normalised).

    Why: the exact law of Y given the drafts is a 1-D integral per token (`joint`, ~0.1-1 s at V = 49152, K = 8);
    drawing Y needs only one sample of E given the drafts, and a race makes that cheap. With T_j = E_j / q_j ~
    Exp(q_j) independent, the winning time M = min_j T_j ~ Exp(Σ q = 1) is independent of the winner, and given
    both, every other T_j is M + a fresh Exp(q_j) (memoryless). So E_j = q_j M + E'_j off the winner, E_x = q_x M,
    and a token with q_j = 0 (never a winner) keeps a fresh Exp(1): O(K V), the cost of drafting itself."""
    E = exponentials(generator, len(xs), q.shape[0])  # [K, V] fresh E'
    M = exponentials(generator, len(xs), 1)  # [K, 1] each row's winning time
    out = torch.where(q[None, :] > 0, q[None, :] * M + E, E)  # [K, V]
    rows = torch.arange(len(xs))
    cols = torch.tensor(xs, dtype=torch.long)
    out[rows, cols] = q[cols] * M[:, 0]
    return out


def target_given(generator: torch.Generator, p: torch.Tensor, q: torch.Tensor, xs: list[int]) -> int:
    """Y = argmin_j Z_j / p_j with Z_j = min_k E[k, j] for E drawn given the drafts (`exponentials_given`'s law),
    each Z_j drawn directly: one exponential per token instead of K (the K x V logarithms were most of a node's
    cost at V = 49152, K = 8).

    Given the winning times M_k, a token j that no row drafted has Z_j = min_k (q_j M_k + E'_kj), whose survival is
    exp(-H(z)) with the convex H(z) = Σ_k (z - q_j M_k)_+ = max_i (i z - q_j S_i), S_i the sum of the i smallest
    M; so Z_j = H^{-1}(e_j) = min_i (e_j + q_j S_i) / i for e_j ~ Exp(1) (q_j = 0 gives e_j / K: Exp(K)). A drafted
    token's rows that drafted it hold q_j M_k exactly; its other rows are drawn one by one."""
    K = len(xs)
    M = exponentials(generator, K, 1)[:, 0]  # [K] each row's winning time
    e = exponentials(generator, 1, p.shape[0])[0]  # [V]
    S = torch.cumsum(torch.sort(M).values, 0).tolist()  # [K]
    z = torch.add(e, q, alpha=S[0])  # [V] the i = 1 piece
    piece = torch.empty_like(z)  # [V] reused: three in-place passes per piece
    for i in range(2, K + 1):
        torch.add(e, q, alpha=S[i - 1], out=piece).mul_(1.0 / i)
        torch.minimum(z, piece, out=z)
    drafted = torch.tensor(list(dict.fromkeys(xs)), dtype=torch.long)  # [D] the drafted tokens, from their rows
    mine = torch.tensor(xs, dtype=torch.long)[:, None] == drafted[None, :]  # [K, D] row k drafted token d
    fresh = exponentials(generator, K, int(drafted.shape[0]))  # [K, D] (unused where mine: independent anyway)
    rows = q[drafted][None, :] * M[:, None] + torch.where(mine, 0.0, fresh)  # [K, D]
    z[drafted] = rows.min(0).values
    return int(torch.argmin(z.div_(p)))  # p = 0: z / 0 = inf, never the winner (z > 0)


def race(E: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """[k] argmin_j E[k, j] / w_j for each row (w_j = 0: never wins)."""
    ratio = torch.where(w > 0, E / w.clamp(min=1e-300), torch.full_like(E, math.inf))  # [k, V]
    return torch.argmin(ratio, dim=-1)


def drafts(E: torch.Tensor, q: torch.Tensor) -> list[int]:
    """The K drafts X_k = argmin_j E[k, j] / q_j, in row order."""
    return [int(x) for x in race(E, q)]


def target(E: torch.Tensor, p: torch.Tensor) -> int:
    """Y = argmin over (k, j) of E[k, j] / p_j: the row minimum first (elementwise over the K rows: a [K, V]
    min-reduction with indices was 100x slower on a loaded CPU), then the race over tokens."""
    low = E[0]
    for row in E[1:]:
        low = torch.minimum(low, row)
    return int(race(low[None, :], p)[0])


@dataclass(frozen=True)
class Breaks:
    """G's breakpoints: the tokens with q > 0 sorted by r = p / q (ties by id), G and its slope there."""

    order: torch.Tensor  # [n] token ids
    r: torch.Tensor  # [n] sorted ratios p/q
    G: torch.Tensor  # [n] G(r_m) = Σ_{i>m} p_(i) + p(q = 0) + r_m Σ_{i≤m} q_(i)
    slope: torch.Tensor  # [n] Σ_{i≤m} q_(i): G's slope on (r_m, r_{m+1})
    pos: torch.Tensor  # [V] each token's index in `order`; n for tokens with q = 0 (r = ∞)

    @classmethod
    def of(cls, p: torch.Tensor, q: torch.Tensor) -> Breaks:
        ids = torch.nonzero(q > 0).flatten()
        r = p[ids] / q[ids]
        r, perm = torch.sort(r, stable=True)
        order = ids[perm]
        ps, qs = p[order], q[order]
        above = torch.flip(torch.cumsum(torch.flip(ps, [0]), 0), [0]) - ps + float(p[q <= 0].sum())  # [n]
        slope = torch.cumsum(qs, 0)  # [n]
        pos = torch.full((p.shape[0],), len(order), dtype=torch.long)
        pos[order] = torch.arange(len(order))
        return cls(order, r, above + r * slope, slope, pos)


def _k1_from(b: Breaks, a: int) -> torch.Tensor:
    """[n+1] ∫_{r_a}^{r_m} G(u)⁻² du at every breakpoint m (0 up to a), then to ∞: sums of positive pieces
    from r_a on, never a difference of two long sums (pieces can be huge where q is tiny)."""
    pieces = (b.r[a + 1:] - b.r[a:-1]) / (b.G[a + 1:] * b.G[a:-1])  # [n-1-a] exact for a linear G
    tail = 1.0 / (b.slope[-1:] * b.G[-1:])  # [1]
    zeros = torch.zeros(a + 1, dtype=F64)
    return torch.cat([zeros, torch.cumsum(torch.cat([pieces, tail]), 0)])


def joint_one(p: torch.Tensor, q: torch.Tensor, x: int, b: Breaks | None = None) -> torch.Tensor:
    """[V] P(X = x, Y = y) for one draft (K = 1), in closed form; sums to q_x."""
    b = Breaks.of(p, q) if b is None else b
    a = int(b.pos[x])
    out = torch.where(b.pos > a, p * float(q[x]) * _k1_from(b, a)[b.pos], torch.zeros_like(p))  # [V] (q = 0: to ∞)
    out[x] = float(p[x]) / float(b.G[a])
    return out


def _s_grid(k: int) -> torch.Tensor:
    """The trapezoid nodes t = e^s, s from S_LOW to log(48 / k) in steps of STEP."""
    n = int(math.ceil((math.log(48.0 / k) - S_LOW) / STEP)) + 1
    return torch.exp(S_LOW + STEP * torch.arange(n, dtype=F64))


def _pieces_at(b: Breaks, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """At times t [T]: t ∫ e^{-tG} du over each piece (r_m, r_{m+1}), then over the tail to ∞ ([T, n]), and
    e^{-t G(r_m)} ([T, n])."""
    tt = t[:, None]  # [T, 1]
    decay = torch.exp(-tt * b.G[None, :])  # [T, n]
    width = (b.r[1:] - b.r[:-1])[None, :]  # [1, n-1]
    pieces = decay[:, :-1] * -torch.expm1(-tt * b.slope[None, :-1] * width) / b.slope[None, :-1]  # [T, n-1]
    return torch.cat([pieces, decay[:, -1:] / b.slope[-1]], 1), decay


def _from(pieces: torch.Tensor, a: int) -> torch.Tensor:
    """[T, n+1] t ∫_{r_a}^{r_m} e^{-tG} du at every breakpoint m (0 up to a), then to ∞: positive sums."""
    zeros = torch.zeros(pieces.shape[0], a + 1, dtype=F64)
    return torch.cat([zeros, torch.cumsum(pieces[:, a:], 1)], 1)


def _chunk(V: int) -> int:
    """t nodes evaluated at once: [T, V] arrays of about a million entries."""
    return max(1, (1 << 20) // max(V, 1))


def joint(p: torch.Tensor, q: torch.Tensor, xs: list[int]) -> torch.Tensor:
    """[V] P(X_1..X_K = xs, Y = y) for K = len(xs) drafts (every q[x] > 0); sums to Π q_x.

    K >= 2 by `_joint_segments` (the same quadrature, its sums regrouped: one [K+1, T] x [T, n] product per chunk
    of t instead of K gathered [T, V] passes); `joint_reference` is the direct sum, kept as the tests' oracle."""
    b = Breaks.of(p, q)
    if len(xs) == 1:
        return joint_one(p, q, xs[0], b)
    return _joint_segments(p, q, xs, b)


def _joint_segments(p: torch.Tensor, q: torch.Tensor, xs: list[int], b: Breaks) -> torch.Tensor:
    """[V] the K >= 2 joint. With C[t, m] = t ∫_{r_0}^{r_m} e^{-tG} du (a cumulative sum of the pieces; m = n: to
    ∞), an undrafted y at position m gets Σ_k [a_k < m] q_{x_k} O_k(t) (C[t, m] - C[t, a_k]) integrated over t,
    O_k the product of the other rows' survivals. The drafts with a_k < m are the first i of them sorted by
    position, the same for every m between two drafts' positions: so out[y] = p_y (R[i, m] - B[i]) with
    R = W C (W[i] the sum of the first i drafts' weights) and B[i] their constant terms. The drafted tokens
    (at most K) are summed directly."""
    n, K = len(b.order), len(xs)
    pos = [int(b.pos[x]) for x in xs]
    ranked = sorted(range(K), key=lambda k: pos[k])  # drafts by position
    R = torch.zeros(K + 1, n + 1, dtype=F64)  # [K+1, n+1]
    B = torch.zeros(K + 1, dtype=F64)  # [K+1]
    drafted = list(dict.fromkeys(xs))
    at_drafted = torch.zeros(len(drafted), dtype=F64)  # [D]
    for chunk in torch.split(_s_grid(K), _chunk(p.shape[0])):
        pieces, decay = _pieces_at(b, chunk)  # [T, n], [T, n]
        C = torch.cat([torch.zeros(chunk.shape[0], 1, dtype=F64), torch.cumsum(pieces, 1)], 1)  # [T, n+1]
        survive = [float(q[x]) * (C[:, n] - C[:, a]) for x, a in zip(xs, pos, strict=True)]  # K of [T]
        weight = [STEP * chunk * float(q[xs[k]]) * _others(survive, k) for k in range(K)]  # K of [T]: dt = t ds
        W = torch.zeros(K + 1, chunk.shape[0], dtype=F64)  # [K+1, T]
        for i, k in enumerate(ranked, start=1):
            W[i:] += weight[k]
            B[i:] += float((weight[k] * C[:, pos[k]]).sum())
        R += W @ C
        for d, y in enumerate(drafted):  # a drafted token: its own rows hit it, the rows below it reach it
            m, total = int(b.pos[y]), torch.zeros_like(chunk)
            for k, (x, a) in enumerate(zip(xs, pos, strict=True)):
                if x == y:
                    total += STEP * chunk * decay[:, a] * _others(survive, k)
                elif a < m:
                    total += weight[k] * (C[:, m] - C[:, a])
            at_drafted[d] += float(total.sum())
    below = torch.searchsorted(torch.tensor(sorted(pos), dtype=torch.long), b.pos, right=False)  # [V] drafts below
    out = p * (R[below, b.pos] - B[below])  # [V]
    out[drafted] = p[drafted] * at_drafted
    return out


def _others(survive: list[torch.Tensor], k: int) -> torch.Tensor:
    """[T] Π_{l≠k} survive[l]."""
    out = torch.ones_like(survive[0])
    for l, s in enumerate(survive):
        if l != k:
            out = out * s
    return out


def joint_reference(p: torch.Tensor, q: torch.Tensor, xs: list[int]) -> torch.Tensor:
    """[V] the K >= 2 joint as the direct sum over drafts and t (the tests' oracle for `_joint_segments`)."""
    b = Breaks.of(p, q)
    out = torch.zeros_like(p)
    for chunk in torch.split(_s_grid(len(xs)), _chunk(p.shape[0])):
        out += STEP * (chunk[:, None] * _density(p, q, xs, b, chunk)).sum(0)  # dt = t ds
    return out


def _density(p: torch.Tensor, q: torch.Tensor, xs: list[int], b: Breaks, t: torch.Tensor) -> torch.Tensor:
    """[T, V] Σ_k f(x_k, y, t) Π_{l≠k} S(x_l, t) at times t [T]."""
    pieces, decay = _pieces_at(b, t)  # [T, n], [T, n]
    pos = [int(b.pos[x]) for x in xs]
    froms = {a: _from(pieces, a) for a in set(pos)}  # [T, n+1] per draft position
    survive = [float(q[x]) * froms[a][:, -1] for x, a in zip(xs, pos, strict=True)]  # K of [T]
    out = torch.zeros(t.shape[0], p.shape[0], dtype=F64)
    for k, (x, a) in enumerate(zip(xs, pos, strict=True)):
        f = torch.where(b.pos[None, :] > a, p[None, :] * float(q[x]) * froms[a][:, b.pos], 0.0)  # [T, V]
        f[:, x] = float(p[x]) * decay[:, a]
        others = torch.ones_like(t)
        for l, s in enumerate(survive):
            if l != k:
                others = others * s
        out += f * others[:, None]
    return out


def acceptance(p: torch.Tensor, q: torch.Tensor, k: int) -> float:
    """P(Y ∈ {X_1..X_K}). K = 1: Σ_y p_y / G(r_y) = Σ_y 1 / Σ_j max(q_j/q_y, p_j/p_y). K ≥ 2: 1 − Σ_y of
    P(Y = y, no draft is y) = K ∫ p_y (e^{-t} − e^{-t G(r_y)}) (e^{-t} − S(y, t))^{K-1} dt (the winning row's
    draft is not y, nor is any other row's), by the same trapezoid rule."""
    b = Breaks.of(p, q)
    hit = p[b.order] / b.G  # [n] P(X = Y = y) for one row
    if k == 1:
        return float(hit.sum())
    reject, qo, po = 0.0, q[b.order][None, :], p[b.order][None, :]  # [1, n]
    for chunk in torch.split(_s_grid(k), _chunk(p.shape[0])):
        pieces, decay = _pieces_at(b, chunk)  # [T, n], [T, n]
        after = torch.flip(torch.cumsum(torch.flip(pieces, [1]), 1), [1])  # [T, n] t ∫_{r_m}^∞ e^{-tG}: positive
        e = torch.exp(-chunk)[:, None]  # [T, 1]
        dens = k * po * (e - decay) * (e - qo * after) ** (k - 1)  # [T, n] for y = order[m]
        reject += STEP * float((chunk[:, None] * dens).sum())
    never = float(p[q <= 0].sum())  # tokens no draft can be
    return 1.0 - reject - never
