"""Candidate laws: how the k children of a node are drawn from q, and their exact tuple probabilities.

Every law returns candidates in draw order, the order verifiers read them (VERIFIERS.md F5).
`enumerate_tuples` is the oracle used by the exactness tests and by `theory`: every ordered
tuple the law can produce, with its probability (small V only).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import torch

from decoding.verify.sampling import draw

LAWS = ("iid", "without_replacement", "hub", "topk_plus_random", "topk", "any")


def top_order(q: torch.Tensor, m: int | None = None) -> list[int]:
    """The m most probable token ids under q (all when m is None), by decreasing q, ties by lower id.

    Uses topk + a tie fix rather than a full sort: at V = 49152 a stable sort costs milliseconds.
    """
    q = q.to(torch.float64)
    V = q.shape[0]
    m = V if m is None else min(m, V)
    if m == 0:
        return []
    threshold = torch.topk(q, m).values[-1]
    above = torch.nonzero(q > threshold).flatten()  # strictly more probable: all of them are in
    above = above[torch.sort(-q[above], stable=True).indices]  # ids ascend, so ties keep lower id first
    ties = torch.nonzero(q == threshold).flatten()[: m - above.shape[0]]
    return [int(i) for i in torch.cat([above, ties])]


def hub(q: torch.Tensor) -> int:
    """The SpecHub hub: argmax q, lowest id on ties (torch.argmax returns the first maximum)."""
    return int(torch.argmax(q))


def _draw_excluding(q: torch.Tensor, excluded: list[int], generator: torch.Generator) -> int:
    """x ~ q restricted to tokens not in `excluded`; uniform over them when that mass is 0."""
    w = q.to(torch.float64).clone()
    w[excluded] = 0.0
    if not float(w.sum()) > 0:
        w = torch.ones_like(w)
        w[excluded] = 0.0
    return draw(w, generator)


def sample(law: str, q: torch.Tensor, k: int, generator: torch.Generator) -> list[int]:
    """k candidates drawn from q [V] with `law`, in draw order. "any" draws deterministic top-k."""
    check_k(law, q, k)
    if law == "iid":
        return [draw(q, generator) for _ in range(k)]
    if law == "without_replacement":
        drawn: list[int] = []
        for _ in range(k):
            drawn.append(_draw_excluding(q, drawn, generator))
        return drawn
    if law == "hub":
        a = hub(q)
        x1 = draw(q, generator)
        if k == 1:
            return [x1]
        return [x1, _draw_excluding(q, [a], generator)] if x1 == a else [x1, a]
    if law == "topk_plus_random":
        top = top_order(q, k - 1)
        return top + [_draw_excluding(q, top, generator)]
    if law in ("topk", "any"):
        return top_order(q, k)
    raise ValueError(f"unknown candidate law {law!r}; known: {', '.join(LAWS)}")


def check_k(law: str, q: torch.Tensor, k: int) -> None:
    """Refuse a candidate count the law cannot produce, with a readable message."""
    if k < 1:
        raise ValueError(f"need at least one candidate, got k={k}")
    if law == "hub" and k > 2:
        raise ValueError(f"the hub law (SpecHub) is defined for k <= 2 candidates, got k={k}")
    if law != "iid" and k > q.shape[-1]:
        raise ValueError(f"law {law!r} draws distinct tokens: k={k} exceeds the vocabulary ({q.shape[-1]})")


def enumerate_tuples(law: str, q: torch.Tensor, k: int) -> Iterator[tuple[tuple[int, ...], float]]:
    """Every ordered candidate tuple of `law` with its probability (probabilities sum to 1)."""
    check_k(law, q, k)
    q = q.to(torch.float64)
    V = q.shape[0]
    if law == "iid":
        for xs in itertools.product(range(V), repeat=k):
            prob = 1.0
            for x in xs:
                prob *= float(q[x])
            if prob > 0:
                yield xs, prob
    elif law == "without_replacement":
        yield from _enumerate_wor(q, k)
    elif law == "hub":
        yield from _enumerate_hub(q, k)
    elif law == "topk_plus_random":
        top = top_order(q, k - 1)
        for x, prob in _restricted(q, top):
            yield tuple(top) + (x,), prob
    elif law in ("topk", "any"):
        yield tuple(top_order(q, k)), 1.0
    else:
        raise ValueError(f"unknown candidate law {law!r}")


def _restricted(q: torch.Tensor, excluded: list[int]) -> Iterator[tuple[int, float]]:
    """The law of _draw_excluding: q restricted to the rest, or uniform over it when it has no mass."""
    rest = [x for x in range(q.shape[0]) if x not in excluded]
    mass = sum(float(q[x]) for x in rest)
    for x in rest:
        prob = float(q[x]) / mass if mass > 0 else 1.0 / len(rest)
        if prob > 0:
            yield x, prob


def _enumerate_wor(q: torch.Tensor, k: int, prefix: tuple[int, ...] = (), prob: float = 1.0):
    if len(prefix) == k:
        yield prefix, prob
        return
    for x, px in _restricted(q, list(prefix)):
        yield from _enumerate_wor(q, k, prefix + (x,), prob * px)


def _enumerate_hub(q: torch.Tensor, k: int):
    a = hub(q)
    for x1 in range(q.shape[0]):
        p1 = float(q[x1])
        if p1 <= 0:
            continue
        if k == 1:
            yield (x1,), p1
        elif x1 == a:
            for x2, p2 in _restricted(q, [a]):
                yield (x1, x2), p1 * p2
        else:
            yield (x1, a), p1
