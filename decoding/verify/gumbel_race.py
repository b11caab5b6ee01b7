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
    """[V] P(X_1..X_K = xs, Y = y) for K = len(xs) drafts (every q[x] > 0); sums to Π q_x."""
    b = Breaks.of(p, q)
    if len(xs) == 1:
        return joint_one(p, q, xs[0], b)
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
