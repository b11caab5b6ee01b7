"""The lean int8 self-draft (lean_draft.py) computes the int8 self-draft's function, and its cache keeps rows right.

Oracle: transformers' own forward of `transformers_self_draft(target)` (quantize_dynamic on every Linear
but down_proj) on the same inputs: causal prefill, cached steps, and a tree call with a 4-D mask.
"""

from __future__ import annotations

from contextlib import nullcontext

import pytest
import torch

from decoding.models.embedded.self_draft import transformers_self_draft
from decoding.models.hf_treelm import HFTreeLM
from decoding.models.lean import int8_draft as lean_draft
from decoding.models.lean.growing_cache import GrowingCache, GrowingTensor
from decoding.models.tree_inputs import step_inputs
from decoding.verify.tree import DraftTree
from tests.conftest import save_tiny_llama

WORDS = [f"w{i}" for i in range(40)]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from transformers import AutoModelForCausalLM

    folder = save_tiny_llama(tmp_path_factory.mktemp("tiny-lean") / "m", WORDS, seed=5)
    return AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()


def _ids(n: int, seed: int, vocab: int = len(WORDS)) -> torch.Tensor:
    return torch.randint(2, vocab, (1, n), generator=torch.Generator().manual_seed(seed))  # [1, n]


def _tree_call(model, cache, tree: DraftTree, nodes: list[int], slots: dict[int, int], prefix: int) -> torch.Tensor:
    ids, mask, pos = step_inputs(tree, nodes, [], slots, prefix, prefix, cache.get_seq_length(), model.dtype)
    dev = model.device  # the CPU here; tests/test_cuda.py runs the same calls on a GPU
    with torch.inference_mode():
        return model(input_ids=ids.to(dev), attention_mask=mask.to(dev), position_ids=pos.to(dev),
                     past_key_values=cache, use_cache=True, logits_to_keep=len(nodes)).logits[0]  # [len(nodes), V]


def assert_same_forward(reference, lean, seed: int, tol: float, during=nullcontext, vocab: int = len(WORDS)) -> None:
    """`lean` gives `reference`'s logits on a causal prefill, then on a tree's root, its siblings and the
    grandchildren under node 2 (4-D masks), each call inside `during()`; token ids below `vocab`."""
    from transformers import DynamicCache

    prompt = _ids(9, seed, vocab)
    caches = (DynamicCache(), lean.new_cache())
    with torch.inference_mode():
        want, got = (m(prompt[:, :-1].to(m.device), past_key_values=c, use_cache=True, logits_to_keep=8).logits
                     for m, c in zip((reference, lean), caches, strict=True))
    torch.testing.assert_close(got, want, rtol=tol, atol=tol)  # causal prefill, all rows
    first, second = [t % vocab for t in (3, 7, 3)], [t % vocab for t in (11, 12)]
    tree = DraftTree.root(int(prompt[0, -1])).add_draws(0, first, merge=False).add_draws(2, second, merge=False)
    slots = {n: 8 + n for n in range(len(tree))}
    for nodes in ([0], [1, 2, 3], [4, 5]):
        with during():
            want, got = (_tree_call(m, c, tree, nodes, slots, 8)
                         for m, c in zip((reference, lean), caches, strict=True))
        torch.testing.assert_close(got, want, rtol=tol, atol=tol)


def test_lean_forward_equals_the_transformers_int8_draft(tiny) -> None:
    assert_same_forward(transformers_self_draft(tiny), lean_draft.LeanInt8Llama(tiny), seed=0, tol=1e-4)


def test_lean_draft_behind_hftreelm_matches_after_a_tree_commit(tiny) -> None:
    """The cache keeps prefix + accepted path (non-contiguous) exactly like the DynamicCache does."""

    sessions = [HFTreeLM(transformers_self_draft(tiny)), HFTreeLM(lean_draft.LeanInt8Llama(tiny))]
    context = _ids(6, 1)[0].tolist()
    outs = []
    for lm in sessions:
        lm.start(context)
        tree = DraftTree.root(context[-1]).add_draws(0, [4, 9, 13], merge=False)
        lm.logits(tree, [0])
        lm.logits(tree, [1, 2, 3])
        lm.commit([0, 3], 21, tree)  # keep prefix + slots of nodes 0 and 3 (not 1, 2)
        outs.append(lm.logits(DraftTree.root(21), [0]))
        assert lm.cache.get_seq_length() == 6 + 2
    torch.testing.assert_close(outs[1], outs[0], rtol=1e-4, atol=1e-4)


def test_supports_only_llama_style_targets(tiny) -> None:
    from transformers import GPT2Config, GPT2LMHeadModel

    assert lean_draft.supports(tiny)
    gpt2 = GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=30, n_positions=32))
    assert not lean_draft.supports(gpt2)
    with pytest.raises(ValueError, match="llama-style"):
        lean_draft.LeanInt8Llama(gpt2)


def test_growing_tensor_appends_grows_and_keeps_a_prefix_or_any_rows() -> None:
    grow = GrowingTensor()
    rows = torch.arange(2 * 300 * 3, dtype=torch.float32).reshape(1, 2, 300, 3)  # [1, heads, 300, d]
    for start in range(0, 300, 70):  # 5 appends, past the initial capacity of 256
        grow.append(rows[..., start: start + 70, :])
    torch.testing.assert_close(grow.view(), rows)
    grow.assign(grow.view()[..., :120, :])  # a prefix: kept in place
    torch.testing.assert_close(grow.view(), rows[..., :120, :])
    keep = torch.tensor([0, 5, 119, 7])
    grow.assign(grow.view().index_select(-2, keep))  # any rows, in order
    torch.testing.assert_close(grow.view(), rows[..., keep, :])
    grow.append(rows[..., :1, :])
    torch.testing.assert_close(grow.view(), torch.cat([rows[..., keep, :], rows[..., :1, :]], dim=-2))


def test_growing_cache_reports_the_first_layers_length() -> None:
    cache = GrowingCache(2)
    k = torch.zeros(1, 2, 3, 4)
    for layer in range(2):
        cache.append(layer, k, k + 1)
    assert cache.get_seq_length() == 3
    assert torch.equal(cache.layers[1].values, k + 1)
