"""GLS / DISD (docs/verifiers.md §17): the exact joint law of (drafts, Y), the one-draft closed form on three
preset languages, the keyed path (drafting and verify reading one node's exponentials) against the exact
acceptance, and the broken variant with independent exponentials for draft and target.

Losslessness by exact enumeration over every draft tuple is in test_verifiers_exact.py (gls is a lossless
registry entry); drafter invariance on a whole run is in tests/run/test_gls_invariance.py.
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import pytest
import torch

from decoding.verify import laws
from decoding.verify.node_keys import NodeKeys
from decoding.verify.races import gumbel as gumbel_race
from decoding.verify.registry import VERIFIERS
from decoding.verify.rules import gls
from decoding.verify.tree import DraftTree
from tests.verifier_oracles import adversarial_pairs, dirichlet_pair

F64 = torch.float64
LANGUAGES = Path(__file__).resolve().parents[2] / "assets" / "languages"
THREE = ("worked_example", "near_deterministic", "context3")


def _rows(name: str) -> list[tuple[str, torch.Tensor, torch.Tensor]]:
    """(context, p, q) for every context of a preset language that has both rows."""
    spec = json.loads((LANGUAGES / f"{name}.json").read_text())
    out = []
    for ctx, target in spec["target"].items():
        if ctx in spec["draft"]:
            p, q = torch.tensor(target, dtype=F64), torch.tensor(spec["draft"][ctx], dtype=F64)
            out.append((ctx, p / p.sum(), q / q.sum()))
    return out


def closed_form(p: torch.Tensor, q: torch.Tensor) -> float:
    """DISD's one-draft acceptance, written from the paper's formula: Σ_i 1 / Σ_j max(q_j/q_i, p_j/p_i)."""
    total = 0.0
    for i in range(p.shape[0]):
        if p[i] > 0 and q[i] > 0:
            total += 1.0 / sum(max(float(q[j] / q[i]), float(p[j] / p[i])) for j in range(p.shape[0]))
    return total


def enumerated(p: torch.Tensor, q: torch.Tensor, k: int) -> float:
    """Σ over draft tuples of P(tuple) Σ_i accept_i, from the entry's exact `conditional`."""
    entry = VERIFIERS["gls"]
    return sum(prob * float(entry.conditional(p, q, list(xs))[0].sum()) for xs, prob in laws.enumerate_tuples(
        entry.law, q, k))


def keyed_rate(p: torch.Tensor, q: torch.Tensor, k: int, n: int) -> float:
    """Acceptance frequency of the real path: one fresh keyed node per run, drafted and verified from its key."""
    entry, tree, hits = VERIFIERS["gls"], DraftTree.root(0), 0
    for seed in range(n):
        xs = entry.sample(q, k, NodeKeys(seed, [0]).generator(tree, 0))
        hits += entry.verify(p, q, xs, NodeKeys(seed, [0]).generator(tree, 0)).accepted is not None
    return hits / n


def independent_rate(p: torch.Tensor, q: torch.Tensor, k: int, n: int) -> float:
    """Broken variant: the drafts from one node's exponentials, Y = argmin E'/p from independent ones E'
    (another key), accepted iff Y is a draft. Y is still ~ p (so the output law stays p); the acceptance
    drops to P(Y in drafts) with Y independent of them."""
    tree, hits = DraftTree.root(0), 0
    for seed in range(n):
        xs = laws.GUMBEL.sample(q, k, NodeKeys(seed, [0]).generator(tree, 0))
        E = gumbel_race.exponentials(NodeKeys(seed + 10**6, [0]).generator(tree, 0), k, p.shape[0])
        hits += gumbel_race.target(E, p) in xs
    return hits / n


@pytest.mark.parametrize("name", THREE)
def test_one_draft_acceptance_is_the_closed_form_on_three_languages(name):
    for ctx, p, q in _rows(name):
        expected = closed_form(p, q)
        assert enumerated(p, q, 1) == pytest.approx(expected, abs=1e-12), (name, ctx)
        assert gls.acceptance(p, q, 1) == pytest.approx(expected, abs=1e-12), (name, ctx)


def test_joint_law_marginals_are_q_tuples_and_p():
    """Σ_y P(x̄, Y = y) = Π q(x_i) for every tuple and Σ_x̄ P(x̄, Y = ·) = p, for K = 1, 2, 3."""
    g = torch.Generator().manual_seed(5)
    cases = [dirichlet_pair(g, 5, c, s) for c, s in [(0.3, False), (1.0, True)]]
    cases += [(p, q) for _, p, q in adversarial_pairs(4)]
    for p, q in cases:
        for k in (1, 2, 3):
            drawable = [x for x in range(p.shape[0]) if q[x] > 0]
            total = torch.zeros_like(p)
            for xs in itertools.product(drawable, repeat=k):
                joint = gumbel_race.joint(p, q, list(xs))
                assert float(joint.sum()) == pytest.approx(math.prod(float(q[x]) for x in xs), rel=1e-10, abs=1e-15)
                assert float(joint.min()) >= -1e-16
                total += joint
            assert float((total - p).abs().max()) < 1e-12


def test_quadrature_matches_the_one_draft_closed_form():
    """The K >= 2 route (trapezoid in log t) run at K = 1 agrees with the closed form to 1e-14."""
    g = torch.Generator().manual_seed(9)
    for c in (0.2, 1.0, 4.0):
        p, q = dirichlet_pair(g, 7, c, False)
        b = gumbel_race.Breaks.of(p, q)
        for x in range(7):
            ts = gumbel_race._s_grid(1)
            quad = gumbel_race.STEP * (ts[:, None] * gumbel_race._density(p, q, [x], b, ts)).sum(0)
            assert float((quad - gumbel_race.joint_one(p, q, x, b)).abs().max()) < 1e-14


@pytest.mark.parametrize("k", [2, 3])
def test_acceptance_integral_matches_enumeration(k):
    g = torch.Generator().manual_seed(k)
    for c in (0.3, 1.0, 3.0):
        p, q = dirichlet_pair(g, 5, c, False)
        assert gls.acceptance(p, q, k) == pytest.approx(enumerated(p, q, k), abs=1e-12)


def test_drafts_and_target_come_from_one_race():
    """With the node's own generator, verify's Y is the race's winner over the drafts' exponentials."""
    p, q = dirichlet_pair(torch.Generator().manual_seed(1), 6, 1.0, False)
    tree = DraftTree.root(3)
    for seed in range(50):
        keys = NodeKeys(seed, [1, 2, 3])
        E = gumbel_race.exponentials(keys.generator(tree, 0), 2, 6)
        xs = VERIFIERS["gls"].sample(q, 2, keys.generator(tree, 0))
        verdict = VERIFIERS["gls"].verify(p, q, xs, keys.generator(tree, 0))
        assert xs == gumbel_race.drafts(E, q) and verdict.token == gumbel_race.target(E, p)
        assert verdict.notes == (gls.SHARED,)
        assert (verdict.accepted is not None) == (verdict.token in xs)


@pytest.mark.parametrize("name", THREE)
def test_keyed_path_accepts_at_the_exact_rate_and_independent_exponentials_do_not(name):
    """N = 2000 keyed nodes per language root, K = 1 and 2: the frequency is within 5 standard errors of the
    exact acceptance. Broken variant: the target reads other exponentials than the drafts (offset key);
    its rate (Σ_x q(x) p(x) at K = 1) is far below: checked here to fail the same tolerance."""
    _, p, q = _rows(name)[0]
    n = 2000
    for k in (1, 2):
        exact = gls.acceptance(p, q, k)
        tol = 5 * math.sqrt(max(exact * (1 - exact), 1e-4) / n)
        assert abs(keyed_rate(p, q, k, n) - exact) < tol, (name, k)
        assert abs(independent_rate(p, q, k, n) - exact) > tol, (name, k)


def test_node_keys_depend_on_seed_and_context_only():
    tree = DraftTree.root(5).add_draws(0, [2, 2], merge=False)
    a, b = NodeKeys(1, [9, 5]), NodeKeys(1, [9, 5])
    assert a.seed(tree, 1) == b.seed(tree, 1) == a.seed(tree, 2)  # same token, same context
    assert a.seed(tree, 0) != a.seed(tree, 1)
    assert NodeKeys(2, [9, 5]).seed(tree, 1) != a.seed(tree, 1)
    assert NodeKeys(1, [8, 5]).seed(tree, 1) != a.seed(tree, 1)
    assert NodeKeys(1, [9, 5, 2]).seed(DraftTree.root(2), 0) == a.seed(tree, 1)  # context, not tree position
