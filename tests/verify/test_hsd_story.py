"""HSD's judge follows its exact step law (seeded Monte Carlo) and tells the story the inspector shows:
every prefix ratio, every step-back coin, the whole-draft coin (with block's capped value beside it when
HSD's is larger: where the bias enters), tau and the resample (docs/verifiers.md §14.5)."""

from __future__ import annotations

import math
from collections import Counter

import pytest
import torch

from decoding.verify.registry import VERIFIERS
from decoding.verify.tree import DraftTree
from decoding.verify.tree_rules import hsd
from decoding.verify.tree_rules.chains import chain_nodes
from tests.verifier_oracles import draft_trees, random_prefix_laws
from tests.verify.tree_level_oracle import build

N = 3000
F64 = torch.float64


def _biased_chain(seed: int = 7, V: int = 3, g: int = 3):
    """The drafted chain with the most outcomes among those where hsd and block differ."""
    p_of, q_of = random_prefix_laws(torch.Generator().manual_seed(seed), V, g)
    found = []
    for nested, _ in draft_trees("iid", (1,) * g, q_of):
        tree, p, q = build(nested, p_of, q_of)
        pre = hsd.prefixes(chain_nodes(tree), tree, p, q)
        if max(pre.M[:-1]) > max(pre.r[-1], 1.0) and pre.r[-1] > 0:
            found.append((tree, p, q))
    return max(found, key=lambda t: len(VERIFIERS["hsd"].step_law(*t)))


def _exact(outcomes) -> dict:
    law: dict = {}
    for o in outcomes:
        for y in range(o.last.numel()):
            if float(o.last[y]) > 0:
                law[(o.path, y)] = law.get((o.path, y), 0.0) + o.prob * float(o.last[y])
    return law


def _max_z(key: str, tree, p, q, against: str | None = None) -> float:
    g, counts = torch.Generator().manual_seed(0), Counter()
    for _ in range(N):
        walk = VERIFIERS[key].judge(tree, p, q, g)
        counts[(walk.path, walk.tokens[-1])] += 1
    exact = _exact(VERIFIERS[against or key].step_law(tree, p, q))
    if any(exact.get(k, 0.0) == 0.0 for k in counts):
        return math.inf
    return max(abs(counts[k] / N - pr) / math.sqrt(max(pr * (1 - pr), 1e-6) / N) for k, pr in exact.items())


@pytest.mark.parametrize("key", ["hsd", "hsd_lossless"])
def test_judge_frequencies_match_the_exact_law(key):
    tree, p, q = _biased_chain()
    assert len(VERIFIERS[key].step_law(tree, p, q)) >= 3
    assert _max_z(key, tree, p, q) < 5


def test_the_judge_check_tells_hsd_from_block():
    """On a biased chain hsd's draws do not follow block's law (the check can fail)."""
    tree, p, q = _biased_chain()
    assert _max_z("hsd", tree, p, q, against="block") > 5


def test_hsd_story_has_every_ratio_coin_and_the_resample():
    tree, p, q = _biased_chain()
    chain = chain_nodes(tree)
    pre = hsd.prefixes(chain, tree, p, q)
    g = torch.Generator().manual_seed(3)
    whole_seen = rejected_seen = False
    for _ in range(60):
        walk = VERIFIERS["hsd"].judge(tree, p, q, g)
        kinds = [e.kind for e in walk.events]
        assert kinds == ["ratio"] * 3 + ["stepback"] * 3 + ["final", "tau", "emit"]
        ratios = [e for e in walk.events if e.kind == "ratio"]
        assert [e.threshold for e in ratios] == pytest.approx(list(pre.r[1:]), rel=1e-12)
        assert [e.numerator / e.denominator for e in ratios] == pytest.approx(list(pre.r[1:]), rel=1e-12)
        coins = [e for e in walk.events if e.kind == "stepback"]
        assert all(e.uniform is not None and e.passed == (e.uniform < e.threshold) for e in coins)
        final = next(e for e in walk.events if e.kind == "final")
        assert final.threshold == pytest.approx(min(1.0, pre.r[-1]), rel=1e-12)
        assert "HSD's bias" in final.note  # this chain is biased: block's capped value is shown beside it
        tau = 3 if final.passed else max([k for k, e in enumerate(coins) if e.passed], default=0)
        assert len(walk.path) - 1 == tau and walk.rejected == tuple(chain[tau + 1:])
        emit = walk.events[-1]
        assert emit.token == walk.tokens[-1] and emit.target is not None
        assert emit.label == ("bonus" if final.passed else "residual")
        whole_seen |= final.passed
        rejected_seen |= not final.passed
    assert whole_seen and rejected_seen


def test_hsd_lossless_story_shows_no_bias_and_a_capped_final_coin():
    tree, p, q = _biased_chain()
    pre = hsd.prefixes(chain_nodes(tree), tree, p, q)
    walk = VERIFIERS["hsd_lossless"].judge(tree, p, q, torch.Generator().manual_seed(0))
    final = next(e for e in walk.events if e.kind == "final")
    assert final.threshold == pytest.approx(min(1.0, pre.r[-1] / pre.M[-1]), rel=1e-12)
    assert final.threshold < min(1.0, pre.r[-1]) and "bias" not in final.note


def test_a_root_only_tree_is_a_plain_target_step():
    p = torch.tensor([[0.2, 0.8]], dtype=F64)
    walk = VERIFIERS["hsd"].judge(DraftTree.root(0), p, torch.zeros_like(p), torch.Generator().manual_seed(0))
    assert walk.path == (0,) and [e.kind for e in walk.events] == ["emit"]
    (outcome,) = VERIFIERS["hsd"].step_law(DraftTree.root(0), p, torch.zeros_like(p))
    assert outcome.prob == 1.0 and torch.equal(outcome.last, p[0])


def test_branching_trees_are_refused_with_a_clear_message():
    tree = DraftTree.root(0).add_draws(0, [0, 1], merge=False)
    p = torch.full((3, 2), 0.5, dtype=F64)
    for key in ("hsd", "hsd_lossless"):
        with pytest.raises(ValueError, match="one draft chain"):
            VERIFIERS[key].judge(tree, p, p, torch.Generator())
        with pytest.raises(ValueError, match="one draft chain"):
            VERIFIERS[key].check_k(2)
