"""The forest builder and the common-random-numbers sampler, against plain oracles.

- crn.sample with the generator's own uniforms equals laws.sample with that generator (every law);
- every tree's nodes keep their token paths in the forest, shared prefixes appear once, and growing
  a tree never renumbers forest nodes already fed;
- the forest scored in ONE forward gives each tree's logits as one forward per tree (tiny llama).
"""

from __future__ import annotations

import random

import pytest
import torch

from decoding.compare import crn
from decoding.compare.forest import build_forest
from decoding.models.hf_treelm import HFTreeLM
from decoding.models.target import score_tree
from decoding.verify import laws
from decoding.verify.sampling import make_generator, uniform
from decoding.verify.tree import DraftTree
from tests.models.test_treelm import ATOL, VOCAB, random_tree

CASES = [("iid", 3), ("without_replacement", 3), ("hub", 2), ("hub", 1), ("topk_plus_random", 3), ("any", 2)]


@pytest.mark.parametrize("law,k", CASES)
def test_crn_sample_equals_laws_sample(law: str, k: int) -> None:
    for seed in range(40):
        q = torch.softmax(torch.randn(7, generator=make_generator(seed), dtype=torch.float64) * 2, -1)
        g1, g2 = make_generator(1000 + seed), make_generator(1000 + seed)
        u = [uniform(g2) for _ in range(k)]
        assert crn.sample(law, q, k, u) == laws.sample(law, q, k, g1)


def test_crn_first_draw_is_shared_by_iid_and_without_replacement() -> None:
    q = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)
    for u0 in (0.1, 0.6, 0.9):
        u = [u0, 0.5, 0.5]
        first = {crn.sample(law, q, k, u)[0] for law, k in (("iid", 3), ("without_replacement", 3), ("hub", 2))}
        assert len(first) == 1


def _token_path(tree: DraftTree, n: int) -> tuple[int, ...]:
    return tuple(tree.tokens[m] for m in tree.path(n))


def test_forest_keeps_token_paths_and_dedupes() -> None:
    rng = random.Random(0)
    for _ in range(30):
        trees = [random_tree(rng, root=5, max_nodes=12) for _ in range(3)]
        forest = build_forest(trees)
        paths = {_token_path(t, n) for t in trees for n in range(len(t))}
        assert len(forest.tree) == len(paths)
        for t, tree in enumerate(trees):
            for n in range(len(tree)):
                assert _token_path(forest.tree, forest.maps[t][n]) == _token_path(tree, n)
        assert list(forest.tree.depths) == sorted(forest.tree.depths)  # parents first, by depth


def test_growing_a_level_keeps_forest_ids() -> None:
    a = DraftTree.root(1).add_draws(0, [2, 3], merge=False)
    b = DraftTree.root(1).add_draws(0, [2, 4], merge=False)
    before = build_forest([a, b])
    after = build_forest([a.add_draws(1, [7, 7], merge=False), b.add_draws(2, [8], merge=False)])
    assert after.tree.tokens[: len(before.tree)] == before.tree.tokens
    assert after.tree.parents[: len(before.tree)] == before.tree.parents


@pytest.fixture(scope="module")
def tiny_llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                         initializer_range=0.2, attn_implementation="sdpa")
    return LlamaForCausalLM(config).eval()


def test_forest_forward_equals_one_forward_per_tree(tiny_llama) -> None:
    rng = random.Random(1)
    context = [rng.randrange(VOCAB) for _ in range(9)]
    for _ in range(5):
        trees = [random_tree(rng, root=context[-1], max_nodes=10) for _ in range(3)]
        forest = build_forest(trees)
        lm = HFTreeLM(tiny_llama)
        lm.start(context)
        f0 = lm.forwards
        rows = score_tree(lm, forest.tree)  # [F, V]
        assert lm.forwards - f0 == 1
        for t, tree in enumerate(trees):
            alone = HFTreeLM(tiny_llama)
            alone.start(context)
            ids = torch.tensor(forest.maps[t])
            torch.testing.assert_close(rows[ids], score_tree(alone, tree), atol=ATOL, rtol=0)
