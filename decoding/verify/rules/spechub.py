"""SpecHub (Sun, Zhou, Chen, Sun; EMNLP 2024), docs/verifiers.md §6.3.

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
from typing import NamedTuple

import torch

from decoding.verify import laws
from decoding.verify.rules import sd
from decoding.verify.rules.common import Event, Final, Test, ratio_test, restricted
from decoding.verify.sampling import normalised_residual_


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


class HubMasses(NamedTuple):
    """The transport quantities of the hub pair law (all zero at the hub a)."""

    q_ai: torch.Tensor  # [V] Q(a, i) = q(a) q'(i)
    p1: torch.Tensor  # [V] target mass left for i after its (i, a) use: (p - q)_+
    r_ai: float  # leftover draft mass of the (a, .) pairs: sum (Q(a, i) - p1(i))_+
    r_ia: float  # leftover draft mass of the (., a) pairs: sum over i != a of (q(i) - p(i))_+
    residual: torch.Tensor  # [V] (p1 - Q(a, .))_+, unnormalised: the law of y when both tests fail


def _masses(p: torch.Tensor, q: torch.Tensor, a: int) -> HubMasses:
    """All of them in about a dozen [V] passes, each temporary reused in place (this runs per node)."""
    diff = p - q  # [V]
    diff[a] = 0.0  # the hub takes part in no (p - q) term
    p1 = diff.clamp(min=0.0)  # [V] (p - q)_+ off the hub
    r_ia = float(diff.neg_().clamp_(min=0.0).sum())  # sum over i != a of (q - p)_+
    q_ai = _hub_partners(q, a)  # [V]
    gap = q_ai - p1  # [V]
    r_ai = float(torch.clamp(gap, min=0.0, out=diff).sum())  # diff's memory reused: no fresh [V] tensor
    return HubMasses(q_ai, p1, r_ai, r_ia, gap.neg_().clamp_(min=0.0))


def _hub_partners(q: torch.Tensor, a: int) -> torch.Tensor:
    """[V] Q(a, i) = q(a) q'(i): q' from the non-hub masses (stable when q(a) -> 1), uniform off the hub
    when q is one-hot (laws.sample's rule; `restricted` with fewer passes)."""
    rest = q.clone()  # [V]
    rest[a] = 0.0
    total = float(rest.sum())
    if not total > 0:
        return float(q[a]) * restricted(q, [a])
    return rest.mul_(float(q[a]) / total)


def chain(p: torch.Tensor, q: torch.Tensor, xs: Sequence[int]) -> Iterator[Event]:
    if len(xs) == 1:
        yield from sd.chain(p, q, xs)
        return
    if len(xs) != 2:
        raise ValueError(f"SpecHub is defined for one or two candidates, got {len(xs)}")
    a, i = hub_pair(q, xs)
    pa = float(p[a])
    if xs[0] == i:  # case (i, a)
        yield ratio_test(0, i, p, q)
        m = _masses(p, q, a)
        pa_left = pa - min(pa, m.r_ai)  # hub mass the (a, .) pairs did not serve
        yield Test(1, a, pa_left, m.r_ia, "pa'/R_ia")
    else:  # case (a, i)
        m = _masses(p, q, a)
        yield Test(1, i, float(m.p1[i]), float(m.q_ai[i]), "p1(x)/Qai(x)")
        yield Test(0, a, pa, m.r_ai, "p(a)/R_ai")
    yield Final(normalised_residual_(m.residual, p))  # zero at the hub


def acceptance(p: torch.Tensor, q: torch.Tensor, k: int) -> float:
    """Closed form (attains the hub law's membership bound): p(a) + sum_{i != a} min(p(i), q(i)/(1 - q(a)))."""
    return float(torch.minimum(p, laws.HUB.inclusion(q, k)).sum())
