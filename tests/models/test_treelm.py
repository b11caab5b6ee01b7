"""Tree scoring with a KV cache equals plain forwards: one-forward trees vs one forward per path,
commits vs a linear recompute, level-by-level drafting calls with pending tokens; and a wrong mask fails.

A tiny random llama (no download) in float32, with eager and sdpa attention.
"""

from __future__ import annotations

import random

import pytest
import torch

from decoding.models import tree_inputs
from decoding.models.hf_treelm import HFTreeLM
from decoding.models.target import score_tree
from decoding.verify.tree import DraftTree
from tests.tree_oracles import score_by_paths

VOCAB = 97
ATOL = 1e-4


@pytest.fixture(scope="module", params=["eager", "sdpa"])
def model(request):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                         initializer_range=0.2, attn_implementation=request.param)
    return LlamaForCausalLM(config).eval()


def random_tree(rng: random.Random, root: int, max_nodes: int = 32, max_depth: int = 6) -> DraftTree:
    """Random draws (duplicates allowed, merged or not) at random leaves until the tree is big enough."""
    tree = DraftTree.root(root)
    target_size = rng.randint(1, max_nodes)
    while len(tree) < target_size:
        open_leaves = [n for n in tree.leaves() if tree.depths[n] < max_depth]
        if not open_leaves:
            break
        node = rng.choice(open_leaves)
        k = min(rng.randint(1, 3), max_nodes - len(tree))
        draws = [rng.randrange(VOCAB) for _ in range(k)]
        if rng.random() < 0.3:
            draws = draws[:1] * k  # repeated draws of one token
        tree = tree.add_draws(node, draws, merge=rng.random() < 0.5)
    return tree


def path_tokens(tree: DraftTree, path: list[int]) -> list[int]:
    return [tree.tokens[n] for n in path]


def feed_by_levels(lm: HFTreeLM, tree: DraftTree) -> dict[int, torch.Tensor]:
    """The draft's pattern: one call per depth over the non-leaf nodes, then an empty call (no forward)."""
    rows = {}
    for depth in range(tree.max_depth):
        level = [n for n in tree.nodes_at_depth(depth) if not tree.is_leaf(n)]
        if level:
            for n, row in zip(level, lm.logits(tree, level), strict=True):
                rows[n] = row
    lm.logits(tree, [])
    return rows


@pytest.mark.parametrize("seed", range(6))
def test_one_forward_equals_one_forward_per_path(model, seed):
    rng = random.Random(seed)
    context = [rng.randrange(VOCAB) for _ in range(rng.randint(1, 12))]
    tree = random_tree(rng, context[-1])
    lm = HFTreeLM(model)
    lm.start(context)
    got = score_tree(lm, tree)  # [N, V]
    assert got.shape == (len(tree), VOCAB) and got.dtype == torch.float32
    assert lm.forwards == 1 and lm.prefills == (1 if len(context) > 1 else 0)
    expected = score_by_paths(model, context[:-1], tree)
    assert torch.allclose(got, expected, atol=ATOL), float((got - expected).abs().max())


@pytest.mark.parametrize("seed", range(4))
def test_commit_then_next_steps_equal_a_linear_recompute(model, seed):
    rng = random.Random(100 + seed)
    context = [rng.randrange(VOCAB) for _ in range(rng.randint(1, 8))]
    lm = HFTreeLM(model)
    lm.start(context)
    for _ in range(4):
        tree = random_tree(rng, context[-1])
        got = score_tree(lm, tree)
        expected = score_by_paths(model, context[:-1], tree)
        assert torch.allclose(got, expected, atol=ATOL), float((got - expected).abs().max())
        path = tree.path(rng.randrange(len(tree)))  # any node: an accepted prefix of some branch
        next_token = rng.randrange(VOCAB)
        lm.commit(path, next_token)
        context = context + path_tokens(tree, path)[1:] + [next_token]
        assert lm.n_cached + len(lm.pending) + 1 == len(context) and lm.pending == []
    assert lm.forwards == 4


@pytest.mark.parametrize("seed", range(4))
def test_level_by_level_calls_with_pending_leaves_equal_the_oracle(model, seed):
    """Draft use: one call per depth, leaves never fed; a path that ends at a leaf leaves it pending."""
    rng = random.Random(200 + seed)
    context = [rng.randrange(VOCAB) for _ in range(rng.randint(1, 8))]
    lm = HFTreeLM(model)
    lm.start(context)
    for step in range(5):
        tree = random_tree(rng, context[-1], max_nodes=24, max_depth=4)
        before = lm.forwards
        rows = feed_by_levels(lm, tree)
        assert lm.forwards - before == tree.max_depth
        expected = score_by_paths(model, context[:-1], tree)
        for n, row in rows.items():
            assert torch.allclose(row, expected[n], atol=ATOL), (step, n, float((row - expected[n]).abs().max()))
        path = tree.path(rng.choice(tree.leaves()))  # ends at a leaf: never fed, becomes pending
        next_token = rng.randrange(VOCAB)
        # a lone root is never fed either: it joins the tokens still pending from the step before
        unfed = lm.pending + [tree.tokens[0]] if len(tree) == 1 else [tree.tokens[path[-1]]]
        lm.commit(path, next_token)
        context = context + path_tokens(tree, path)[1:] + [next_token]
        assert lm.pending == unfed
        assert lm.n_cached + len(lm.pending) + 1 == len(context)


def test_commits_without_calls_accumulate_pending_tokens(model):
    rng = random.Random(7)
    context = [rng.randrange(VOCAB) for _ in range(5)]
    lm = HFTreeLM(model)
    lm.start(context)
    for _ in range(3):  # a step that makes no call (e.g. nothing to draft) still moves the context
        token = rng.randrange(VOCAB)
        lm.commit([0], token, tree=DraftTree.root(context[-1]))
        context.append(token)
    assert len(lm.pending) == 3
    tree = random_tree(rng, context[-1])
    got = score_tree(lm, tree)
    expected = score_by_paths(model, context[:-1], tree)
    assert torch.allclose(got, expected, atol=ATOL)
    assert lm.forwards == 1


def causal_rows_allowed(tree, nodes, slots, base, n_cols):
    """BROKEN on purpose: a plain causal mask over the flattened tree (siblings see each other)."""
    allowed = torch.zeros(len(nodes), n_cols, dtype=torch.bool)
    for row, node in enumerate(nodes):
        allowed[row, : slots[node] + 1] = True
    return allowed


def test_a_plain_causal_mask_is_detected(model, monkeypatch):
    rng = random.Random(3)
    context = [rng.randrange(VOCAB) for _ in range(6)]
    tree = DraftTree.root(context[-1]).add_draws(0, [5, 17, 40], merge=False)
    tree = tree.add_draws(1, [8, 9], merge=False).add_draws(2, [60, 61], merge=False)
    expected = score_by_paths(model, context[:-1], tree)
    monkeypatch.setattr(tree_inputs, "tree_rows_allowed", causal_rows_allowed)
    lm = HFTreeLM(model)
    lm.start(context)
    broken = score_tree(lm, tree)
    assert float((broken - expected).abs().max()) > 1e-2


def test_misuse_is_refused(model):
    lm = HFTreeLM(model)
    lm.start([1, 2, 3])
    tree = DraftTree.root(3).add_draws(0, [4, 5], merge=False)
    with pytest.raises(ValueError, match="root"):
        lm.logits(DraftTree.root(9), [0])
    with pytest.raises(ValueError, match="parent"):
        lm.logits(tree, [1])
    lm.logits(tree, [0])
    with pytest.raises(ValueError, match="already fed"):
        lm.logits(tree, [0, 1])
    with pytest.raises(ValueError, match="path"):
        lm.commit([0, 2, 1], 7)


def test_vocab_width_is_padded_or_cut(model):
    context, tree = [1, 2], DraftTree.root(2)
    wide, narrow = HFTreeLM(model, vocab_size=VOCAB + 3), HFTreeLM(model, vocab_size=VOCAB - 7)
    wide.start(context)
    narrow.start(context)
    w, n = wide.logits(tree, [0]), narrow.logits(tree, [0])
    assert w.shape == (1, VOCAB + 3) and torch.isinf(w[0, VOCAB:]).all()
    assert n.shape == (1, VOCAB - 7) and torch.equal(n[0], w[0, : VOCAB - 7])
