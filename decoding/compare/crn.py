"""Candidate laws driven by given uniforms: common random numbers across laws.

Why: a compare step drafts one tree per candidate law. Driving every law with the SAME uniforms
at the same place of the tree shape makes the trees differ only where the laws force them to:
the first i.i.d. draw and the first without-replacement draw are the same token, a hub pair starts
with that token too, and so on. Each law consumes the uniforms exactly as `laws.sample` consumes
its generator (one uniform per random draw, in order), so with the generator's own uniforms
`sample(law, q, k, u)` equals `laws.sample(law, q, k, generator)`: the tests use that as the oracle.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from decoding.verify import laws


def inverse_cdf(weights: torch.Tensor, u: float) -> int:
    """The index `sampling.draw` returns for uniform u (same arithmetic): weights [V] >= 0."""
    cdf = torch.cumsum(weights.to(torch.float64), dim=0)  # [V]
    total = float(cdf[-1])
    if not total > 0:
        raise ValueError("cannot draw from weights with no mass")
    idx = int(torch.searchsorted(cdf, torch.tensor([u * total], dtype=torch.float64), right=True)[0])
    return min(idx, weights.shape[0] - 1)


def _excluding(q: torch.Tensor, excluded: list[int], u: float) -> int:
    """laws._draw_excluding with uniform u: q off `excluded`, uniform over the rest when that has no mass."""
    return inverse_cdf(laws.excluding_weights(q, excluded), u)


def _without_replacement(q: torch.Tensor, k: int, u: Sequence[float]) -> list[int]:
    drawn: list[int] = []
    for i in range(k):
        drawn.append(_excluding(q, drawn, u[i]))
    return drawn


def _hub(q: torch.Tensor, k: int, u: Sequence[float]) -> list[int]:
    a = laws.hub(q)
    x1 = inverse_cdf(q, u[0])
    if k == 1:
        return [x1]
    return [x1, _excluding(q, [a], u[1])] if x1 == a else [x1, a]


def _topk_plus_random(q: torch.Tensor, k: int, u: Sequence[float]) -> list[int]:
    top = laws.top_order(q, k - 1)
    return top + [_excluding(q, top, u[0])]


SAMPLERS = {
    "iid": lambda q, k, u: [inverse_cdf(q, u[i]) for i in range(k)],
    # gls's drafts are i.i.d. q in law; from one uniform each they are not its race's drafts, so its verify
    # draws Y from the exact law given them (rules/gls.py): the tree is still drawn from its own law
    "gumbel": lambda q, k, u: [inverse_cdf(q, u[i]) for i in range(k)],
    "without_replacement": _without_replacement,
    "hub": _hub,
    "topk_plus_random": _topk_plus_random,
    "topk": lambda q, k, u: laws.top_order(q, k),
    "any": lambda q, k, u: laws.top_order(q, k),
}


def sample(law: str, q: torch.Tensor, k: int, uniforms: Sequence[float]) -> list[int]:
    """k candidates from q [V] with `law`, in draw order, driven by `uniforms` (at least k of them)."""
    laws.check_k(law, q, k)
    if law not in SAMPLERS:
        raise ValueError(f"unknown candidate law {law!r}; known: {', '.join(SAMPLERS)}")
    if len(uniforms) < k:
        raise ValueError(f"need {k} uniforms for {k} candidates, got {len(uniforms)}")
    return SAMPLERS[law](q, k, list(uniforms))
