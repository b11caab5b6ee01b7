"""Two-sided bounds on khisti_is's induced law r at one token from the bins alone: most accept tests (and most
residual proposals) are decided by them, so the node never pays for the full fit (rules/khisti_fit.py).

r(y) = k q(y) E[a/(a+S)], a = w(y), S = sum of k-1 i.i.d. weights w(X), X ~ q. The fit's first pass puts every
weight in a log-weight bin; within its bin a weight is within a factor LAMBDA = 1 + EDGE of the bin's centre c
(float32 placement included). So, tuple by tuple, S lies in [S_c / LAMBDA, LAMBDA S_c], S_c the same sum of the
centres, and f(s) = a/(a+s) is decreasing:
    g(a / LAMBDA) <= E[a/(a+S)] <= g(a LAMBDA),   g(b) = E[b/(b+S_c)],
the same function of the CENTRE law, whose moments beyond the 0th are exactly 0 (sigma = 0 at a centre): one
scatter of q by bin and one transform instead of the offsets, 7 more scatters and the correlations. g is
evaluated like the fit evaluates r: the quadrature's direct sum for y's bin, Horner in sigma' = b/c - 1
(|sigma'| <= 2 EDGE + EDGE^2 ~ 0.038: the dropped Taylor terms are ~sigma'^8 ~ 4e-12 of the value).
The bounds are widened by REL and ABS, far above the quadrature's ~1e-13 and that Taylor remainder, so they
hold the fit's own number (`Fit.at`, the exact test's denominator) too. Their ratio is at most about
LAMBDA^2 ~ 1.04 (median 1.017 over random tokens at V = 49152): a test is undecided only when its uniform falls
in that window of the threshold (in bench verifiers' nodes, 1 of 120 made the fit).
"""

from __future__ import annotations

import math

from decoding.verify.rules.khisti_fit import BIN, EDGE, Binned, NodeWeights, direct_column, horner, node_weights

LAMBDA = 1.0 + EDGE  # a weight over its bin's centre lies in [1 / LAMBDA, LAMBDA]
REL = 1e-9  # relative widening of each bound
ABS = 1e-12  # absolute widening, in units of E[a/(a+S)] <= 1


class Bracket:
    """Bounds (lo, hi) on r at one token from the bins' q-mass: the centre law's quadrature weights, made once."""

    def __init__(self, binned: Binned, k: int) -> None:
        self.binned, self.k = binned, k
        self.g_inf = binned.z ** (k - 1)  # P(S = 0), the same for S and S_c
        self.nodes: NodeWeights = node_weights(binned.mass[None, :], binned.z, k, binned.bins)
        self._columns: dict[int, list[float]] = {}  # bin -> the centre law's [TERMS] coefficients

    def bounds(self, q_y: float, w_y: float, token: int) -> tuple[float, float]:
        """lo <= r(token) <= hi, for a token in a bin (not a special one: weight 0 or above W_HI)."""
        b = int(self.binned.b32[token])
        sigma = w_y * math.exp(-BIN * (self.binned.m_lo + b + 0.5)) - 1.0  # w / c - 1, as the fit computes it
        low = self._g(b, (1.0 + sigma) / LAMBDA - 1.0) * (1.0 - REL) - ABS
        high = self._g(b, (1.0 + sigma) * LAMBDA - 1.0) * (1.0 + REL) + ABS
        scale = q_y * self.k
        return max(low, 0.0) * scale, min(high, 1.0) * scale

    def _g(self, b: int, sigma: float) -> float:
        """E[c'/(c'+S_c)] at c' = c_b (1 + sigma), by the fit's polynomial form around bin b's centre."""
        if b not in self._columns:
            self._columns[b] = direct_column(self.nodes, b)
        return self.g_inf + horner(self._columns[b], sigma) * (1.0 + sigma)
