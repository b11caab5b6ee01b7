"""Exact acceptance of each verifier at one node, under the verifier's own candidate law.

acceptance(key, p, q, k) = P(the emitted token is one of the k candidates) for registry entry `key`,
averaged over the candidate law and the verifier's coins (VERIFIERS.md §0.1). p = target, q = draft.

Routes, best first (the returned Acceptance names the one taken):
  closed_form  the formulas of VERIFIERS.md §2, §3, §5.2, §6.4, §7.2, §7.3, §8, §9 (any V);
  enumeration  exact sums over candidate tuples: theory_wor's sum over draft prefixes for rrs_wor
               (any V when affordable), or the registry's `conditional` mixed over
               `laws.enumerate_tuples` (small V, entries without a closed form);
  monte_carlo  an unbiased sample mean with its standard error (rrs_wor with k ≥ 3 over a large
               support: only the prefixes outside the exactly summed head are sampled).

The optimal-transport bound and the membership bound live in decoding/optimal.py and are
re-exported here.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from decoding.verify import laws
from decoding.verify.optimal import as_law, inclusion_probabilities, membership_bound, optimal_acceptance, top_tokens
from decoding.verify.sampling import make_generator, positive_part, residual

__all__ = [
    "Acceptance",
    "acceptance",
    "as_law",
    "enumerated_acceptance",
    "inclusion_probabilities",
    "membership_bound",
    "monte_carlo_acceptance",
    "optimal_acceptance",
    "output_law",
    "spectr_acceptance",
    "spectr_rho",
]

METHODS = ("closed_form", "enumeration", "monte_carlo")
MAX_TUPLES = 20_000  # above this many candidate tuples, the registry route samples instead of enumerating
RRS_WOR_SAMPLES = 4096  # sampled prefixes (vectorised, cheap) for the part of rrs_wor not summed exactly
REGISTRY_SAMPLES = 256  # sampled tuples, one `conditional` call each
TYPICAL_EPS = 0.09  # Medusa posterior_threshold (VERIFIERS.md §9.2)
TYPICAL_DELTA = 0.3  # Medusa posterior_alpha


@dataclass(frozen=True)
class Acceptance:
    """Acceptance probability at one node; stderr is 0.0 unless method == "monte_carlo"."""

    value: float
    stderr: float
    method: str

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"unknown method {self.method!r}; known: {', '.join(METHODS)}")


def _f64(t: torch.Tensor) -> torch.Tensor:
    return t.detach().to(device="cpu", dtype=torch.float64)


# ---------------------------------------------------------------------------------------------
# Closed forms (each takes float64 p [V], q [V] and k; returns a float)
# ---------------------------------------------------------------------------------------------


def sd_acceptance(p: torch.Tensor, q: torch.Tensor, k: int) -> float:
    """Speculative sampling, one draft: α = Σ min(p, q) = 1 − TV(p, q)."""
    return float(torch.minimum(p, q).sum())


def rrs_acceptance(p: torch.Tensor, q: torch.Tensor, k: int) -> float:
    """Recursive rejection sampling with replacement (VERIFIERS.md §3).

    r_1 = p, r_{i+1} = norm((r_i − q)_+), 1 − α_i = Σ (r_i − q)_+;  α = 1 − Π_i (1 − α_i).
    The residual sequence does not depend on which token was rejected, so no tuple sum is needed.
    """
    r, stay = p, 1.0
    for _ in range(k):
        stay *= float(positive_part(r - q).sum())  # P(draw i rejected | all before rejected)
        if stay <= 0.0:
            break
        r = residual(r, q)  # [V]
    return 1.0 - stay


def _spectr_beta(p: torch.Tensor, q: torch.Tensor, rho: float) -> float:
    """β(ρ) = Σ min(q, p/ρ): the acceptance of one damped test p(x)/(ρ q(x))."""
    return float(torch.minimum(q, p / rho).sum())


def spectr_rho(p: torch.Tensor, q: torch.Tensor, k: int, iters: int = 200) -> float:
    """ρ* of K-SEQ (VERIFIERS.md §5.2): the least ρ ∈ [1, k] with f(ρ) = 1 − (1 − β)^k − ρβ ≤ 0.

    f is non-increasing and f(k) ≤ 0, so bisection converges; the upper end of the bracket is
    returned, so the result is always a valid (lossless) division factor.
    """
    p, q = _f64(p), _f64(q)

    def f(rho: float) -> float:
        beta = _spectr_beta(p, q, rho)
        return 1.0 - (1.0 - beta) ** k - rho * beta

    lo, hi = 1.0, float(k)
    if k == 1 or f(lo) <= 0.0:
        return lo
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if f(mid) <= 0.0:
            hi = mid
        else:
            lo = mid
    return hi


def spectr_acceptance(p: torch.Tensor, q: torch.Tensor, k: int, rho: float | None = None) -> float:
    """K-SEQ at division factor ρ (default ρ*): α = 1 − (1 − β(ρ))^k, which at ρ* is Σ min(p, ρ* q)."""
    rho = _spectr_rho_of_library(p, q, k) if rho is None else rho
    return 1.0 - (1.0 - _spectr_beta(p, q, rho)) ** k


def _spectr_rho_of_library(p: torch.Tensor, q: torch.Tensor, k: int) -> float:
    """The ρ the verifier itself uses (decoding/rules/spectr.py), so theory and verifier agree exactly."""
    try:
        from decoding.verify.rules.spectr import division_factor
    except ImportError:
        return spectr_rho(p, q, k)
    return float(division_factor(p, q, k))


def membership_acceptance(law: str) -> Callable[[torch.Tensor, torch.Tensor, int], float]:
    """Verifiers that attain the membership bound of their law: α = Σ min(p, P(x ∈ x̄)).

    SpecHub (hub law, §6.4): p(a) + Σ_{i≠a} min(p(i), q(i)/(1 − q(a))).
    Hu greedy (topk_plus_random, §7.3): p(T) + Σ_{x∉T} min(p(x), q(x)/(1 − q(T))).
    Both fall back, as the law does, to a uniform random token when q(T) = 1; k = 1 is SD.
    """

    def alpha(p: torch.Tensor, q: torch.Tensor, k: int) -> float:
        return float(torch.minimum(p, inclusion_probabilities(q, k, law)).sum())

    return alpha


def pointmass_acceptance(p: torch.Tensor, q: torch.Tensor, k: int) -> float:
    """Point-mass verification (§8) of the "any" law's deterministic set C = top-k(q): α = p(C)."""
    return float(p[top_tokens(q, k)].sum())


def greedy_acceptance(p: torch.Tensor, q: torch.Tensor, k: int) -> float:
    """Greedy token matching (§9.1): 1 if argmax p is a candidate, else 0."""
    return 1.0 if bool((top_tokens(q, k) == int(torch.argmax(p))).any()) else 0.0


def typical_threshold(p: torch.Tensor, eps: float = TYPICAL_EPS, delta: float = TYPICAL_DELTA) -> float:
    """Medusa's typical-acceptance threshold min(ε, δ·exp(−H(p))), H in nats with 0 log 0 = 0."""
    entropy = float(torch.special.entr(p).sum())
    return min(eps, delta * math.exp(-entropy))


def typical_acceptance(p: torch.Tensor, q: torch.Tensor, k: int) -> float:
    """Typical acceptance (§9.2): 1 if some candidate x has p(x) > min(ε, δ·exp(−H(p))), else 0.

    ε, δ and the entropy are the verifier library's (decoding/rules/typical.py) when it is present.
    """
    try:
        from decoding.verify.rules.typical import typical_threshold as threshold_of
    except ImportError:
        threshold_of = typical_threshold
    return 1.0 if bool((p[top_tokens(q, k)] > threshold_of(p)).any()) else 0.0


def khisti_acceptance(p: torch.Tensor, q: torch.Tensor, k: int) -> float:
    """SIR selection + SD (Khisti et al., §7.2): α = Σ_y min(p(y), r(y)) with r the selected token's law.

    r(y) = k q(y) E[w(y)/(w(y) + S)], w = p/q, S a sum of k−1 i.i.d. weights; it is the verifier
    library's `induced_law` (exact enumeration for small support, a 1-D quadrature good to ~1e-13
    otherwise), so theory and verifier use the very same r.
    """
    from decoding.verify.rules.khisti_is import induced_law

    return float(torch.minimum(p, induced_law(p, q, k)).sum())


ClosedForm = Callable[[torch.Tensor, torch.Tensor, int], float]

CLOSED_FORMS: dict[str, ClosedForm] = {
    "sd": sd_acceptance,
    "rrs": rrs_acceptance,
    "spectr": spectr_acceptance,
    "spechub": membership_acceptance("hub"),
    "hu_greedy": membership_acceptance("topk_plus_random"),
    "pointmass": pointmass_acceptance,
    "greedy": greedy_acceptance,
    "typical": typical_acceptance,
    "khisti_is": khisti_acceptance,
}



# ---------------------------------------------------------------------------------------------
# Registry routes: exact enumeration and Monte Carlo over the entry's own law
# ---------------------------------------------------------------------------------------------


def _entry(key: str):
    from decoding.verify.registry import VERIFIERS  # imported lazily: the registry imports many rule modules

    if key not in VERIFIERS:
        raise ValueError(f"unknown verifier {key!r}; choose one of: {', '.join(VERIFIERS)}")
    return VERIFIERS[key]


def n_tuples(law: str, V: int, k: int) -> int:
    """How many ordered tuples `laws.enumerate_tuples` walks through (before dropping zero weights)."""
    if law == "iid":
        return V**k
    if law == "without_replacement":
        return math.perm(V, k)
    if law in ("hub", "topk_plus_random"):
        return 2 * V
    return 1


def enumerated_acceptance(key: str, p: torch.Tensor, q: torch.Tensor, k: int) -> float:
    """α = Σ_x̄ Q(x̄) Σ_i accept_i(x̄): the registry's `conditional` mixed over every tuple of its law."""
    entry = _entry(key)
    entry.check_k(k)
    p, q = as_law(p), as_law(q)
    total = 0.0
    for cands, prob in laws.enumerate_tuples(entry.law, q, k):
        accept, _ = entry.conditional(p, q, list(cands))  # [k], [V]
        total += prob * float(accept.sum())
    return total


def output_law(key: str, p: torch.Tensor, q: torch.Tensor, k: int) -> torch.Tensor:
    """Exact law [V] of the emitted token: Σ_x̄ Q(x̄) [Σ_i accept_i δ_{x_i} + (1 − Σ_i accept_i) residual].

    Equals p for every lossless verifier (VERIFIERS.md §11.1); small V only.
    """
    entry = _entry(key)
    entry.check_k(k)
    p, q = as_law(p), as_law(q)
    out = torch.zeros_like(p)  # [V]
    for cands, prob in laws.enumerate_tuples(entry.law, q, k):
        accept, res = entry.conditional(p, q, list(cands))  # [k], [V]
        accept = _f64(accept)
        out.index_add_(0, torch.tensor(cands), prob * accept)
        out += prob * (1.0 - float(accept.sum())) * _f64(res)
    return out


def monte_carlo_acceptance(
    key: str, p: torch.Tensor, q: torch.Tensor, k: int, generator: torch.Generator, samples: int
) -> Acceptance:
    """Unbiased estimate: mean over sampled tuples of Σ_i accept_i(x̄) (exact given the tuple)."""
    entry = _entry(key)
    entry.check_k(k)
    p, q = as_law(p), as_law(q)
    values = torch.empty(samples, dtype=torch.float64)
    for j in range(samples):
        accept, _ = entry.conditional(p, q, entry.sample(q, k, generator))
        values[j] = float(accept.sum())
    return _mean_with_stderr(values)


def _mean_with_stderr(values: torch.Tensor) -> Acceptance:
    n = values.shape[0]
    stderr = float(values.std(unbiased=True)) / math.sqrt(n) if n > 1 else float("inf")
    return Acceptance(float(values.mean()), stderr, "monte_carlo")


# ---------------------------------------------------------------------------------------------
# The public entry point
# ---------------------------------------------------------------------------------------------


def acceptance(
    key: str,
    p: torch.Tensor,
    q: torch.Tensor,
    k: int,
    *,
    generator: torch.Generator | None = None,
    samples: int | None = None,
) -> Acceptance:
    """Exact P(accept) of verifier `key` with k candidates drawn by its own law from q [V], target p [V].

    `generator` and `samples` are used only when no exact route is affordable (rrs_wor with k ≥ 3
    over a large support, or a registry entry without a closed form and too many tuples); the
    default generator is seeded with 0, so results are reproducible.
    """
    p, q = as_law(p), as_law(q)
    _check(key, p, q, k)
    if key in CLOSED_FORMS:
        return Acceptance(_clip(CLOSED_FORMS[key](p, q, k)), 0.0, "closed_form")
    generator = make_generator(0) if generator is None else generator
    if key == "rrs_wor":
        from decoding.verify.theory_wor import rrs_wor_acceptance

        return rrs_wor_acceptance(p, q, k, generator=generator, samples=samples or RRS_WOR_SAMPLES)
    return registry_acceptance(key, p, q, k, generator=generator, samples=samples or REGISTRY_SAMPLES)


def registry_acceptance(
    key: str, p: torch.Tensor, q: torch.Tensor, k: int, *, generator: torch.Generator, samples: int
) -> Acceptance:
    """Enumeration when the law has at most MAX_TUPLES tuples, else Monte Carlo."""
    entry = _entry(key)
    if n_tuples(entry.law, p.shape[0], k) <= MAX_TUPLES:
        return Acceptance(_clip(enumerated_acceptance(key, p, q, k)), 0.0, "enumeration")
    return monte_carlo_acceptance(key, p, q, k, generator, samples)


def _check(key: str, p: torch.Tensor, q: torch.Tensor, k: int) -> None:
    if p.dim() != 1 or p.shape != q.shape:
        raise ValueError(f"p and q must be 1-D tensors of the same length, got {tuple(p.shape)}, {tuple(q.shape)}")
    entry = _entry(key)  # the registry is the one source of each key's law and candidate bound
    entry.check_k(k)
    laws.check_k(entry.law, p, k)


def _clip(x: float) -> float:
    return min(1.0, max(0.0, x))
