"""Importance-sampling selection + SD (Khisti et al., ICLR 2025, canonical form), docs/verifiers.md §7.2.

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
  e^{-t w} are evaluated by binning tokens on log w (width 0.0375, on one global lattice) and expanding
  e^{-t w} around each bin centre to 9 Taylor terms (e^{-y} (y sigma)^j / j! <= sigma^j / sqrt(2 pi j),
  |sigma| <= 0.019), so the cost is 9 [V] scatter passes and a few [T, bins] contractions instead of
  V x T exponentials. The trapezoid step is exactly 8 bins and the bins sit on a fixed lattice, so t c
  lies on ONE geometric 1-D grid that is a slice of constant tables, and both [T, bins] contractions (the
  Laplace transform, the bump coefficients) are correlations, done by FFT.
  Speed (bench verifiers, V = 49152, k = 8: the fit is done afresh for every node): tokens are placed
  with float32 logs (a placement error only moves a token to a neighbouring bin; sigma = w/c - 1 is then
  computed from w itself), the full [V] law reuses the fit's bins and sigmas, and the [V] work is done
  in place where a fresh tensor is not needed.
  Checked against enumeration and against the direct V x T quadrature in tests/verify/test_verifiers_khisti.py
  (agreement ~1e-13; the total of r, exactly 1 for the true law, is 1 within 1e-12). The fit is done
  once per node; the accept test evaluates r at the selected token only (in Python floats, rounding
  exactly as the full law's separate multiplies and adds do: the same number bit for bit), the whole
  [V] law is built only when the residual is needed.

Conventions, applied identically by the selection and by both law computations (so they define a
slightly different, equally lossless selection rule rather than an approximation):
- weights w <= W_LO (1e-14) count as 0, capped at 1e300 above;
- when every candidate has weight 0 the first candidate is selected.
The one approximation besides quadrature: in the integral, a weight above W_HI (1e16) is selected
whenever drafted (E[w/(w+S)] = 1 up to (k-1)/w < 1e-15; such tokens have q < 1e-16).
Numerics: q(x) = 0 gives weight 0 and r(x) = 0, so such a candidate is never accepted (threshold 0).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from functools import partial
from typing import NamedTuple

import torch

from decoding.verify.rules.common import Event, Final, Test, Update, normalised_residual_, prepare, run_chain
from decoding.verify.rules.node_cache import NodeCache
from decoding.verify.sampling import draw
from decoding.verify.verdict import NodeVerdict

W_LO = 1e-14
W_HI = 1e16
ENUMERATION_LIMIT = 20_000  # tuples
BIN = 0.0375  # bin width in log w; bins lie on ONE global lattice [BIN m, BIN (m + 1)), m an integer
RATIO = 8  # the trapezoid step in log t is RATIO bins, so t c takes values on ONE geometric grid
STEP = RATIO * BIN  # trapezoid step in log t (0.3)
TERMS = 9  # Taylor terms in sigma = w/c - 1 (|sigma| <= 0.019): the dropped e^{-y} (y sigma)^9/9! <= 4e-17
Y_MAX = 40.0  # e^{-t c} below e^{-40} is dropped
T_LO = 1e-17  # the grid starts where a t <= 1e-17 for every weight a
FACTORIALS = torch.tensor([math.factorial(j) for j in range(TERMS)], dtype=torch.float64)
LOG_SPAN = math.log(Y_MAX / T_LO)  # the log t range one weight needs
MAX_BINS = math.ceil(math.log(W_HI / W_LO) / BIN) + 3  # log weights in (W_LO, W_HI], float32 rounding


def sir_weights(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """[V] importance weights w = p/q on supp q (0 elsewhere and below W_LO), capped to stay finite.
    Four passes: p/0 (inf or nan) is 0 off the support, as is a ratio that overflows (q < 1e-308)."""
    w = torch.div(p, q).nan_to_num_(nan=0.0, posinf=0.0)  # [V] our own tensor from here on
    return torch.nn.functional.threshold_(w, W_LO, 0.0).clamp_(max=1e300)  # w <= W_LO counts as 0


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
    return InducedLaw(q, sir_weights(p, q), k, method).full()


class InducedLaw:
    """r_beta of SIR selection: exact enumeration for a small support, else the 1-D integral, whose
    per-bin coefficients are fitted once and then evaluated at one token (the accept test) or at
    every token (only when the residual is needed)."""

    def __init__(self, q: torch.Tensor, w: torch.Tensor, k: int, method: str = "auto") -> None:
        self.q, self.w, self.k = q, w, k
        self._full: torch.Tensor | None = None
        self._fit: _Fit | None = None
        if k == 1:
            self._full = q.clone()
        elif method == "enumerate" or (method == "auto" and int(torch.count_nonzero(q)) ** k <= ENUMERATION_LIMIT):
            self._full = _enumerated_law(q, w, k)
        else:
            self._fit = _Fit.of(q, w, k)

    def at(self, token: int) -> float:
        if self._full is not None:
            return float(self._full[token])
        return self._fit.at(self.q, self.w, token)

    def full(self) -> torch.Tensor:
        if self._full is None:
            self._full = self._fit.full_law(self.q, self.w)
        return self._full


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
    return _Fit.of(q, w, k).full_law(q, w)


class _Placement(NamedTuple):
    """Where the fit put every token: kept so both evaluations reuse it instead of redoing [V] passes."""

    special: torch.Tensor  # [s] token ids with weight 0 or above W_HI (usually few): handled by index
    b: torch.Tensor  # [V] int32 bin index; the special tokens sit in an extra last bin whose coefficients are 0
    sigma: torch.Tensor  # [V] w/c - 1 (-1 at the special tokens)


class _Fit(NamedTuple):
    """E[a/(a+S)] as a polynomial in sigma = a/c - 1 around each log-weight bin centre c."""

    k: int
    g_inf: float  # P(S = 0) = z^(k-1), z = q-mass of the weight-0 tokens
    coeff: torch.Tensor | None  # [TERMS, bins + 1] (last column 0); None: no weight in (0, W_HI]
    placed: _Placement | None  # the tokens of the (q, w) the fit was made from

    @staticmethod
    def of(q: torch.Tensor, w: torch.Tensor, k: int) -> _Fit:
        special = _special(w)  # [s]
        z = float(q[special][w[special] == 0].sum()) if special.numel() else 0.0  # q-mass of the weight-0 tokens
        if special.numel() == w.numel():
            return _Fit(k, z ** (k - 1), None, None)
        m_lo, bins, b = _bin_index(w, special)
        b32 = b.to(torch.int32)  # [V] for the gathers (int32 indices gather ~1.6x faster; scatter_add_ takes int64)
        sigma = _offsets(w, b32, m_lo, bins)  # [V]
        moments = _bin_moments(q, sigma, b, bins)  # [TERMS, bins]
        coeff = torch.zeros(TERMS, bins + 1, dtype=torch.float64)  # [TERMS, bins + 1]
        coeff[:, :bins] = _coefficients(moments, z, k, bins)
        return _Fit(k, z ** (k - 1), coeff, _Placement(special, b32, sigma))

    def full_law(self, q: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        """r at every token of the (q, w) the fit was made from [V]: the Horner passes on the kept bins and
        sigmas; the special tokens are then written by index."""
        if self.placed is None:  # every token is special
            special = torch.arange(q.shape[0])
            r = torch.zeros_like(q)
        else:
            special, b, sigma = self.placed
            r = self._horner(b, sigma, q)  # [V]
        w_s, q_s = w[special], q[special]
        factor = torch.full_like(q_s, float(self.k)).masked_fill_(w_s == 0, self.g_inf)  # [s] float64
        r[special] = q_s * factor  # weight 0: only the all-zero tuples select it; huge weights: always
        return r

    def at(self, q: torch.Tensor, w: torch.Tensor, token: int) -> float:
        """r at one token, in Python floats (no tensor ops to dispatch): _horner's operations in its
        order, each one IEEE double rounding, so the number is bit-identical to full_law's."""
        w_y, q_y = float(w[token]), float(q[token])
        if self.placed is None or w_y == 0 or w_y > W_HI:
            return q_y * (self.g_inf if w_y == 0 else float(self.k))
        column = self.coeff[:, int(self.placed.b[token])].tolist()  # [TERMS]
        sigma = float(self.placed.sigma[token])
        poly = column[-1]
        for c in reversed(column[:-1]):
            poly = c + poly * sigma
        return (poly + poly * sigma + self.g_inf) * q_y * self.k

    def _horner(self, b: torch.Tensor, sigma: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
        """k q (g_inf + (1 + sigma) poly(sigma)) [n], one bin row per token. Separate multiplies and adds
        (addcmul may fuse them into one FMA rounding): each step rounds exactly as `at`'s Python floats do."""
        poly = self.coeff[TERMS - 1].index_select(0, b)  # [n]
        scratch = torch.empty_like(poly)  # [n] the gathered coefficients: no fresh tensor per term
        for j in range(TERMS - 2, -1, -1):
            poly.mul_(sigma).add_(torch.index_select(self.coeff[j], 0, b, out=scratch))
        torch.mul(poly, sigma, out=scratch)
        return poly.add_(scratch).add_(self.g_inf).mul_(q).mul_(self.k)


def _special(w: torch.Tensor) -> torch.Tensor:
    """[s] token ids with weight 0 or above W_HI. One aminmax pass settles the usual case (none) without
    the mask and nonzero scan (~0.1 ms at V = 49152)."""
    lo, hi = (float(v) for v in torch.aminmax(w))
    if lo > 0 and hi <= W_HI:
        return torch.empty(0, dtype=torch.long)
    return torch.nonzero((w == 0) | (w > W_HI)).flatten()


def _bin_index(w: torch.Tensor, special: torch.Tensor) -> tuple[int, int, torch.Tensor]:
    """The lattice index m_lo of the lowest bin, the bin count, and each token's bin [V] (the extra bin
    `bins` for the special tokens). Placement only needs float32 logs: sigma is then computed from w
    itself against the bin's centre, so a token near an edge merely lands in a neighbouring bin."""
    log_w = w.to(torch.float32).log_().div_(BIN)  # [V] log w in bin widths
    if special.numel():
        log_w[special] = math.inf
        lo = float(log_w.min())
        log_w[special] = lo  # a finite placeholder; these tokens go to the extra bin below
        hi = float(log_w.max())
    else:
        lo, hi = (float(v) for v in torch.aminmax(log_w))
    m_lo = math.floor(lo)
    bins = math.floor(hi) - m_lo + 1
    b = log_w.sub_(m_lo).clamp_(max=bins - 1).long()  # [V] >= 0, so truncation is floor (the clamp: rounding)
    b[special] = bins
    return m_lo, bins, b


def _offsets(w: torch.Tensor, b: torch.Tensor, m_lo: int, bins: int) -> torch.Tensor:
    """sigma = w/c - 1 [V], c the centre of each token's bin on the lattice; -1 in the extra bin."""
    inv_c = torch.exp(-BIN * (m_lo + 0.5 + torch.arange(bins + 1, dtype=torch.float64)))  # [bins + 1]
    inv_c[bins] = 0.0  # the special tokens: sigma = -1, finite whatever their weight
    return inv_c.index_select(0, b).mul_(w).sub_(1.0)


def _bin_moments(q: torch.Tensor, sigma: torch.Tensor, b: torch.Tensor, bins: int) -> torch.Tensor:
    """[TERMS, bins] m[j, b] = sum over the bin's tokens of q sigma^j / j! (the extra bin is dropped)."""
    out = torch.zeros(TERMS, bins + 1, dtype=torch.float64)
    out[0].scatter_add_(0, b, q)  # cheaper than bincount, which scans for min and max
    term = torch.mul(q, sigma)  # [V] our own buffer, multiplied in place
    for j in range(1, TERMS):
        out[j].scatter_add_(0, b, term)
        if j < TERMS - 1:
            term.mul_(sigma)
    return out[:, :bins] / FACTORIALS[:, None]


def _tables() -> torch.Tensor:
    """e^{-y} (-y)^j [TERMS + 1, n] at y = T_LO e^{BIN (m + 1/2)}, m = -MAX_BINS, ...: every value of t c
    any node uses (zero where y > Y_MAX: terms below e^{-39}). A constant."""
    top = math.ceil(LOG_SPAN / BIN) + MAX_BINS + RATIO
    y = torch.exp(math.log(T_LO) + BIN * (torch.arange(-MAX_BINS, top + 1, dtype=torch.float64) + 0.5))
    live = (y <= Y_MAX).double()
    y = y * live
    powers = torch.empty(TERMS + 1, y.shape[0], dtype=torch.float64)
    powers[0] = torch.exp(-y) * live
    for j in range(1, TERMS + 1):
        powers[j] = powers[j - 1] * -y
    return powers


POWERS = _tables()


def _grid(bins: int) -> tuple[torch.Tensor, int]:
    """The values y = t c of every (log t node, bin centre) pair on one 1-D grid, as STEP = RATIO bins:
    y[i, b] = y_1d[RATIO i + b]. Nodes run from a t <= T_LO for the largest weight to t a >= Y_MAX for
    the smallest. On the lattice y_1d[n] = T_LO e^{BIN (n - bins + 1/2)}, so the grid is a slice of the
    constant table (a view): e^{-y} (-y)^j [TERMS + 1, L], and the node count T."""
    count = math.ceil((LOG_SPAN + BIN * bins) / STEP) + 1  # T
    start = MAX_BINS - bins  # table column of n = 0
    return POWERS[:, start : start + RATIO * (count - 1) + bins], count


def _coefficients(moments: torch.Tensor, z: float, k: int, bins: int) -> torch.Tensor:
    """[TERMS, bins] the polynomial coefficients c[j, b] = sum_i weight_i e^{-y} (-y)^j / j! y at y = t_i c_b,
    weight_i = STEP (G(t_i) - G(inf)), G = laplace^(k-1), laplace(t_i) = z + sum_j,b moments[j, b] e^{-y} (-y)^j.
    Both [T, bins] contractions are correlations along the 1-D grid, done by FFT on ONE transform of the
    grid: e^{-y} (-y)^j / j! y = -e^{-y} (-y)^(j+1) / j!, row j + 1 of the same table.
    A circular transform of size >= L wraps nothing: every pair used has lag + index < L. Rounding:
    absolute errors ~1e-16 x |a| |b|, far below the quadrature's 1e-13."""
    grid, count = _grid(bins)  # [TERMS + 1, L]
    length = grid.shape[1]
    size = 1 << (length - 1).bit_length()
    spectrum = torch.fft.rfft(grid, size)  # [TERMS + 1, F]
    nodes = slice(0, RATIO * (count - 1) + 1, RATIO)  # the T positions of the log t nodes on the grid
    lagged = (spectrum[:TERMS] * torch.fft.rfft(moments, size).conj()).sum(0)  # [F]
    laplace = z + torch.fft.irfft(lagged, size)[nodes]  # [T]
    weight = torch.zeros(length, dtype=torch.float64)  # [L] trapezoid weights at the nodes
    weight[nodes] = STEP * (laplace ** (k - 1) - z ** (k - 1))  # x (G(t) - G(inf))
    bumps = torch.fft.irfft(spectrum[1:] * torch.fft.rfft(weight, size).conj(), size)[:, :bins]  # [TERMS, bins]
    return bumps.div_(FACTORIALS[:, None]).neg_()


def _sd_test(p: torch.Tensor, xs: Sequence[int], chosen: int, law: InducedLaw) -> Test:
    y = xs[chosen]
    r_y = law.at(y)
    note = f"candidate {chosen} (token {y}) has r_beta(y) = 0 (q(y) = 0): skipped" if not r_y > 0 else ""
    return Test(chosen, y, float(p[y]), r_y, "p(y)/r_beta(y)", note=note)


def _chain(p: torch.Tensor, xs: Sequence[int], chosen: int, node: _Node) -> Iterator[Event]:
    yield _sd_test(p, xs, chosen, node.law)
    r = node.residual()  # [V] SD residual against the induced law
    yield Update(r)
    yield Final(r)


class _Node:
    """One node's precomputation: prepared p and q [V], the SIR weights [V], the induced law, and (when
    first needed) the residual norm((p - r)_+) [V], which does not depend on the candidates."""

    def __init__(self, p: torch.Tensor, q: torch.Tensor, k: int) -> None:
        self.p, self.q = p, q
        self.w = sir_weights(p, q)  # [V]
        self.law = InducedLaw(q, self.w, k)
        self._residual: torch.Tensor | None = None

    def residual(self) -> torch.Tensor:
        if self._residual is None:
            r = torch.sub(self.p, self.law.full()).clamp_(min=0.0)  # [V] (p - r)_+, our own tensor
            self._residual = normalised_residual_(r, self.p)
        return self._residual


def _node(
    p: torch.Tensor, q: torch.Tensor, candidates: Sequence[int], cache: NodeCache | None
) -> tuple[_Node, list[int]]:
    """The node's precomputation (from `cache` when it has this node and k) and the candidates as ints."""
    p_law, q_law, xs = prepare(p, q, candidates)
    if cache is None:
        return _Node(p_law, q_law, len(xs)), xs
    return cache.get(p, q, len(xs), lambda: _Node(p_law, q_law, len(xs))), xs


def verify(
    p: torch.Tensor,
    q: torch.Tensor,
    candidates: Sequence[int],
    generator: torch.Generator,
    cache: NodeCache | None = None,
) -> NodeVerdict:
    """Select one candidate by importance weight p/q, then SD of it against its induced law r.
    With a `cache`, a node verified again costs a selection and a test, not a refit of r."""
    node, xs = _node(p, q, candidates, cache)
    beta = selection(node.w[xs])  # [k]
    chosen = draw(beta, generator)
    verdict = run_chain(_chain(node.p, xs, chosen, node), xs, generator)
    note = f"SIR selected candidate {chosen} (token {xs[chosen]}) with probability {float(beta[chosen]):.6g}"
    return replace(verdict, notes=(note,) + verdict.notes)


def verify_with(cache: NodeCache) -> Callable[..., NodeVerdict]:
    """`verify` that keeps each node's induced law in `cache` (Verifier.memoised)."""
    return partial(verify, cache=cache)


def conditional(p: torch.Tensor, q: torch.Tensor, candidates: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """accept[i] = beta_i min(1, p(x_i)/r(x_i)); residual = norm((p - r)_+) [V]."""
    node, xs = _node(p, q, candidates, None)
    beta = selection(node.w[xs])  # [k]
    residual = node.residual()  # [V] first: it builds the full law, so each at() below is a lookup of it
    passes = torch.tensor([_sd_test(node.p, xs, i, node.law).probability for i in range(len(xs))], dtype=torch.float64)
    accept = beta * passes  # [k]
    if float(accept.sum()) >= 1.0:
        return accept, torch.zeros_like(node.p)
    return accept, residual


def acceptance(p: torch.Tensor, q: torch.Tensor, k: int) -> float:
    """alpha = sum_y min(p(y), r(y)), r the selected token's induced law (the very r the rule uses)."""
    return float(torch.minimum(p, induced_law(p, q, k)).sum())
