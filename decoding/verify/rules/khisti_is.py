"""Importance-sampling selection + SD (Khisti et al., ICLR 2025, canonical form), docs/verifiers.md §7.2.

k i.i.d. candidates x_1..x_k ~ q.
Step 1 (importance selection, SIR): select candidate i with probability beta_i = w(x_i) / sum_j w(x_j),
w = p/q the importance weight.
Step 2 (SD of the selected token y against the law it actually has): y's induced law is
    r(y) = sum over tuples Q(x) beta(y | x) = k q(y) E[w(y) / (w(y) + S)],  S = sum of k-1 i.i.d. w(X), X ~ q;
accept y if u <= p(y)/r(y), else emit a token from norm((p - r)_+). Lossless for any selection rule once r is
its exact induced law; alpha = sum_y min(p(y), r(y)).

This file computes r as defined: every tuple enumerated when the support is small (n^k <= ENUMERATION_LIMIT),
else the 1-D integral a/(a+S) = int_0^inf a e^{-t(a+S)} dt taken in expectation,
    E[a/(a+S)] = P(S=0) + int_0^inf a e^{-ta} (M(t)^{k-1} - P(S=0)) dt,   M(t) = E_q[e^{-t w(X)}],
by the trapezoid rule in log t with every e^{-t w} evaluated (V x T exponentials). The registry runs the fast
twin, rules/fast/khisti_lazy.py (`FAST`: r fitted per log-weight bin, most tests decided from two bounds on
r(y), the residual token drawn by rejection from p), which tests/verify/test_fast_rules.py holds to the same
selections, tests, verdicts, rows and exact law.

Conventions, applied identically by the selection and by both law computations (so they define a slightly
different, equally lossless selection rule rather than an approximation): weights w <= W_LO count as 0 (as
do p/q off q's support and a ratio that overflows), capped at W_CAP above; when every candidate has weight 0
the first candidate is selected. A weight above W_HI is selected whenever drafted (E[w/(w+S)] = 1 up to
(k-1)/w < 1e-15; such tokens have q < 1e-16). q(y) = 0 gives r(y) = 0: such a candidate is never accepted.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import replace

import torch

from decoding.verify.rules.common import Event, Final, Test, Update, prepare, run_chain
from decoding.verify.rules.fast import khisti_lazy
from decoding.verify.sampling import draw, final_residual
from decoding.verify.verdict import NodeVerdict, threshold_of

FAST = khisti_lazy  # what the registry runs (Verifier.from_rule)

W_LO = 1e-14  # weights at or below count as 0
W_HI = 1e16  # weights above are selected whenever drafted
W_CAP = 1e300  # weights are capped here to stay finite
ENUMERATION_LIMIT = 20_000  # tuples
STEP = 0.2  # trapezoid step in log t (error ~ e^{-pi^2 / STEP}, far below 1e-14)


def sir_weights(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """[V] importance weights w = p/q: 0 off q's support (p/0), where p/q overflows, and at or below W_LO."""
    w = p / q  # [V] inf or nan where q = 0 (or q < 1e-308 overflows)
    return torch.where(torch.isfinite(w) & (w > W_LO), w, 0.0).clamp(max=W_CAP)


# Step 1's beta_i = w(x_i) / sum_j w(x_j) (the first candidate when every weight is 0): one definition, shared
# with the fast twin, which imports nothing from this file.
selection = khisti_lazy.selection


def induced_law(p: torch.Tensor, q: torch.Tensor, k: int, method: str = "auto") -> torch.Tensor:
    """[V] r, the law of the SIR-selected token over k i.i.d. draws from q (p, q float64, normalised).
    method: "auto", "enumerate" (every tuple: small supports only) or "integrate" (the 1-D integral)."""
    w = sir_weights(p, q)  # [V]
    if k == 1:
        return q.clone()
    support = int(torch.count_nonzero(q))
    if method == "enumerate" or (method == "auto" and support**k <= ENUMERATION_LIMIT):
        return enumerated_law(q, w, k)
    return integrated_law(q, w, k)


enumerated_law = khisti_lazy.enumerated_law  # one definition: the fast rule enumerates small supports too


def integrated_law(q: torch.Tensor, w: torch.Tensor, k: int) -> torch.Tensor:
    """[V] r(y) = k q(y) E[w(y)/(w(y)+S)] by the integral above (not renormalised: its total checks it).
    Weight 0 is selected only when every draw has weight 0 (r = q P(S=0)); a weight above W_HI always."""
    zero, huge = (q > 0) & (w == 0), w > W_HI  # [V] each
    mid = (w > 0) & ~huge  # [V] the tokens the integral is taken for
    g_inf = float(q[zero].sum()) ** (k - 1)  # P(S = 0)
    r = torch.zeros_like(q)
    r[zero], r[huge] = q[zero] * g_inf, q[huge] * k
    if bool(mid.any()):
        r[mid] = k * q[mid] * _expected_share(q, w, mid, k, g_inf)
    return r


def _expected_share(q: torch.Tensor, w: torch.Tensor, mid: torch.Tensor, k: int, g_inf: float) -> torch.Tensor:
    """[n] E[a/(a+S)] at every weight a of `mid`: the trapezoid sum in tau = log t over a grid that spans every
    token's bump (t a from 1e-19 to 60), sum_i STEP t_i a e^{-t_i a} (M(t_i)^{k-1} - P(S=0)) + P(S=0)."""
    a, q_mid = w[mid], q[mid]  # [n] each
    z = float(q[(q > 0) & (w == 0)].sum())  # q-mass of the weight-0 tokens: M(inf)
    log_a = torch.log(a)  # [n]
    start, stop = math.log(1e-19) - float(log_a.max()), math.log(60.0) - float(log_a.min())
    t = torch.exp(torch.arange(start, stop + STEP, STEP, dtype=torch.float64))  # [T]
    decay = torch.exp(-t[:, None] * a[None, :])  # [T, n] e^{-t a}
    laplace = z + decay @ q_mid  # [T] M(t)
    bump = STEP * t * (laplace ** (k - 1) - g_inf)  # [T]
    return g_inf + a * (decay.T @ bump)  # [n]


def verify(p: torch.Tensor, q: torch.Tensor, candidates: Sequence[int], generator: torch.Generator) -> NodeVerdict:
    """Step 1: select one candidate by its importance weight. Step 2: SD of it against its induced law r."""
    p, q, xs = prepare(p, q, candidates)
    beta = selection(sir_weights(p, q)[xs])  # [k]
    chosen = draw(beta, generator)
    r = induced_law(p, q, len(xs))  # [V]
    verdict = run_chain(_sd(p, r, xs, chosen), xs, generator)
    note = f"SIR selected candidate {chosen} (token {xs[chosen]}) with probability {float(beta[chosen]):.6g}"
    return replace(verdict, notes=(note,) + verdict.notes)


def _sd(p: torch.Tensor, r: torch.Tensor, xs: Sequence[int], chosen: int) -> Iterator[Event]:
    """SD of the selected y against r: accept if u <= p(y)/r(y), else a token from norm((p - r)_+)."""
    y = xs[chosen]
    r_y = float(r[y])
    note = f"candidate {chosen} (token {y}) has r_beta(y) = 0 (q(y) = 0): skipped" if not r_y > 0 else ""
    yield Test(chosen, y, float(p[y]), r_y, "p(y)/r_beta(y)", note=note)
    rest = _residual(p, r)  # [V]
    yield Update(rest)
    yield Final(rest)


def conditional(p: torch.Tensor, q: torch.Tensor, candidates: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """accept[i] = beta_i min(1, p(x_i)/r(x_i)); residual = norm((p - r)_+) [V] (p when it holds no mass)."""
    p, q, xs = prepare(p, q, candidates)
    beta = selection(sir_weights(p, q)[xs])  # [k]
    r = induced_law(p, q, len(xs))  # [V]
    passes = torch.tensor([threshold_of(float(p[x]), float(r[x])) for x in xs], dtype=torch.float64)  # [k]
    accept = beta * passes  # [k]
    if float(accept.sum()) >= 1.0:
        return accept, torch.zeros_like(p)
    return accept, _residual(p, r)


def _residual(p: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    """norm((p - r)_+) [V]; p when it holds no mass (rejection then has probability ~0)."""
    return final_residual((p - r).clamp(min=0.0), p)


def acceptance(p: torch.Tensor, q: torch.Tensor, k: int) -> float:
    """alpha = sum_y min(p(y), r(y)), r the selected token's induced law."""
    return float(torch.minimum(p, induced_law(p, q, k)).sum())
