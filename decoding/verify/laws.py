"""Candidate laws: how the k children of a node are drawn from q, as objects.

A `Law` knows everything about its draws that does not depend on a verifier: how to sample k
candidates (`sample`), every ordered tuple with its exact probability (`enumerate`, the oracle of
the exactness tests and of `theory`; small V only), how many tuples that walk visits (`count`),
which k it can produce (`check_k`) and the inclusion probabilities P(x ∈ x̄) (`inclusion`, the
membership bound's input). One instance per law; `get(name)` looks one up, `str(law)` is its name,
which is what traces and the JSON keep. Every law returns candidates in draw order, the order
verifiers read them (docs/verifiers.md, "Candidate laws").
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator

import torch

from decoding.verify.races import gumbel as gumbel_race
from decoding.verify.races.without_replacement import wor_inclusion
from decoding.verify.sampling import draw

Tuples = Iterator[tuple[tuple[int, ...], float]]


def top_order(q: torch.Tensor, m: int | None = None) -> list[int]:
    """The m most probable token ids under q (all when m is None), by decreasing q, ties by lower id.

    Uses topk + a tie fix rather than a full sort: at V = 49152 a stable sort costs milliseconds. topk takes one
    more than m: where the (m+1)-th is below the m-th, the top m are exactly topk's and only they are ordered;
    a tie across the m-th place scans q for the tied ids (the lowest ones go in). Each T = 0 drafted node calls
    this: 0.17 ms a call with the scan, about a third without, at V = 49152 on one AMD EPYC core.
    """
    q = q.to(torch.float64)
    V = q.shape[0]
    m = V if m is None else min(m, V)
    if m == 0:
        return []
    values, ids = torch.topk(q, min(m + 1, V))  # [m + 1] (or [V]), decreasing
    threshold = values[m - 1]
    if m < V and values[m] == threshold:  # a tie across the m-th place: which tied ids go in is by id
        above = torch.nonzero(q > threshold).flatten()  # strictly more probable: all of them are in
        ties = torch.nonzero(q == threshold).flatten()[: m - above.shape[0]]
        chosen = torch.cat([above, ties])
    else:
        chosen = ids[:m]
    chosen = torch.sort(chosen).values  # ids ascending, so the stable sort below keeps lower ids first on ties
    return [int(i) for i in chosen[torch.sort(-q[chosen], stable=True).indices]]


def iid_hit(mass: torch.Tensor, k: int) -> torch.Tensor:
    """1 − (1 − mass)^k: some of k i.i.d. draws lands in a set of this mass (expm1/log1p: exact tails)."""
    return -torch.expm1(k * torch.log1p(-mass))


def hub(q: torch.Tensor) -> int:
    """The SpecHub hub: argmax q, lowest id on ties (torch.argmax returns the first maximum)."""
    return int(torch.argmax(q))


def excluding_weights(q: torch.Tensor, excluded: list[int]) -> torch.Tensor:
    """Weights of q restricted to tokens not in `excluded` ([V] float64); uniform over them when that mass is 0."""
    w = q.to(torch.float64).clone()
    w[excluded] = 0.0
    if not float(w.sum()) > 0:
        w = torch.ones_like(w)
        w[excluded] = 0.0
    return w


def within_support(q: torch.Tensor, k: int) -> int:
    """min(k, the number of tokens q gives positive probability), at least 1: the width of a node whose law draws
    distinct tokens. Past q's support such a law draws tokens q calls impossible: a one-hot row (prompt lookup's
    guess) drew <|endoftext|> and <|im_start|> as a top-3's runners-up, and a without-replacement draw a token
    uniform over the vocabulary. Each is a row of the verify that no verifier can accept above T = 0 and only
    by chance at T = 0, and a node drawn from fewer candidates is verified exactly as the law with that k."""
    return max(1, min(k, int((q > 0).sum())))


def _draw_excluding(q: torch.Tensor, excluded: list[int], generator: torch.Generator) -> int:
    """x ~ q restricted to tokens not in `excluded`; uniform over them when that mass is 0."""
    return draw(excluding_weights(q, excluded), generator)


def _restricted(q: torch.Tensor, excluded: list[int]) -> Iterator[tuple[int, float]]:
    """The law of _draw_excluding: q restricted to the rest, or uniform over it when it has no mass."""
    rest = [x for x in range(q.shape[0]) if x not in excluded]
    mass = sum(float(q[x]) for x in rest)
    for x in rest:
        prob = float(q[x]) / mass if mass > 0 else 1.0 / len(rest)
        if prob > 0:
            yield x, prob


def _fixed_plus_random(q: torch.Tensor, fixed: list[int]) -> torch.Tensor:
    """P(x ∈ x̄) [V] when the tuple is `fixed` plus one draw from q restricted to the rest.

    The rest is drawn from q(x)/(1 − q(T)), or uniformly when q(T) = 1 (_draw_excluding).
    """
    rest = torch.ones_like(q, dtype=torch.bool)
    rest[fixed] = False
    mass = float(q[rest].sum())  # summed over the rest, not 1 − q(T), to keep small masses exact
    if mass > 0:
        pi = torch.where(rest, q / mass, torch.zeros_like(q))
    else:
        pi = rest.to(q.dtype) / max(1.0, float(rest.sum()))
    pi[fixed] = 1.0
    return pi


class Law:
    """One candidate law. Subclasses fill in the draws; the checks and the name live here.

    distinct: the law never repeats a token (so k ≤ V); max_k: the largest k it is defined for;
    iid_compatible: i.i.d. draws from q are valid candidates for it (K independent draft sequences
    produce i.i.d. children, so only such laws can verify a K-sequence trie).
    keyed: the draws read randomness that the verifier reads again (gumbel: shared exponentials), so a run
    hands the draft and the verify of one node the same per-node generator (verify/node_keys.py).
    ranked: some candidates are q's top tokens by rank (top-k). At temperature 0 the draft's warped law is
    one-hot, with no second token to rank, so a run drafts such a law from the draft's untempered law
    (`draft_temperature`).
    """

    name: str = ""
    distinct: bool = True
    max_k: int | None = None
    iid_compatible: bool = False
    keyed: bool = False
    ranked: bool = False

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"laws.get({self.name!r})"

    def single_draw(self, q: torch.Tensor) -> torch.Tensor:
        """The law of one candidate when k = 1: q itself for every registry law; a law that bends q first (Saguaro
        sampling, verify/saguaro.py) returns the law it really draws from, which the k = 1 optimum reads."""
        return q

    def width(self, q: torch.Tensor, k: int) -> int:
        """How many candidates a node asks this law for when its shape says k: at most q's support for a law
        that draws distinct tokens (`within_support`), k for one that may repeat them (iid, gumbel)."""
        return within_support(q, k) if self.distinct else k

    def check_k(self, q: torch.Tensor, k: int) -> None:
        """Refuse a candidate count the law cannot produce, with a readable message."""
        if k < 1:
            raise ValueError(f"need at least one candidate, got k={k}")
        if self.max_k is not None and k > self.max_k:
            raise ValueError(f"the {self.name} law is defined for k <= {self.max_k} candidates, got k={k}")
        if self.distinct and k > q.shape[-1]:
            raise ValueError(f"law {self.name!r} draws distinct tokens: k={k} exceeds the vocabulary ({q.shape[-1]})")

    def sample(self, q: torch.Tensor, k: int, generator: torch.Generator) -> list[int]:
        """k candidates drawn from q [V], in draw order."""
        self.check_k(q, k)
        return self._sample(q, k, generator)

    def enumerate(self, q: torch.Tensor, k: int) -> Tuples:
        """Every ordered candidate tuple with its probability (probabilities sum to 1)."""
        self.check_k(q, k)
        return self._enumerate(q.to(torch.float64), k)

    def inclusion(self, q: torch.Tensor, k: int) -> torch.Tensor:
        """π(x) = P(x ∈ x̄) [V] for k candidates from q (q float64, normalised)."""
        self.check_k(q, k)
        return self._inclusion(q, k)

    def count(self, V: int, k: int) -> int:
        """How many ordered tuples `enumerate` walks through (before dropping zero weights)."""
        raise NotImplementedError

    def _sample(self, q: torch.Tensor, k: int, generator: torch.Generator) -> list[int]:
        raise NotImplementedError

    def _enumerate(self, q: torch.Tensor, k: int) -> Tuples:
        raise NotImplementedError

    def _inclusion(self, q: torch.Tensor, k: int) -> torch.Tensor:
        raise NotImplementedError


class IID(Law):
    """k independent draws from q; repeats allowed."""

    name, distinct, iid_compatible = "iid", False, True

    def count(self, V: int, k: int) -> int:
        return V**k

    def _sample(self, q, k, generator):
        return [draw(q, generator) for _ in range(k)]

    def _enumerate(self, q, k):
        for xs in itertools.product(range(q.shape[0]), repeat=k):
            prob = math.prod(float(q[x]) for x in xs)
            if prob > 0:
                yield xs, prob

    def _inclusion(self, q, k):
        return iid_hit(q.clamp(max=1.0), k)


class Gumbel(IID):
    """GLS's drafts: row k of K rows of shared Exp(1) variables E [K, V] gives X_k = argmin_j E[k, j] / q_j.

    Marginally K i.i.d. draws from q (so enumerate, count and inclusion are the i.i.d. law's); what differs
    is that the verifier reads the same E again from the node's generator (docs/verifiers.md §17)."""

    name, keyed = "gumbel", True

    def _sample(self, q, k, generator):
        return gumbel_race.drafts(gumbel_race.exponentials(generator, k, q.shape[0]), q.to(torch.float64))


class WithoutReplacement(Law):
    """Sequential draws from q restricted to the undrawn tokens; uniform on them once q's support is used up."""

    name = "without_replacement"

    def count(self, V: int, k: int) -> int:
        return math.perm(V, k)

    def _sample(self, q, k, generator):
        drawn: list[int] = []
        for _ in range(k):
            drawn.append(_draw_excluding(q, drawn, generator))
        return drawn

    def _enumerate(self, q, k, prefix: tuple[int, ...] = (), prob: float = 1.0):
        if len(prefix) == k:
            yield prefix, prob
            return
        for x, px in _restricted(q, list(prefix)):
            yield from self._enumerate(q, k, prefix + (x,), prob * px)

    def _inclusion(self, q, k):
        return wor_inclusion(q, k)  # exact, through the exponential race (races/without_replacement.py)


class Hub(Law):
    """SpecHub's pair: x1 ~ q; then the hub a = argmax q, or (when x1 = a) a draw from q without a."""

    name, max_k = "hub", 2

    def count(self, V: int, k: int) -> int:
        return 2 * V

    def _sample(self, q, k, generator):
        a, x1 = hub(q), draw(q, generator)
        if k == 1:
            return [x1]
        return [x1, _draw_excluding(q, [a], generator)] if x1 == a else [x1, a]

    def _enumerate(self, q, k):
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

    def _inclusion(self, q, k):
        return q.clone() if k == 1 else _fixed_plus_random(q, top_order(q, 1))


class TopkPlusRandom(Law):
    """Hu et al.'s greedy draft set: the top-(k−1) tokens of q plus one draw from q without them."""

    name, ranked = "topk_plus_random", True

    def count(self, V: int, k: int) -> int:
        return 2 * V

    def _sample(self, q, k, generator):
        top = top_order(q, k - 1)
        return top + [_draw_excluding(q, top, generator)]

    def _enumerate(self, q, k):
        top = top_order(q, k - 1)
        for x, prob in _restricted(q, top):
            yield tuple(top) + (x,), prob

    def _inclusion(self, q, k):
        return _fixed_plus_random(q, top_order(q, k - 1))


class TopK(Law):
    """The deterministic top-k of q. "any" is this law for verifiers valid for any candidate set."""

    ranked = True

    def __init__(self, name: str, iid_compatible: bool) -> None:
        self.name, self.iid_compatible = name, iid_compatible

    def count(self, V: int, k: int) -> int:
        return 1

    def _sample(self, q, k, generator):
        return top_order(q, k)

    def _enumerate(self, q, k):
        yield tuple(top_order(q, k)), 1.0

    def _inclusion(self, q, k):
        pi = torch.zeros_like(q)
        pi[top_order(q, k)] = 1.0
        return pi


IID_LAW = IID()
GUMBEL = Gumbel()
WITHOUT_REPLACEMENT = WithoutReplacement()
HUB = Hub()
TOPK_PLUS_RANDOM = TopkPlusRandom()
TOPK = TopK("topk", iid_compatible=False)
ANY = TopK("any", iid_compatible=True)  # drawn as top-k, but i.i.d. draws are valid candidates too

REGISTRY: dict[str, Law] = {
    law.name: law for law in (IID_LAW, WITHOUT_REPLACEMENT, HUB, TOPK_PLUS_RANDOM, TOPK, ANY, GUMBEL)
}
LAWS = tuple(REGISTRY)  # the names, a public contract (traces, CLI help)


def draft_temperature(law: str | Law, temperature: float) -> float:
    """The temperature a draft's q is warped with for candidates of `law` when the target's is `temperature`.

    The target's, except at temperature 0 for a ranked law: there q would be one-hot (its argmax) and a
    top-k's other candidates would be the lowest token ids, all of q = 0. The draft's untempered law (1.0)
    ranks the same first token and real runners-up. Every lossless verifier is exact for any q it is given,
    and at temperature 0 p is one-hot: a candidate is accepted exactly when it is the target's argmax."""
    return 1.0 if temperature == 0 and get(law).ranked else temperature


def get(law: str | Law) -> Law:
    """The Law named `law` (a Law passes through), or ValueError listing the known names."""
    if isinstance(law, Law):
        return law
    if law not in REGISTRY:
        raise ValueError(f"unknown candidate law {law!r}; known: {', '.join(LAWS)}")
    return REGISTRY[law]


def sample(law: str | Law, q: torch.Tensor, k: int, generator: torch.Generator) -> list[int]:
    """k candidates drawn from q [V] with `law`, in draw order. "any" draws deterministic top-k."""
    return get(law).sample(q, k, generator)


def check_k(law: str | Law, q: torch.Tensor, k: int) -> None:
    """Refuse a candidate count the law cannot produce, with a readable message."""
    get(law).check_k(q, k)


def enumerate_tuples(law: str | Law, q: torch.Tensor, k: int) -> Tuples:
    """Every ordered candidate tuple of `law` with its probability (probabilities sum to 1)."""
    return get(law).enumerate(q, k)
