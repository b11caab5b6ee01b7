"""The draft-head pair's plumbing on a tiny llama (no embedded model): the target session keeps the feature
that gave the root, and every draft row is the head run along that node's own path (the oracle: one head
call per path node, from the target's feature recomputed as a plain sequence)."""

from __future__ import annotations

import pytest
import torch

from decoding.models.head.drafter import HeadTreeLM
from decoding.models.head.feature_target import FeatureTreeLM
from decoding.models.head.lean import LeanHead
from decoding.models.head.weights import DraftHead, HeadConfig, load_head, save_head
from decoding.models.lean import few_rows
from decoding.models.lean import target as lean_target
from decoding.verify.tree import DraftTree
from tests.conftest import save_tiny_llama
from tests.models.test_lean_draft import WORDS

HEAD_SIZE = 12  # the tiny vocabulary has more ids: q = 0 beyond these


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from transformers import AutoModelForCausalLM

    folder = save_tiny_llama(tmp_path_factory.mktemp("tiny-head") / "m", WORDS, seed=11)
    return AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()


@pytest.fixture(scope="module")
def head(tiny):
    torch.manual_seed(5)
    return DraftHead(HeadConfig(hidden=tiny.config.hidden_size, inner=48, head_size=HEAD_SIZE)).eval()


def scorers(tiny):
    return {"transformers": tiny, "lean": lean_target.LeanFloatLlama(tiny)}


def plain_feature(tiny, ids: list[int]) -> torch.Tensor:
    """[hidden]: the final-normed feature at the last of `ids`, as one plain causal forward."""
    with torch.no_grad():
        return tiny.model(torch.tensor([ids])).last_hidden_state[0, -1]


def sessions(tiny, head, scorer):
    target = FeatureTreeLM(scorer)
    lm_rows = tiny.lm_head.weight.detach()[:HEAD_SIZE]
    return target, HeadTreeLM(LeanHead(head, lm_rows), tiny.model.embed_tokens.weight.detach(), target.vocab_size,
                              target)


@pytest.mark.parametrize("kind", ["transformers", "lean"])
def test_the_target_keeps_the_feature_that_gave_the_root(tiny, head, kind) -> None:
    target, _ = sessions(tiny, head, scorers(tiny)[kind])
    context = [3, 7, 2, 9, 4]
    target.start(context)
    torch.testing.assert_close(target.root_feature, plain_feature(tiny, context[:-1]), atol=1e-5, rtol=0)
    tree = DraftTree.root(context[-1]).add_draws(0, [5, 8], merge=False).add_draws(2, [6], merge=False)
    target.logits(tree, [0, 1, 2, 3])
    target.commit([0, 2, 3], next_token=10, tree=tree)  # accepted 8, 6; the bonus 10 is the next root
    torch.testing.assert_close(target.root_feature, plain_feature(tiny, context + [8, 6]), atol=1e-4, rtol=0)


def oracle_row(tiny, head, context: list[int], path_tokens: list[int]) -> torch.Tensor:
    """[V] the head's logits at the end of `path_tokens` (root first), one head call per path node."""
    f, embed = plain_feature(tiny, context[:-1]), tiny.model.embed_tokens.weight
    with torch.no_grad():
        for token in path_tokens:
            f = head(f, embed[token])
        row = torch.full((tiny.config.vocab_size,), float("-inf"))
        row[:HEAD_SIZE] = f @ tiny.lm_head.weight[:HEAD_SIZE].T
    return row


@pytest.mark.parametrize("kind", ["transformers", "lean"])
def test_each_draft_row_is_the_head_along_its_own_path(tiny, head, kind) -> None:
    assert_rows_follow_paths(tiny, head, *sessions(tiny, head, scorers(tiny)[kind]))


@pytest.mark.parametrize("method", sorted(set(few_rows.available_products()) - {"stock"}))
def test_with_a_product_plan_the_rows_are_the_same(tiny, head, method) -> None:
    """The plan a calibration puts on the target goes on the head's products too (calibrate.put_plan)."""
    target, draft = sessions(tiny, head, tiny)
    few_rows.apply_plan(draft.head, {n: method for n in range(1, 9)}, pad={2: 4})
    products = [draft.head.head] + [getattr(draft.head.lean_layers[0], n) for n in ("fc", "gate", "up", "down")]
    assert all(isinstance(p, few_rows.PlannedProjection) and p.plan[1] == method for p in products)
    assert_rows_follow_paths(tiny, head, target, draft)


def assert_rows_follow_paths(tiny, head, target, draft) -> None:
    context = [3, 7, 2, 9, 4]
    target.start(context)
    draft.start(context)
    tree = DraftTree.root(context[-1])
    rows = {0: draft.logits(tree, [0])[0]}
    tree = tree.add_draws(0, [5, 8], merge=False)
    rows.update(zip([1, 2], draft.logits(tree, [1, 2]), strict=True))
    tree = tree.add_draws(1, [6], merge=False).add_draws(3, [2], merge=False)  # node 3 and its child 4 in ONE call
    rows.update(zip([3, 4], draft.logits(tree, [3, 4]), strict=True))
    for node, row in rows.items():
        expected = oracle_row(tiny, head, context, [tree.tokens[n] for n in tree.path(node)])
        torch.testing.assert_close(row, expected, atol=1e-4, rtol=0)
        assert bool(torch.isneginf(row[HEAD_SIZE:]).all())
    assert len({round(float(r[0]), 6) for r in rows.values()}) == len(rows)  # the rows really differ


def test_after_a_commit_the_draft_starts_from_the_accepted_nodes_feature(tiny, head) -> None:
    target, draft = sessions(tiny, head, tiny)
    context = [3, 7, 2, 9, 4]
    target.start(context)
    draft.start(context)
    tree = DraftTree.root(context[-1]).add_draws(0, [5, 8], merge=False)
    draft.logits(tree, [0])
    target.logits(tree, [0, 1, 2])
    for lm in (target, draft):
        lm.commit([0, 2], next_token=6, tree=tree)
    row = draft.logits(DraftTree.root(6), [0])[0]
    torch.testing.assert_close(row, oracle_row(tiny, head, context + [8, 6], [6]), atol=1e-4, rtol=0)


def test_without_a_target_feature_the_draft_has_no_guess(tiny, head) -> None:
    target, draft = sessions(tiny, head, tiny)
    target.start([4])  # one token: nothing prefilled, so no feature yet
    draft.start([4])
    assert target.root_feature is None
    assert bool(torch.isneginf(draft.logits(DraftTree.root(4), [0])).all())
    assert draft.forwards == 0


def test_a_saved_head_loads_back_identically_up_to_float16(head, tmp_path) -> None:
    save_head(head, tmp_path, {"note": "test"})
    loaded = load_head(tmp_path)
    assert loaded.config == head.config
    for (name, a), (_, b) in zip(head.state_dict().items(), loaded.state_dict().items(), strict=True):
        torch.testing.assert_close(b, a.to(torch.float16).float(), atol=0, rtol=0, msg=name)
    with pytest.raises(ValueError, match="missing or unreadable"):
        load_head(tmp_path / "nowhere")
