"""Two-sided bounds on khisti_is's induced law r at one token from the bins alone: most accept tests (and most
residual proposals) are decided by them, so the node never pays for the full fit (rules/fast/khisti_fit.py).

r(y) = k q(y) E[a/(a+S)], a = w(y), S = sum of k-1 i.i.d. weights w(X), X ~ q. The fit's first pass puts every
weight in a log-weight bin; within its bin a weight is within a factor LAMBDA = 1 + EDGE of the bin's centre c
(float32 placement included). So, tuple by tuple, S lies in [S_c / LAMBDA, LAMBDA S_c], S_c the same sum of the
centres, and f(s) = a/(a+s) is decreasing:
    g(a / LAMBDA) <= E[a/(a+S)] <= g(a LAMBDA),   g(b) = E[b/(b+S_c)],
the same function of the CENTRE law, whose moments beyond the 0th are exactly 0 (sigma = 0 at a centre): one
scatter of q by bin and one transform (`node_weights`) instead of the offsets, 7 more scatters and the
correlations. g(b) is then the fit's own trapezoid sum taken at b directly, g_inf + STEP sum_i W_i y_i e^{-y_i},
y_i = b t_i over the T ~ 270 nodes t_i (numpy, one short vector pass: no per-bin coefficients, no Taylor expansion;
docs/speed.md, "Measurements the code's comments cite").
The bounds are widened by REL and ABS, far above the quadrature's ~1e-13, so they hold the fit's own number
(`Fit.at`, the exact test's denominator) too. Their ratio is at most about LAMBDA^2 ~ 1.04 (median 1.017 over
random tokens at V = 49152): a test is undecided only when its uniform falls in that window of the threshold (in
bench verifiers' nodes, 1 of 120 made the fit).
"""

from __future__ import annotations

import numpy as np

from decoding.verify.rules.fast.khisti_fit import EDGE, STEP, Binned, node_weights

LAMBDA = 1.0 + EDGE  # a weight over its bin's centre lies in [1 / LAMBDA, LAMBDA]
REL = 1e-9  # relative widening of each bound
ABS = 1e-12  # absolute widening, in units of E[a/(a+S)] <= 1


class Bracket:
    """Bounds (lo, hi) on r at one token from the bins' q-mass: the centre law's quadrature weights, made once."""

    def __init__(self, binned: Binned, k: int) -> None:
        self.k = k
        self.g_inf = binned.z ** (k - 1)  # P(S = 0), the same for S and S_c
        nodes = node_weights(binned.mass[None, :], binned.z, k, binned.bins)  # the centre law's G(t_i) - G(inf)
        self.weight = nodes.at_nodes.numpy()  # [T]
        self.t = nodes.times(binned.m_lo)  # [T] the nodes t_i

    def bounds(self, q_y: float, w_y: float) -> tuple[float, float]:
        """lo <= r <= hi at a token of draft probability q_y and weight w_y in (0, W_HI] (a binned one)."""
        low = self._g(w_y / LAMBDA) * (1.0 - REL) - ABS
        high = self._g(w_y * LAMBDA) * (1.0 + REL) + ABS
        scale = q_y * self.k
        return max(low, 0.0) * scale, min(high, 1.0) * scale

    def _g(self, b: float) -> float:
        """E[b/(b+S_c)] by the fit's trapezoid sum in log t."""
        y = self.t * b  # [T]
        return self.g_inf + STEP * float(np.dot(self.weight, y * np.exp(-y)))
