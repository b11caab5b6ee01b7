"""The lean float32 target (lean_target.py) computes the target's own logits (p), in every call HFTreeLM makes.

Oracle: transformers' forward of the same model on the same inputs (causal prefill, a tree call with a
4-D mask, inside and outside packed_products), and a whole HFTreeLM session with a non-contiguous commit.
"""

from __future__ import annotations

from contextlib import nullcontext

import pytest
import torch

from decoding.models.hf_treelm import HFTreeLM
from decoding.models.lean import target as lean_target
from decoding.models.lean.packed_linear import packed_products, use_packed_projection
from decoding.verify.tree import DraftTree
from tests.conftest import save_tiny_llama
from tests.models.test_lean_draft import WORDS, _ids, assert_same_forward


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from transformers import AutoModelForCausalLM

    folder = save_tiny_llama(tmp_path_factory.mktemp("tiny-lean-target") / "m", WORDS, seed=7)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    use_packed_projection(model)  # as HFTreeLM sets it up: the lean target shares these projections
    return model


@pytest.mark.parametrize("packed", [False, True], ids=["F.linear", "packed"])
def test_lean_target_equals_the_transformers_forward(tiny, packed) -> None:
    during = packed_products if packed else nullcontext
    assert_same_forward(tiny, lean_target.LeanFloatLlama(tiny), seed=3, tol=1e-5, during=during)


def test_lean_target_behind_hftreelm_matches_after_a_tree_commit(tiny) -> None:
    lean = lean_target.LeanFloatLlama(tiny)
    sessions = [HFTreeLM(tiny), HFTreeLM(lean)]
    context = _ids(6, 4)[0].tolist()
    outs = []
    for lm in sessions:
        lm.start(context)
        tree = DraftTree.root(context[-1]).add_draws(0, [4, 9, 13], merge=False).add_draws(3, [5, 6], merge=False)
        outs.append(lm.logits(tree, [0, 1, 2, 3, 4, 5]))  # one tree forward, packed products
        lm.commit([0, 3, 5], 21, tree)  # keep prefix + slots of nodes 0, 3, 5 (not 1, 2, 4)
        outs.append(lm.logits(DraftTree.root(21), [0]))
        assert lm.cache.get_seq_length() == 6 + 3
    assert list(lean.lean_layers[0].qkv.packs) == [8]  # the 6-row tree call took the packed product
    for a, b in zip(outs[:2], outs[2:], strict=True):
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-5)


def test_the_lean_target_shares_the_targets_own_projections(tiny) -> None:
    lean = lean_target.LeanFloatLlama(tiny)
    layer, own = lean.lean_layers[0], tiny.model.layers[0]
    assert layer.o is own.self_attn.o_proj.forward and layer.down is own.mlp.down_proj.forward
    assert lean.head is tiny.lm_head.forward
    assert layer.qkv.weight.shape == (own.self_attn.q_proj.weight.shape[0] + 2 * own.self_attn.k_proj.weight.shape[0],
                                      own.self_attn.q_proj.weight.shape[1])


def test_the_lean_target_refuses_other_models() -> None:
    from transformers import GPT2Config, GPT2LMHeadModel

    gpt2 = GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=30, n_positions=32))
    with pytest.raises(ValueError, match="llama-style"):
        lean_target.LeanFloatLlama(gpt2)


def test_the_lean_norms_are_the_modules_bit_for_bit(tiny) -> None:
    """The lean layers' norms run torch's fused rms_norm (one call, not the module's several): the same values to
    the bit, for one row, a tree's rows and a prefill, so the lean forward is unchanged by it."""
    from decoding.models.lean.llama import RMSNorm

    lean = lean_target.LeanFloatLlama(tiny)
    layer, module = lean.lean_layers[1], tiny.model.layers[1]
    assert isinstance(layer.input_norm, RMSNorm) and isinstance(layer.post_norm, RMSNorm)
    generator = torch.Generator().manual_seed(5)
    with torch.inference_mode():
        for rows in (1, 4, 37):
            x = torch.randn(1, rows, tiny.config.hidden_size, generator=generator) * 3  # [1, rows, hidden]
            assert torch.equal(layer.input_norm(x), module.input_layernorm(x))
            assert torch.equal(layer.post_norm(x), module.post_attention_layernorm(x))
