"""khisti_is's induced law by the 1-D integral: E[a/(a+S)] fitted once per node, a polynomial per log-weight bin.

S is the sum of k-1 i.i.d. weights w(X), X ~ q. With a/(a+S) = int_0^inf a e^{-t(a+S)} dt and M(t) = E_q[e^{-t w(X)}]:
    E[a/(a+S)] = P(S=0) + int_0^inf a e^{-ta} (M(t)^{k-1} - P(S=0)) dt.
The integrand is smooth and bell-shaped in tau = log t, so the trapezoid rule in tau with step 0.3
converges geometrically (error ~ e^{-pi^2/0.3} ~ 1e-14); the grid spans every token's bump. All
e^{-t w} are evaluated by binning tokens on log w (width 0.0375, on one global lattice) and expanding
e^{-t w} around each bin centre to 8 Taylor terms (e^{-y} (y sigma)^j / j! <= sigma^j / sqrt(2 pi j),
|sigma| <= 0.019: the first dropped term is <= 2.3e-15, below the quadrature's ~1e-14; a 9th term, 4e-17, cost
~6 % of a node), so the cost is 8 [V] scatter passes and a few [T, bins] contractions instead of V x T
exponentials. The trapezoid step is exactly 8 bins and the bins sit on a fixed lattice, so t c lies on
ONE geometric 1-D grid; counting the bins down from the top one, y = t c depends on 8 i - b' only, so
both contractions (the Laplace transform, the bump coefficients) are a convolution and a correlation
with ONE constant table, done by FFT against its spectrum, computed once per transform size.

Where the law is needed in full, only where it can matter: the SD residual (p - r)_+ = q (w - k E[w/(w+S)])_+
is zero wherever w <= w*, since w - k E[w/(w+S)] is convex in w and <= 0 at w = 0 (`positive_part`).

Speed (bench verifiers, V = 49152, k = 8: the fit is done afresh for every node): tokens are placed with
float32 logs (a placement error only moves a token to a neighbouring bin; sigma = w/c - 1 is then computed
from w itself), the law reuses the fit's bins and sigmas, and [V] work is done in place where a fresh
tensor is not needed.
"""

from __future__ import annotations

import math
from functools import cache
from typing import NamedTuple

import numpy as np
import torch

W_LO = 1e-14  # weights at or below count as 0
W_HI = 1e16  # weights above are selected whenever drafted (E[w/(w+S)] = 1 up to (k-1)/w < 1e-15)
BIN = 0.0375  # bin width in log w; bins lie on ONE global lattice [BIN m, BIN (m + 1)), m an integer
RATIO = 8  # the trapezoid step in log t is RATIO bins, so t c takes values on ONE geometric grid
STEP = RATIO * BIN  # trapezoid step in log t (0.3)
TERMS = 8  # Taylor terms in sigma = w/c - 1 (|sigma| <= 0.019): the dropped e^{-y} (y sigma)^8/8! <= 2.3e-15
Y_MAX = 40.0  # e^{-t c} below e^{-40} is dropped
T_LO = 1e-17  # the grid starts where a t <= 1e-17 for every weight a
FACTORIALS = torch.tensor([math.factorial(j) for j in range(TERMS)], dtype=torch.float64)
LOG_SPAN = math.log(Y_MAX / T_LO)  # the log t range one weight needs
MAX_BINS = math.ceil(math.log(W_HI / W_LO) / BIN) + 3  # log weights in (W_LO, W_HI], float32 rounding
SPAN = math.ceil(LOG_SPAN / BIN) + RATIO + 2  # lattice steps of t c beyond the bins' own span, with room
SIZES = (2048, 4096, 8192)  # powers of 2 (5-smooth sizes measured 2-3x slower in torch); 8192 fits MAX_BINS
EDGE = math.expm1(0.5 * BIN + 1e-4)  # sigma at a bin's upper edge, plus room for float32 placement
EDGE_POWERS = EDGE ** torch.arange(TERMS, dtype=torch.float64)  # [TERMS]


class Placement(NamedTuple):
    """Where the fit put every token: kept so the law's evaluations reuse it instead of redoing [V] passes."""

    special: torch.Tensor  # [s] token ids with weight 0 or above W_HI (usually few): handled by index
    b: torch.Tensor  # [V] int32 bin index; the special tokens sit in an extra last bin whose coefficients are 0
    sigma: torch.Tensor  # [V] w/c - 1 (-1 at the special tokens)
    m_lo: int  # lattice index of bin 0: its centre is e^{BIN (m_lo + 1/2)}


class Binned(NamedTuple):
    """Every token's log-weight bin and each bin's q-mass: the fit's first pass, all the bracket needs."""

    special: torch.Tensor  # [s] token ids with weight 0 or above W_HI
    b: torch.Tensor  # [V] int64 bin index (scatter_add_ takes int64); the special tokens sit in the extra bin `bins`
    b32: torch.Tensor  # [V] the same as int32 (int32 indices gather ~1.6x faster)
    m_lo: int  # lattice index of bin 0: its centre is e^{BIN (m_lo + 1/2)}
    bins: int  # 0 when every token is special
    z: float  # q-mass of the weight-0 tokens
    mass: torch.Tensor  # [bins] q-mass per bin: the fit's 0th moments


def bin_tokens(q: torch.Tensor, w: torch.Tensor, extremes: tuple[float, float] | None = None) -> Binned:
    """Place every token in its log-weight bin and sum q per bin (extremes: see Fit.of)."""
    special, lo, hi = _special(w, extremes)  # [s]
    z = float(q[special][w[special] == 0].sum()) if special.numel() else 0.0
    if special.numel() == w.numel():
        none = torch.zeros(0, dtype=torch.float64)
        return Binned(special, none.long(), none.int(), 0, 0, z, none)
    m_lo, bins, b = _bin_index(w, special, lo, hi)
    mass = torch.zeros(bins + 1, dtype=torch.float64).scatter_add_(0, b, q)[:bins]  # cheaper than bincount
    return Binned(special, b, b.to(torch.int32), m_lo, bins, z, mass)


class Fit:
    """E[a/(a+S)] as a polynomial in sigma = a/c - 1 around each log-weight bin centre c.

    The coefficients of every bin (one FFT correlation, `coeff`) are computed on first need: the full law and the
    residual need them, the accept test at one token does not (`at` takes its bin's column by a direct sum)."""

    def __init__(self, k: int, g_inf: float, placed: Placement | None, nodes: NodeWeights | None) -> None:
        self.k = k
        self.g_inf = g_inf  # P(S = 0) = z^(k-1), z = q-mass of the weight-0 tokens
        self.placed = placed  # the tokens of the (q, w) the fit was made from; None: no weight in (0, W_HI]
        self.nodes = nodes  # the quadrature's node weights; None with placed
        self._coeff: torch.Tensor | None = None  # [TERMS, bins + 1] (last column 0)
        self._columns: dict[int, list[float]] = {}  # bin -> its [TERMS] coefficients by the direct sum

    @staticmethod
    def of(q: torch.Tensor, w: torch.Tensor, k: int, extremes: tuple[float, float] | None = None) -> Fit:
        """extremes: w's (least, largest) when the caller knows every weight is positive (saves a [V] pass)."""
        return Fit.fitted(q, w, k, bin_tokens(q, w, extremes))

    @staticmethod
    def fitted(q: torch.Tensor, w: torch.Tensor, k: int, binned: Binned) -> Fit:
        """The fit on tokens already binned (`bin_tokens`: the bracket needs only that pass)."""
        if binned.bins == 0:
            return Fit(k, binned.z ** (k - 1), None, None)
        sigma = _offsets(w, binned.b32, binned.m_lo, binned.bins)  # [V]
        moments = _bin_moments(q, sigma, binned.b, binned.mass)  # [TERMS, bins]
        nodes = node_weights(moments, binned.z, k, binned.bins)
        return Fit(k, binned.z ** (k - 1), Placement(binned.special, binned.b32, sigma, binned.m_lo), nodes)

    @property
    def coeff(self) -> torch.Tensor:
        """[TERMS, bins + 1] every bin's coefficients (the extra bin's are 0), by one correlation, on first use."""
        if self._coeff is None:
            bins = self.nodes.bins
            self._coeff = torch.zeros(TERMS, bins + 1, dtype=torch.float64)
            self._coeff[:, :bins] = _correlate(self.nodes)
        return self._coeff

    def column(self, b: int) -> list[float]:
        """Bin b's [TERMS] coefficients by the direct sum over the quadrature's nodes (T products per term, no
        FFT): coeff's column up to the two summations' rounding (r differs by <= 2e-14 q; the quadrature itself
        is good to ~1e-13)."""
        if b not in self._columns:
            self._columns[b] = _direct_column(self.nodes, b)
        return self._columns[b]

    def full_law(self, q: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        """r at every token of the (q, w) the fit was made from [V]: the Horner passes on the kept bins and
        sigmas; the special tokens are then written by index."""
        if self.placed is None:  # every token is special
            special = torch.arange(q.shape[0])
            r = torch.zeros_like(q)
        else:
            special, b, sigma, _ = self.placed
            r = self._horner(b, sigma, q)  # [V]
        r[special] = self._special_law(q, w, special)
        return r

    def positive_part(self, p: torch.Tensor, q: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        """(p - r)_+ [V], a fresh tensor equal to the one full_law gives, computed only on the tokens that can
        hold it: those in bins from one below the lowest bin whose upper edge has p > r, and the special ones.
        Why that is all: p - r = q (w - k E[w/(w+S)]), convex in w and <= 0 at w = 0, so <= 0 up to w*."""
        if self.placed is None:
            return torch.sub(p, self.full_law(q, w)).clamp_(min=0.0)
        special, b, sigma, _ = self.placed
        live = _indices(b >= self._cut())  # [n] the special tokens' extra bin is above every cut
        b_n, sigma_n, q_n = (t.index_select(0, live) for t in (b, sigma, q))  # [n] each
        r = self._horner(b_n, sigma_n, q_n)  # [n] each token's number is full_law's, bit for bit
        torch.sub(p.index_select(0, live), r, out=r).clamp_(min=0.0)
        out = torch.zeros_like(p).index_copy_(0, live, r)  # [V]
        out[special] = torch.sub(p[special], self._special_law(q, w, special)).clamp_(min=0.0)
        return out

    def at(self, q: torch.Tensor, w: torch.Tensor, token: int) -> float:
        """r at one token, in Python floats (no tensor ops to dispatch): _horner's operations in its order on
        the bin's directly summed column, so the number is full_law's up to the columns' rounding (<= 2e-14 q,
        tested), and the same whether or not the full law was built before (the accept test and the
        rejection-drawn residual token read r here, the shown residual row from full_law)."""
        w_y, q_y = float(w[token]), float(q[token])
        if self.placed is None or w_y == 0 or w_y > W_HI:
            return special_at(q_y, w_y, self.k, self.g_inf)
        sigma = float(self.placed.sigma[token])
        poly = horner(self.column(int(self.placed.b[token])), sigma)
        return (poly + poly * sigma + self.g_inf) * q_y * self.k

    def _special_law(self, q: torch.Tensor, w: torch.Tensor, special: torch.Tensor) -> torch.Tensor:
        """r at the special tokens [s]: weight 0 is selected only by the all-zero tuples, a huge weight always."""
        w_s, q_s = w[special], q[special]
        return q_s * torch.full_like(q_s, float(self.k)).masked_fill_(w_s == 0, self.g_inf)

    def _horner(self, b: torch.Tensor, sigma: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
        """k q (g_inf + (1 + sigma) poly(sigma)) [n], one bin row per token. Separate multiplies and adds
        (addcmul may fuse them into one FMA rounding): each step rounds exactly as `at`'s Python floats do."""
        poly = self.coeff[TERMS - 1].index_select(0, b)  # [n]
        scratch = torch.empty_like(poly)  # [n] the gathered coefficients: no fresh tensor per term
        for j in range(TERMS - 2, -1, -1):
            poly.mul_(sigma).add_(torch.index_select(self.coeff[j], 0, b, out=scratch))
        torch.mul(poly, sigma, out=scratch)
        return poly.add_(scratch).add_(self.g_inf).mul_(q).mul_(self.k)

    def _cut(self) -> int:
        """The lowest bin that may hold residual: one below the lowest bin whose upper edge has w > k E[w/(w+S)]
        in the fitted law (the bin below covers a float32 placement across the edge); bin 0 when none has.
        One [TERMS] x [TERMS, bins] product (a decision with a bin of margin: no need for Horner's rounding)."""
        bins = self.coeff.shape[1] - 1
        poly = EDGE_POWERS @ self.coeff[:, :bins]  # [bins] the polynomials at sigma = EDGE
        edges = torch.arange(bins, dtype=torch.float64).mul_(BIN).add_(BIN * (self.placed.m_lo + 0.5)).exp_()
        surplus = edges.mul_(1.0 + EDGE).sub_(poly.mul_(self.k * (1.0 + EDGE)).add_(self.k * self.g_inf))  # (p - r)/q
        above = torch.nonzero(surplus > 0)
        return max(int(above[0]) - 1, 0) if above.numel() else 0


def horner(column: list[float], sigma: float) -> float:
    """sum_j column[j] sigma^j in Python floats, in `Fit._horner`'s order (so the same rounding)."""
    poly = column[-1]
    for c in reversed(column[:-1]):
        poly = c + poly * sigma
    return poly


def special_at(q_y: float, w_y: float, k: int, g_inf: float) -> float:
    """r at a token of weight 0 (selected only by the all-zero tuples) or above W_HI (selected whenever drafted)."""
    return q_y * (g_inf if w_y == 0 else float(k))


def _indices(mask: torch.Tensor) -> torch.Tensor:
    """[n] int64 positions where the [V] bool mask holds: numpy's flatnonzero, about ten times faster than
    torch.nonzero on a CPU tensor (docs/speed.md, "Measurements the code's comments cite"); shares no memory with
    the mask."""
    return torch.from_numpy(np.flatnonzero(mask.numpy()))


def _special(w: torch.Tensor, extremes: tuple[float, float] | None = None) -> tuple[torch.Tensor, float, float]:
    """[s] token ids with weight 0 or above W_HI, and the least and largest weight. One aminmax pass (none when
    the extremes are given) settles the usual case (none) without the mask and nonzero scan
    (docs/speed.md, "Measurements the code's comments cite")."""
    lo, hi = extremes if extremes is not None else (float(v) for v in torch.aminmax(w))
    if lo > 0 and hi <= W_HI:
        return torch.empty(0, dtype=torch.long), lo, hi
    return torch.nonzero((w == 0) | (w > W_HI)).flatten(), lo, hi


def _bin_index(w: torch.Tensor, special: torch.Tensor, lo: float, hi: float) -> tuple[int, int, torch.Tensor]:
    """The lattice index m_lo of the lowest bin, the bin count, and each token's bin [V] (the extra bin
    `bins` for the special tokens). Placement only needs float32 logs: sigma is then computed from w
    itself against the bin's centre, so a token near an edge merely lands in a neighbouring bin (which is
    also why the range may come from the double-precision logs of the extreme weights lo and hi: a float32
    log just outside it is truncated or clamped into the end bin)."""
    log_w = w.to(torch.float32).log_().mul_(1.0 / BIN)  # [V] log w in bin widths
    if special.numel():
        log_w[special] = math.inf
        lo_bins = float(log_w.min())
        log_w[special] = lo_bins  # a finite placeholder; these tokens go to the extra bin below
        hi_bins = float(log_w.max())
    else:
        lo_bins, hi_bins = math.log(lo) / BIN, math.log(hi) / BIN
    m_lo = math.floor(lo_bins)
    bins = math.floor(hi_bins) - m_lo + 1
    b = log_w.sub_(m_lo).clamp_(max=bins - 1).long()  # [V] > -1, so truncation is floor or 0 (the clamp: rounding)
    b[special] = bins
    return m_lo, bins, b


def _offsets(w: torch.Tensor, b: torch.Tensor, m_lo: int, bins: int) -> torch.Tensor:
    """sigma = w/c - 1 [V], c the centre of each token's bin on the lattice; -1 in the extra bin."""
    inv_c = torch.exp(-BIN * (m_lo + 0.5 + torch.arange(bins + 1, dtype=torch.float64)))  # [bins + 1]
    inv_c[bins] = 0.0  # the special tokens: sigma = -1, finite whatever their weight
    return inv_c.index_select(0, b).mul_(w).sub_(1.0)


def _bin_moments(q: torch.Tensor, sigma: torch.Tensor, b: torch.Tensor, mass: torch.Tensor) -> torch.Tensor:
    """[TERMS, bins] m[j, b] = sum over the bin's tokens of q sigma^j (the extra bin is dropped; the 1/j! is in
    the table `_spectrum` gives); row 0 is the bins' mass, already summed.
    One scatter per power into one [V] buffer (measured faster than one index_add_ of a [TERMS, V] block,
    which spills the cache)."""
    bins = mass.shape[0]
    out = torch.zeros(TERMS, bins + 1, dtype=torch.float64)
    out[0, :bins] = mass
    term = torch.mul(q, sigma)  # [V] our own buffer, multiplied in place
    for j in range(1, TERMS):
        out[j].scatter_add_(0, b, term)
        if j < TERMS - 1:
            term.mul_(sigma)
    return out[:, :bins]


class Tables(NamedTuple):
    """The constant tables (one per transform size) every node's two contractions run against, in frequency."""

    laplace: torch.Tensor  # [TERMS, F] conj(rfft(e^{-y} (-y)^j)) / j!: the moments' row j contracts with it
    coefficients: torch.Tensor  # [TERMS, F] -STEP rfft(e^{-y} (-y)^(j+1)) / j!: coefficient row j's table
    time: torch.Tensor  # [TERMS, size] the same table in time: -STEP e^{-y} (-y)^(j+1) / j! (the direct sums)
    offset: int  # the most bins this size takes


@cache
def _tables(size: int) -> Tables:
    """The rffts of e^{-y} (-y)^j at y = T_LO e^{BIN (s - offset - 1/2)}, s < size (zero where y > Y_MAX: terms below
    e^{-39}), with every constant factor of the two contractions (1/j!, -STEP) folded in. Built on first use."""
    offset = (size - SPAN) // 2
    y = torch.exp(math.log(T_LO) + BIN * (torch.arange(size, dtype=torch.float64) - offset - 0.5))
    live = (y <= Y_MAX).double()
    y = y * live
    powers = torch.empty(TERMS + 1, size, dtype=torch.float64)
    powers[0] = torch.exp(-y) * live
    for j in range(1, TERMS + 1):
        powers[j] = powers[j - 1] * -y
    spectrum = torch.fft.rfft(powers)  # [TERMS + 1, F]
    inverse = (1.0 / FACTORIALS)[:, None]  # [TERMS, 1]
    return Tables(spectrum[:TERMS].conj() * inverse, spectrum[1:] * (-STEP * inverse), powers[1:] * (-STEP * inverse),
                  offset)


class NodeWeights(NamedTuple):
    """The quadrature's trapezoid weights STEP (G(t_i) - G(inf)) at its nodes, placed every RATIO entries of a
    [size] buffer (STEP is in the tables), with what the coefficients' correlation needs to read them."""

    weight: torch.Tensor  # [size]
    count: int  # T nodes
    bins: int
    size: int

    @property
    def at_nodes(self) -> torch.Tensor:
        """[T] the weights at the T nodes (the buffer's every RATIO-th entry)."""
        return self.weight[: RATIO * self.count : RATIO]

    def times(self, m_lo: int) -> np.ndarray:
        """[T] the nodes t_i themselves, for weights binned from m_lo: y = t_i c_b = T_LO e^{BIN (8 i - b' - 1/2)}
        with c_b = e^{BIN (m_lo + b + 1/2)} gives t_i = T_LO e^{STEP i - BIN (bins + m_lo)}."""
        return T_LO * np.exp(STEP * np.arange(self.count) - BIN * (self.bins + m_lo))


def node_weights(moments: torch.Tensor, z: float, k: int, bins: int) -> NodeWeights:
    """The Laplace transform laplace(t_i) = z + sum_j,b moments[j, b] e^{-y} (-y)^j / j! at the T nodes (moments
    [J, bins], J <= TERMS: fewer rows are the higher moments taken as 0), then the
    weights G(t_i) - G(inf), G = laplace^(k-1). Nodes t_i run from a t <= T_LO for the largest weight to
    t a >= Y_MAX for the smallest; with b' = bins - 1 - b (bins counted down), y = t_i c_b = T_LO e^{BIN (8 i - b' -
    1/2)}: a convolution of the reversed moments with the table. A circular transform wraps nothing: every index
    used lies in [0, size). Rounding: absolute errors ~1e-16 x |a| |b|, far below the quadrature's 1e-13."""
    count = math.ceil((LOG_SPAN + BIN * bins) / STEP) + 1  # T
    size = next(s for s in SIZES if (s - SPAN) // 2 >= bins)
    tables = _tables(size)  # offset >= bins
    nodes = slice(0, RATIO * (count - 1) + 1, RATIO)  # the T positions of the log t nodes, from the offset
    reversed_moments = torch.fft.rfft(moments.flip(1), size)  # [J, F], J <= TERMS rows of moments
    laplace_table = tables.laplace[: moments.shape[0]]  # [J, F]
    convolved = torch.fft.irfft(torch.linalg.vecdot(laplace_table, reversed_moments, dim=0), size)  # [size]
    laplace = convolved[tables.offset :][nodes].add_(z)  # [T]
    weight = torch.zeros(size, dtype=torch.float64)  # [size] trapezoid weights at the nodes (STEP is in the table)
    weight[nodes] = laplace.pow_(k - 1).sub_(z ** (k - 1))  # G(t) - G(inf)
    return NodeWeights(weight, count, bins, size)


def _correlate(nodes: NodeWeights) -> torch.Tensor:
    """[TERMS, bins] the polynomial coefficients c[j, b] = sum_i weight_i e^{-y} (-y)^j / j! y at y = t_i c_b, every
    bin at once: a correlation of the node weights with the table (e^{-y} (-y)^j / j! y = -e^{-y} (-y)^(j+1) / j!,
    row j + 1), by FFT."""
    tables = _tables(nodes.size)
    spectrum = torch.fft.rfft(nodes.weight).conj_physical_()  # [F] a correlation: the weights' conjugate spectrum
    lagged = torch.fft.irfft(tables.coefficients * spectrum, nodes.size)  # [TERMS, size] at offset - b'
    return lagged[:, tables.offset - nodes.bins + 1 : tables.offset + 1]


def _direct_column(nodes: NodeWeights, b: int) -> list[float]:
    """[TERMS] bin b's coefficients as `_correlate` defines them, by the direct sum over the T nodes: the table
    entries at offset - b' + RATIO i, i < T (a strided view), times the node weights."""
    tables = _tables(nodes.size)
    start = tables.offset - (nodes.bins - 1 - b)
    window = tables.time[:, start : start + RATIO * nodes.count : RATIO]  # [TERMS, T]
    return torch.mv(window, nodes.at_nodes).tolist()
