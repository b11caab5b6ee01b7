"""SpecHub (Sun, Zhou, Chen, Sun; EMNLP 2024), VERIFIERS.md §6.3.

Two candidates drawn as a hub pair, a = argmax q (the hub, lowest id on ties):
    x1 ~ q; if x1 = a then x2 ~ q restricted to V \\ {a}, else x2 = a.
Joint law: Q(i, a) = q(i) and Q(a, i) = q(a) q'(i), q' = q restricted to V \\ {a} (uniform there when
q is one-hot, as laws.sample draws it). The tests, in the authors' order:
    case (i, a): test i with p(i)/q(i)          -> child 1;  then a with pa'/R_ia  -> child 2
    case (a, i): test i with p1(i)/Qai(i)       -> child 2;  then a with p(a)/R_ai -> child 1
    else y ~ norm(r), r(j) = (p1(j) - Qai(j))_+ for j != a, r(a) = 0,
with p1 = (p - q)_+ off the hub, R_ai = sum (Qai - p1)_+, R_ia = sum (q - p)_+ off the hub,
pa' = p(a) - min(p(a), R_ai). It attains alpha = p(a) + sum_{i != a} min(p(i), q(i)/(1 - q(a))).

One candidate: plain SD (the first draft of a hub pair is ~ q). Candidates that are not a hub pair
(neither or both equal the hub) raise ValueError. q(a) -> 1 is handled by computing q' from the
non-hub masses (never 1 - q(a)); the authors' force-accept of a when p(a) > 1 - 1e-3 is not copied.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import torch

from decoding.rules import sd
from decoding.rules.common import Event, Final, Test, chain_law, final_residual, prepare, restricted, run_chain
from decoding.sampling import positive_part
from decoding.verdict import NodeVerdict


def hub_pair(q: torch.Tensor, xs: Sequence[int]) -> tuple[int, int]:
    """(a, i): the hub and the other candidate; ValueError when xs is not a hub pair."""
    a = int(torch.argmax(q))  # first maximum: laws.hub's tie rule
    first, second = xs
    if (first == a) == (second == a):
        raise ValueError(
            f"SpecHub needs a hub pair: exactly one of the two candidates {list(xs)} must be the hub "
            f"argmax q = {a} (draw them with the 'hub' law)"
        )
    return a, second if first == a else first


def _masses(p: torch.Tensor, q: torch.Tensor, a: int) -> dict:
    """The transport quantities of the hub pair law, off the hub unless named otherwise."""
    off = torch.ones_like(p, dtype=torch.bool)
    off[a] = False
    q_ai = float(q[a]) * restricted(q, ~off)  # [V] Q(a, i); zero at a
    p1 = positive_part(p - q).masked_fill(~off, 0.0)  # [V] target mass left for i after its (i, a) use
    r_ai = float(positive_part(q_ai - p1).sum())  # leftover draft mass of the (a, .) pairs
    r_ia = float(positive_part(q - p).masked_fill(~off, 0.0).sum())  # leftover mass of the (., a) pairs
    return {"q_ai": q_ai, "p1": p1, "r_ai": r_ai, "r_ia": r_ia}


def chain(p: torch.Tensor, q: torch.Tensor, xs: Sequence[int]) -> Iterator[Event]:
    if len(xs) == 1:
        yield from sd.chain(p, q, xs)
        return
    if len(xs) != 2:
        raise ValueError(f"SpecHub is defined for one or two candidates, got {len(xs)}")
    a, i = hub_pair(q, xs)
    pa = float(p[a])
    if xs[0] == i:  # case (i, a)
        yield Test(0, i, float(p[i]), float(q[i]), "p(x)/q(x)", note=sd.skip_note(0, i, q))
        m = _masses(p, q, a)
        pa_left = pa - min(pa, m["r_ai"])  # hub mass the (a, .) pairs did not serve
        yield Test(1, a, pa_left, m["r_ia"], "pa'/R_ia")
    else:  # case (a, i)
        m = _masses(p, q, a)
        yield Test(1, i, float(m["p1"][i]), float(m["q_ai"][i]), "p1(x)/Qai(x)")
        yield Test(0, a, pa, m["r_ai"], "p(a)/R_ai")
    yield Final(final_residual(positive_part(m["p1"] - m["q_ai"]), p))  # zero at the hub


def verify(p: torch.Tensor, q: torch.Tensor, candidates: Sequence[int], generator: torch.Generator) -> NodeVerdict:
    """SpecHub's two-test chain for a hub pair (SD for a single candidate)."""
    p, q, xs = prepare(p, q, candidates)
    return run_chain(chain(p, q, xs), xs, generator)


def conditional(p: torch.Tensor, q: torch.Tensor, candidates: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """Exact accept [k] and residual [V] for a hub pair (or one SD candidate)."""
    p, q, xs = prepare(p, q, candidates)
    return chain_law(chain(p, q, xs), xs, p.shape[0])
