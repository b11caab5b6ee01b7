"""Exact acceptance of each verifier at one node, under the verifier's own candidate law.

acceptance(key, p, q, k) = P(the emitted token is one of the k candidates) for registry entry `key`,
averaged over the candidate law and the verifier's coins (docs/verifiers.md §0.1). p = target, q = draft.

Routes, best first (the returned Acceptance names the one taken):
  closed_form  the registry entry's `acceptance`, defined next to its rule in rules/<key>.py (any V);
  enumeration  exact sums over candidate tuples: theory_wor's sum over draft prefixes for rrs_wor
               (any V when affordable), or the registry's `conditional` mixed over
               `laws.enumerate_tuples` (small V, entries without a closed form);
  monte_carlo  an unbiased sample mean with its standard error (rrs_wor with k ≥ 3 over a large
               support: only the prefixes outside the exactly summed head are sampled).

Only generic routes live here; a verifier's own formula lives in its rule module. The
optimal-transport bound and the membership bound live in optimal.py and are re-exported here.
"""

from __future__ import annotations

import math

import torch

from decoding.verify import laws
from decoding.verify.entry import Verifier
from decoding.verify.optimal import as_law, inclusion_probabilities, membership_bound, optimal_acceptance
from decoding.verify.registry import lookup
from decoding.verify.sampling import make_generator
from decoding.verify.theory.acceptance import METHODS, Acceptance
from decoding.verify.theory.wor import rrs_wor_acceptance

__all__ = [
    "METHODS",
    "Acceptance",
    "acceptance",
    "as_law",
    "enumerated_acceptance",
    "inclusion_probabilities",
    "membership_bound",
    "monte_carlo_acceptance",
    "optimal_acceptance",
    "output_law",
]

MAX_TUPLES = 20_000  # above this many candidate tuples, the registry route samples instead of enumerating
RRS_WOR_SAMPLES = 4096  # sampled prefixes (vectorised, cheap) for the part of rrs_wor not summed exactly
REGISTRY_SAMPLES = 256  # sampled tuples, one `conditional` call each


def _f64(t: torch.Tensor) -> torch.Tensor:
    return t.detach().to(device="cpu", dtype=torch.float64)


# ---------------------------------------------------------------------------------------------
# Registry routes: exact enumeration and Monte Carlo over the entry's own law
# ---------------------------------------------------------------------------------------------


def _entry(key: str | Verifier) -> Verifier:
    """The registry entry `key`, or the entry itself (one configured with parameters: fuzzy's threshold)."""
    if isinstance(key, Verifier):
        return key
    return lookup(key)


def n_tuples(law: str | laws.Law, V: int, k: int) -> int:
    """How many ordered tuples `laws.enumerate_tuples` walks through (before dropping zero weights)."""
    return laws.get(law).count(V, k)


def enumerated_acceptance(key: str | Verifier, p: torch.Tensor, q: torch.Tensor, k: int) -> float:
    """α = Σ_x̄ Q(x̄) Σ_i accept_i(x̄): the registry's `conditional` mixed over every tuple of its law."""
    entry = _entry(key)
    entry.check_k(k)
    p, q = as_law(p), as_law(q)
    total = 0.0
    for cands, prob in laws.enumerate_tuples(entry.law, q, k):
        accept, _ = entry.conditional(p, q, list(cands))  # [k], [V]
        total += prob * float(accept.sum())
    return total


def output_law(key: str | Verifier, p: torch.Tensor, q: torch.Tensor, k: int) -> torch.Tensor:
    """Exact law [V] of the emitted token: Σ_x̄ Q(x̄) [Σ_i accept_i δ_{x_i} + (1 − Σ_i accept_i) residual].

    Equals p for every lossless verifier (docs/verifiers.md §11.1); small V only.
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
    key: str | Verifier, p: torch.Tensor, q: torch.Tensor, k: int, generator: torch.Generator, samples: int
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
    key: str | Verifier,
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
    entry = _entry(key)
    if entry.acceptance is not None:
        return Acceptance(_clip(entry.acceptance(p, q, k)), 0.0, "closed_form")
    generator = make_generator(0) if generator is None else generator
    if entry.name == "rrs_wor":  # no closed form, but an exact sum over draft prefixes at any V (theory_wor)
        return rrs_wor_acceptance(p, q, k, generator=generator, samples=samples or RRS_WOR_SAMPLES)
    return registry_acceptance(key, p, q, k, generator=generator, samples=samples or REGISTRY_SAMPLES)


def registry_acceptance(
    key: str | Verifier, p: torch.Tensor, q: torch.Tensor, k: int, *, generator: torch.Generator, samples: int
) -> Acceptance:
    """Enumeration when the law has at most MAX_TUPLES tuples, else Monte Carlo."""
    entry = _entry(key)
    if n_tuples(entry.law, p.shape[0], k) <= MAX_TUPLES:
        return Acceptance(_clip(enumerated_acceptance(key, p, q, k)), 0.0, "enumeration")
    return monte_carlo_acceptance(key, p, q, k, generator, samples)


def _check(key: str | Verifier, p: torch.Tensor, q: torch.Tensor, k: int) -> None:
    if p.dim() != 1 or p.shape != q.shape:
        raise ValueError(f"p and q must be 1-D tensors of the same length, got {tuple(p.shape)}, {tuple(q.shape)}")
    entry = _entry(key)  # the registry is the one source of each key's law and candidate bound
    entry.check_k(k)
    laws.check_k(entry.law, p, k)


def _clip(x: float) -> float:
    return min(1.0, max(0.0, x))
