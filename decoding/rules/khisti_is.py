"""Importance-sampling selection + SD (Khisti et al., ICLR 2025, canonical form), VERIFIERS.md §7.2.

k i.i.d. candidates x_1..x_k ~ q. Step 1 (SIR) selects one index with probability proportional to
its weight w(x_i) = p(x_i)/q(x_i). Step 2 is single-draft SD of the selected token y against p,
where the draft law is the law y actually has, the induced law
    r(y) = sum over tuples Q(x) beta(y | x) = k q(y) E[w(y) / (w(y) + S)],  S = sum of k-1 i.i.d. w(X), X ~ q,
so: accept y if u <= p(y)/r(y), else emit norm((p - r)_+). Lossless for any selection rule once r is
its exact induced law; alpha = sum_y min(p(y), r(y)).

Computing r (no Monte Carlo):
- small support (n^k <= ENUMERATION_LIMIT, n = |supp q|): exact enumeration of every tuple, vectorised.
- otherwise a 1-D integral: a/(a+S) = int_0^inf a e^{-t(a+S)} dt, so with M(t) = E_q[e^{-t w(X)}]
      E[a/(a+S)] = P(S=0) + int_0^inf a e^{-ta} (M(t)^{k-1} - P(S=0)) dt.
  The integrand is smooth and bell-shaped in tau = log t, so the trapezoid rule in tau with step 0.3
  converges geometrically (error ~ e^{-pi^2/0.3} ~ 1e-14); the grid spans every token's bump. All
  e^{-t w} are evaluated by binning tokens on log w (width 0.05) and expanding e^{-t w} around each
  bin centre to 10 Taylor terms (e^{-y} (y sigma)^j / j! <= sigma^j / sqrt(2 pi j), |sigma| <= 0.026),
  so the cost is a few [T, bins] passes and 10 [V] passes instead of V x T exponentials.
  Checked against enumeration and against the direct V x T quadrature in tests/test_verifiers_khisti.py
  (agreement ~1e-13); the total of r is renormalised to 1 (it is 1 up to that error before).

Conventions, applied identically by the selection and by both law computations:
- weights w <= W_LO (1e-14) count as 0 (their tokens carry under 1e-14 of p relative to q);
- when every candidate has weight 0 the first candidate is selected;
- weights above W_HI (1e16) are selected whenever drafted (E[w/(w+S)] = 1 up to (k-1)/w < 1e-15).
Numerics: q(x) = 0 gives weight 0 and r(x) = 0, so such a candidate is never accepted (threshold 0).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import replace

import torch

from decoding.rules.common import Event, Final, Test, Update, final_residual, prepare, run_chain
from decoding.sampling import draw, positive_part
from decoding.verdict import NodeVerdict

W_LO = 1e-14
W_HI = 1e16
ENUMERATION_LIMIT = 20_000  # tuples
STEP = 0.3  # trapezoid step in log t
BIN = 0.05  # bin width in log w
TERMS = 10  # Taylor terms in sigma = w/c - 1: the dropped e^{-y} (y sigma)^10/10! <= sigma^10/8 ~ 1e-17
Y_MAX = 40.0  # e^{-t c} below e^{-40} is dropped
T_LO = 1e-17  # the grid starts where a t <= 1e-17 for every weight a
FACTORIALS = torch.tensor([math.factorial(j) for j in range(TERMS)], dtype=torch.float64)


def sir_weights(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """[V] importance weights w = p/q on supp q (0 elsewhere and below W_LO), capped to stay finite."""
    w = torch.where(q > 0, p / q.clamp(min=torch.finfo(torch.float64).tiny), torch.zeros_like(p))
    return w.masked_fill(w <= W_LO, 0.0).clamp(max=1e300)


def selection(weights: torch.Tensor) -> torch.Tensor:
    """[k] SIR selection probabilities for candidate weights [k]; the first when all are 0."""
    total = float(weights.sum())
    if total > 0:
        return weights / total
    first = torch.zeros_like(weights)
    first[0] = 1.0
    return first


def induced_law(p: torch.Tensor, q: torch.Tensor, k: int, method: str = "auto") -> torch.Tensor:
    """[V] law of the SIR-selected token over k i.i.d. draws from q (p, q float64, normalised).

    method: "auto", "enumerate" (exact, small support only) or "integrate" (any size).
    """
    if k == 1:
        return q.clone()
    w = sir_weights(p, q)
    n = int((q > 0).sum())
    if method == "enumerate" or (method == "auto" and n**k <= ENUMERATION_LIMIT):
        return _enumerated_law(q, w, k)
    r = integrated_law(q, w, k)
    return r / r.sum()


def _enumerated_law(q: torch.Tensor, w: torch.Tensor, k: int) -> torch.Tensor:
    support = torch.nonzero(q > 0).flatten()  # [n]
    grid = torch.cartesian_prod(*[torch.arange(support.numel())] * k).reshape(-1, k)  # [n^k, k]
    tuples = support[grid]  # [N, k] token ids
    prob = q[tuples].prod(dim=1)  # [N] Q(tuple)
    weights = w[tuples]  # [N, k]
    total = weights.sum(dim=1, keepdim=True)  # [N, 1]
    first = torch.zeros_like(weights)
    first[:, 0] = 1.0
    select = torch.where(total > 0, weights / total.clamp(min=1e-300), first)  # [N, k]
    mass = (prob[:, None] * select).reshape(-1)  # [N k]
    return torch.zeros_like(q).index_add_(0, tuples.reshape(-1), mass)


def integrated_law(q: torch.Tensor, w: torch.Tensor, k: int) -> torch.Tensor:
    """[V] the induced law by the 1-D integral (not renormalised: its total checks the accuracy)."""
    zero = (q > 0) & (w == 0)
    mid = (w > 0) & (w <= W_HI)
    z = float(q.masked_fill(~zero, 0.0).sum())  # q-mass of weight-0 tokens
    g_inf = z ** (k - 1)  # P(S = 0): the k-1 other draws all weigh 0
    r = q * (g_inf * zero.double() + k * (w > W_HI).double())  # [V] all-zero tuples; w > W_HI: always
    if bool(mid.any()):
        qm = q * mid.double()  # [V]
        r = r + k * qm * selection_ratio(qm, w, mid, z, k)
    return r


def selection_ratio(qm: torch.Tensor, w: torch.Tensor, mid: torch.Tensor, z: float, k: int) -> torch.Tensor:
    """[V] E[a/(a+S)] at each token's weight a = w (meaningful where `mid`; qm = q there, 0 elsewhere)."""
    log_w = torch.log(w.masked_fill(~mid, 1.0))  # [V] placeholders off `mid` carry no mass
    lo = float(log_w.masked_fill(~mid, math.inf).min())
    hi = float(log_w.masked_fill(~mid, -math.inf).max())
    bins = max(1, math.ceil((hi - lo) / BIN))
    b = ((log_w - lo) / BIN).floor().long().clamp(0, bins - 1)  # [V] bin of each token
    log_c = lo + (torch.arange(bins, dtype=torch.float64) + 0.5) * BIN  # [bins] log bin centres
    sigma = torch.expm1(log_w - log_c.index_select(0, b))  # [V] w/c - 1, small where `mid`
    y, e = _grid(lo, hi, log_c)  # [T, bins] t c and e^{-t c}, zero past Y_MAX
    laplace = z + (e * _taylor_sum(_bin_moments(qm, sigma, b, bins), -y)).sum(dim=1)  # [T] M(t)
    g_inf = z ** (k - 1)
    weight = STEP * (laplace ** (k - 1) - g_inf)  # [T] trapezoid weight x (G(t) - G(inf))
    coeff = _bump_coefficients(weight[:, None] * y * e, -y)  # [TERMS, bins]
    poly = coeff[TERMS - 1].index_select(0, b)  # [V] Horner in sigma, one bin row per token
    for j in range(TERMS - 2, -1, -1):
        poly = torch.addcmul(coeff[j].index_select(0, b), poly, sigma)
    return g_inf + (1.0 + sigma) * poly


def _bin_moments(qm: torch.Tensor, sigma: torch.Tensor, b: torch.Tensor, bins: int) -> torch.Tensor:
    """[bins, TERMS] m[b, j] = sum over the bin's tokens of q sigma^j / j!."""
    out = torch.empty(bins, TERMS, dtype=torch.float64)
    term = qm
    for j in range(TERMS):
        out[:, j] = torch.bincount(b, weights=term, minlength=bins)
        term = term * sigma
    return out / FACTORIALS


def _grid(lo: float, hi: float, log_c: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """y = t c [T, bins] on the log t nodes, from a t <= T_LO for the largest weight to t a >= 40 for
    the smallest, and e^{-y}; both zeroed where y > Y_MAX (those terms are below e^{-39})."""
    start, stop = math.log(T_LO) - hi, math.log(Y_MAX) - lo
    log_t = start + STEP * torch.arange(math.ceil((stop - start) / STEP) + 1, dtype=torch.float64)  # [T]
    y = torch.exp(log_t[:, None] + log_c[None, :])
    y = y.masked_fill(y > Y_MAX, 0.0)
    e = torch.exp(-y).masked_fill(y == 0.0, 0.0)
    return y, e


def _taylor_sum(moments: torch.Tensor, neg_y: torch.Tensor) -> torch.Tensor:
    """[T, bins] sum_j moments[b, j] (-y)^j (Horner) = sum over the bin of q e^{-y sigma}."""
    acc = moments[:, TERMS - 1].expand_as(neg_y)
    for j in range(TERMS - 2, -1, -1):
        acc = torch.addcmul(moments[:, j], acc, neg_y)
    return acc


def _bump_coefficients(f: torch.Tensor, neg_y: torch.Tensor) -> torch.Tensor:
    """[TERMS, bins] C[j, b] = sum_t f[t, b] (-y)^j / j!: the bump t a e^{-t a} expanded in sigma."""
    out = torch.empty(TERMS, neg_y.shape[1], dtype=torch.float64)
    term = f
    for j in range(TERMS):
        out[j] = term.sum(dim=0) / math.factorial(j)
        term = term * neg_y
    return out


def _sd_test(p: torch.Tensor, xs: Sequence[int], chosen: int, law: torch.Tensor) -> Test:
    y = xs[chosen]
    return Test(chosen, y, float(p[y]), float(law[y]), "p(y)/r_beta(y)")


def _chain(p: torch.Tensor, xs: Sequence[int], chosen: int, law: torch.Tensor) -> Iterator[Event]:
    yield _sd_test(p, xs, chosen, law)
    r = final_residual(positive_part(p - law), p)  # [V] SD residual against the induced law
    yield Update(r)
    yield Final(r)


def verify(p: torch.Tensor, q: torch.Tensor, candidates: Sequence[int], generator: torch.Generator) -> NodeVerdict:
    """Select one candidate by importance weight p/q, then SD of it against its induced law r."""
    p, q, xs = prepare(p, q, candidates)
    beta = selection(sir_weights(p, q)[xs])  # [k]
    chosen = draw(beta, generator)
    law = induced_law(p, q, len(xs))  # [V]
    verdict = run_chain(_chain(p, xs, chosen, law), xs, generator)
    note = f"SIR selected candidate {chosen} (token {xs[chosen]}) with probability {float(beta[chosen]):.6g}"
    return replace(verdict, notes=(note,) + verdict.notes)


def conditional(p: torch.Tensor, q: torch.Tensor, candidates: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """accept[i] = beta_i min(1, p(x_i)/r(x_i)); residual = norm((p - r)_+) [V]."""
    p, q, xs = prepare(p, q, candidates)
    beta = selection(sir_weights(p, q)[xs])  # [k]
    law = induced_law(p, q, len(xs))  # [V]
    passes = torch.tensor([_sd_test(p, xs, i, law).probability for i in range(len(xs))], dtype=torch.float64)
    accept = beta * passes  # [k]
    if float(accept.sum()) >= 1.0:
        return accept, torch.zeros_like(p)
    return accept, final_residual(positive_part(p - law), p)
