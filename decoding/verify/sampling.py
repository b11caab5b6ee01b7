"""The one place where logits become probabilities, plus residual and seeded-sampling helpers.

Target and draft go through the same `warp`, so `q` is exactly the law the candidates were
drawn from and `p` is the warped target that losslessness refers to (docs/verifiers.md §13.1).
"""

from __future__ import annotations

import torch

EPS_MASS = 1e-12  # a residual with less total mass than this holds no mass (float artefact)


def warp(logits: torch.Tensor, temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0) -> torch.Tensor:
    """Logits [..., V] -> float64 probabilities [..., V].

    temperature 0 gives the one-hot argmax (ties: lowest token id). top_k = 0 and top_p = 1 disable
    those filters. top-p keeps the smallest set of most probable tokens whose mass reaches top_p.
    """
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    if not 0.0 < top_p <= 1.0:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")
    if top_k < 0:
        raise ValueError(f"top_k must be >= 0, got {top_k}")
    logits = logits.to(torch.float64)
    if temperature == 0:
        return one_hot_argmax(logits)
    logits = logits / temperature
    if top_k and top_k < logits.shape[-1]:
        kth = torch.topk(logits, top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = torch.softmax(logits, dim=-1)
    if top_p < 1.0:
        probs = _top_p_filter(probs, top_p)
    return probs


def one_hot_argmax(logits: torch.Tensor) -> torch.Tensor:
    """[..., V] -> one-hot float64 at the argmax (first index on ties)."""
    idx = torch.argmax(logits, dim=-1, keepdim=True)
    return torch.zeros(logits.shape, dtype=torch.float64).scatter_(-1, idx, 1.0)


def _top_p_filter(probs: torch.Tensor, top_p: float) -> torch.Tensor:
    sorted_p, order = torch.sort(probs, dim=-1, descending=True, stable=True)
    mass_before = torch.cumsum(sorted_p, dim=-1) - sorted_p  # mass of strictly more probable tokens
    keep_sorted = mass_before < top_p
    keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
    kept = probs * keep
    return kept / kept.sum(dim=-1, keepdim=True)


def positive_part(t: torch.Tensor) -> torch.Tensor:
    """(t)_+ elementwise."""
    return torch.clamp(t, min=0.0)


def normalise(v: torch.Tensor, fallback: torch.Tensor | None = None) -> torch.Tensor:
    """v / sum(v); if v holds (numerically) no mass, `fallback` (normalised), or all zeros."""
    total = float(v.sum())
    if total > EPS_MASS:
        return v / total
    if fallback is not None:
        return normalise(fallback)
    return torch.zeros_like(v)


def residual(t: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
    """norm((t - d)_+), all zeros when t <= d everywhere (then nothing is ever drawn from it)."""
    return normalise(positive_part(t - d))


def final_residual(r: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    """The law to draw from after every rejection: r normalised, or p when r holds no mass.

    r holds no mass only when rejection had probability ~0 (float artefacts, p = q), so any
    fallback keeps the output law; p is the natural one (docs/verifiers.md §2 pitfalls). A copy of p, so a
    verdict never aliases the caller's tensor; r itself when it is already normalised.
    """
    total = float(r.sum())
    if total > EPS_MASS:
        return r if abs(total - 1.0) <= 1e-12 else r / total
    return p.clone()


def normalised_residual_(r: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    """`final_residual` dividing IN PLACE (r must be a fresh tensor the caller owns): no second [V] tensor."""
    total = float(r.sum())
    if total > EPS_MASS:
        return r if abs(total - 1.0) <= 1e-12 else r.div_(total)
    return p.clone()


def normalised_(v: torch.Tensor) -> torch.Tensor:
    """v / sum(v) IN PLACE (v must be a fresh tensor the caller owns); zeros when it holds no mass.
    Multiplies by 1/sum: a [V] division costs about twice the multiply here (docs/speed.md, "Measurements the
    code's comments cite") and differs from it by at most one rounding (relative 1e-16), far below every
    tolerance."""
    total = float(v.sum())
    return v.mul_(1.0 / total) if total > EPS_MASS else v.zero_()


def residual_into(t: torch.Tensor, d: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """norm((t - d)_+) [V], zeros when it holds no mass: `residual` without extra [V] copies.
    out: a fresh [V] row to write it into (a `Rows` row), else a new tensor."""
    return normalised_(torch.sub(t, d, out=out).clamp_(min=0.0))


def uniform(generator: torch.Generator) -> float:
    """One Uniform[0, 1) draw from the generator."""
    return float(torch.rand((), generator=generator, dtype=torch.float64))


def draw(weights: torch.Tensor, generator: torch.Generator) -> int:
    """Index drawn with probability proportional to the non-negative `weights` [V].

    Inverse CDF on one uniform: exact for float64 weights, never returns a zero-weight index.
    Raises ValueError when the weights hold no mass.
    """
    cdf = torch.cumsum(weights.to(torch.float64), dim=0)
    total = float(cdf[-1])
    if not total > 0:
        raise ValueError("cannot draw from weights with no mass")
    x = uniform(generator) * total
    idx = int(torch.searchsorted(cdf, torch.tensor([x], dtype=torch.float64), right=True)[0])
    return min(idx, weights.shape[0] - 1)


def make_generator(seed: int) -> torch.Generator:
    """A CPU generator seeded once; all randomness of a run flows from it."""
    g = torch.Generator(device="cpu")
    g.manual_seed(int(seed))
    return g
