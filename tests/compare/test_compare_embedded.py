"""Must-show checks on the embedded pair (SmolLM2-135M target, int8 self-draft): one compare step.

- every compared step costs exactly one target forward (from the records);
- verifiers sharing a candidate law (or `any`) see the identical tree;
- the forest's one-forward logits equal one forward per tree (tolerance of tests/models/test_treelm.py);
- every recorded exact acceptance equals theory.acceptance at that node and never exceeds alpha*;
  the exact accepted-length law sums to 1 and its mean + 1 equals the exact expected tokens.
"""

from __future__ import annotations

import pytest
import torch

from decoding.compare import session
from decoding.compare.drafting import draft_forest
from decoding.models.target import score_tree
from decoding.run.config import DecodeConfig
from decoding.verify.registry import VERIFIERS
from decoding.verify.sampling import make_generator, warp
from decoding.verify.theory import routes as theory
from decoding.verify.walk import expected_tokens as walk_expected
from tests.models.test_treelm import ATOL

pytestmark = pytest.mark.slow
KEYS = ["rrs", "rrs_wor", "spectr", "pointmass"]
CFG = DecodeConfig(verifier="rrs", branching=(3, 2, 2), temperature=0.8, max_new_tokens=32, seed=11)


@pytest.fixture(scope="module")
def embedded():
    from decoding.models import pairs as models

    return models.load_pair("embedded")


@pytest.fixture(scope="module")
def first_step(embedded):
    run = session.start(embedded, CFG, "Name three colours.", KEYS, mc_draws=0)
    steps = [run.step(), run.step()]
    return run, steps


def test_one_target_forward_and_shared_trees(first_step) -> None:
    run, steps = first_step
    for s in steps:
        assert s.target_forwards == 1 and s.draft_forwards == 3
        v = {x.key: x for x in s.compare.verdicts}
        for key in ("spectr", "pointmass"):
            assert (v[key].tokens, v[key].parents) == (v["rrs"].tokens, v["rrs"].parents)
        assert s.compare.forest_nodes < len(v["rrs"].tokens) + len(v["rrs_wor"].tokens)  # shared root (+ prefixes)


def test_forest_logits_and_exact_numbers(embedded, first_step) -> None:
    run, steps = first_step
    ctx = list(run.state.prompt_ids)
    draft, target = embedded.draft_session(), embedded.target_session()
    draft.start(ctx)
    target.start(ctx)
    drafted = draft_forest(draft, ctx[-1], CFG, run.groups, make_generator(CFG.seed))
    f0 = target.forwards
    logits = score_tree(target, drafted.forest.tree)  # [F, V]
    assert target.forwards - f0 == 1
    p_forest = warp(logits, CFG.temperature)
    record = steps[0].compare
    for t, tree in enumerate(drafted.trees):
        alone = embedded.target_session()
        alone.start(ctx)
        ids = torch.tensor(drafted.forest.maps[t])
        torch.testing.assert_close(logits[ids], score_tree(alone, tree), atol=ATOL, rtol=0)
    for v in record.verdicts:
        t = run.groups.index(v.tree_group)
        tree, entry = drafted.trees[t], VERIFIERS[v.key]
        assert tree.tokens == v.tokens  # the recomputation drafted the recorded tree
        p, q, _ = drafted.rows(t, p_forest)
        assert abs(sum(v.accepted_length_law) - 1.0) < 1e-9
        mean_plus_one = sum(i * x for i, x in enumerate(v.accepted_length_law)) + 1
        assert abs(mean_plus_one - v.expected_tokens) < 1e-9
        assert abs(v.expected_tokens - walk_expected(tree, p, q, entry)) < 1e-6
        for x in v.visits:
            acc = theory.acceptance(v.key, p[x.node], q[x.node], x.k)
            assert abs(x.exact_acceptance - acc.value) < 1e-6 + 4 * acc.stderr
            assert x.exact_acceptance <= theory.optimal_acceptance(p[x.node], q[x.node], x.k, v.law) + 1e-9
