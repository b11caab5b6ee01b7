"""Gumbel-max list sampling (GLS; Rowan, Phan, Khisti 2025, arXiv 2506.05632 §3 Alg. 1) and its one-draft
case, drafter-invariant speculative decoding (DISD; Daliri, Musco, Suresh 2024, arXiv 2408.07978),
docs/verifiers.md §17.

The node's K drafts and its target token come from ONE set of shared exponentials E [K, V]
(verify/races/gumbel.py): X_k = argmin_j E[k, j] / q_j, Y = argmin_{k, j} E[k, j] / p_j. Accept iff Y is a
draft (the first draft equal to Y); always emit Y. Y ~ p whatever the drafts, so the rule is lossless, and Y
does not depend on q at all: with the run's per-node keyed generators (verify/node_keys.py), a one-draft run
emits the same text with any draft model.

`verify` reads E from its generator. When the drafts are what E gives (the keyed run: drafting and verify read
the node's generator from the start), Y is the race's winner. Otherwise (drafts from another source, e.g.
a test's or compare's own draws), E is independent of the drafts, and Y comes from exponentials redrawn GIVEN
the drafts (`gumbel_race.exponentials_given`, O(K V)): Y then has its exact law given the drafts without that law
being computed (the K >= 2 law is a 1-D integral per token, built only where a view reads it: `conditional`, the
shown residual row). Using E's Y only when its drafts happen to match keeps that law (E given a match has the law
of the exponentials given those drafts), so the two routes are one and the same conditional law.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from decoding.verify.races import gumbel as gumbel_race
from decoding.verify.rules.common import NO_UNIFORM, prepare
from decoding.verify.sampling import draw, normalise
from decoding.verify.verdict import AcceptTest, LazyRow, NodeVerdict, ResidualUpdate

SHARED = "Y = argmin E/p from the exponentials that drew the drafts"
REDRAWN = ("the drafts are not this node's exponentials' drafts: Y from exponentials redrawn given them "
           "(its exact law given the drafts)")


def _joint(p: torch.Tensor, q: torch.Tensor, xs: list[int]) -> torch.Tensor:
    """[V] P(drafts = xs, Y = y); the drafts q could not have drawn (q(x) = 0) are left out of the race."""
    drawable = [x for x in xs if float(q[x]) > 0]
    return gumbel_race.joint(p, q, drawable) if drawable else p.clone()


def _law_of_y(p: torch.Tensor, q: torch.Tensor, xs: list[int]) -> torch.Tensor:
    """[V] the law of Y given the drafts: the joint over P(drafts), divided by its own sum (no absolute mass
    floor: a tuple of tiny probability still has a proper law)."""
    joint = _joint(p, q, xs)
    return joint / joint.sum()


def _first(xs: list[int], q: torch.Tensor) -> dict[int, int]:
    """token -> index of its first drawable draft (the one a match accepts)."""
    first: dict[int, int] = {}
    for i, x in enumerate(xs):
        if float(q[x]) > 0:
            first.setdefault(x, i)
    return first


def conditional(p: torch.Tensor, q: torch.Tensor, candidates: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """accept[i] = P(Y = x_i | drafts) for the first draft of each token (0 for repeats); residual = the law of
    Y given that Y is no draft (zeros when Y is always a draft)."""
    p, q, xs = prepare(p, q, candidates)
    law = _law_of_y(p, q, xs)  # [V]
    accept = torch.zeros(len(xs), dtype=torch.float64)
    first = _first(xs, q)
    for x, i in first.items():
        accept[i] = float(law[x])
    rest = law.clone()
    rest[list(first)] = 0.0
    return accept, normalise(rest)


def verify(p: torch.Tensor, q: torch.Tensor, candidates: Sequence[int], generator: torch.Generator) -> NodeVerdict:
    p, q, xs = prepare(p, q, candidates)
    y = _shared_target(p, q, xs, generator)
    note = SHARED if y is not None else REDRAWN
    if y is None:
        y = _redrawn(p, q, xs, generator)
    tests, notes = [], [note]
    for i, x in enumerate(xs):
        drawable = float(q[x]) > 0  # else skipped: q could not have drawn it (a warp mismatch)
        match = drawable and x == y  # the first drawable draft equal to Y (an earlier one would have returned)
        tests.append(AcceptTest(i, x, 1.0 if match else 0.0, 1.0, NO_UNIFORM, match, "[x = Y]"))
        if not drawable:
            notes.append(f"candidate {i} (token {x}) has q(x) = 0: skipped")
        if match:
            return NodeVerdict(i, y, tuple(tests), notes=tuple(notes))
    row = LazyRow(lambda: conditional(p, q, xs)[1])  # [V] the law of Y given no draft is Y, on first read
    updates = (ResidualUpdate(len(tests) - 1, row, note="law of Y given that Y is no draft"),)
    return NodeVerdict(None, y, tuple(tests), updates, notes=tuple(notes))


def _shared_target(p: torch.Tensor, q: torch.Tensor, xs: list[int], generator: torch.Generator) -> int | None:
    """Y from the node's exponentials when their drafts are `xs` (the keyed run), else None. The rows are read one
    at a time (the generator gives the same E row by row as at once, tests/verify/test_gls_redrawn.py), so drafts
    from elsewhere are told apart after one row of V, not K."""
    rows = []
    for x in xs:
        row = gumbel_race.exponentials(generator, 1, p.shape[0])  # [1, V]
        if int(gumbel_race.race(row, q)[0]) != x:
            return None
        rows.append(row)
    return gumbel_race.target(torch.cat(rows), p)


def _redrawn(p: torch.Tensor, q: torch.Tensor, xs: list[int], generator: torch.Generator) -> int:
    """Y from exponentials drawn given the drawable drafts (a draft q could not draw is out of the race, as in
    `_joint`; none drawable: Y ~ p), each token's row minimum drawn directly (gumbel_race.target_given)."""
    drawable = [x for x in xs if float(q[x]) > 0]
    if not drawable:
        return draw(p, generator)
    return gumbel_race.target_given(generator, p, q, drawable)


def bonus(p: torch.Tensor, generator: torch.Generator) -> int:
    """A leaf's token: Y of a one-row race (the token a single draft here would have been tested against), so
    the bonus too depends only on the node's key and p."""
    p = p.detach().to(device="cpu", dtype=torch.float64)
    return gumbel_race.target(gumbel_race.exponentials(generator, 1, p.shape[0]), p)


def acceptance(p: torch.Tensor, q: torch.Tensor, k: int) -> float:
    """P(Y is a draft): K = 1 is Σ_y 1 / Σ_j max(q_j/q_y, p_j/p_y) (DISD); K ≥ 2 a 1-D integral (gumbel_race)."""
    return gumbel_race.acceptance(p, q, k)
