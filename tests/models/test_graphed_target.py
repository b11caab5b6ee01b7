"""The GPU target's forward (graphed_target.py) computes the target's own logits (p) in every call HFTreeLM makes.

On a CPU it runs eagerly: here it is checked with and without its padding to the graphs' row buckets (the
mask and slots a graph replays), against transformers' forward of the same model. Its cache (slot_cache.py):
a non-contiguous commit keeps the accepted path, a full buffer grows without losing a slot, and a dropped
session's slots go to the next session. tests/test_cuda.py runs the same forward replayed from CUDA graphs.
"""

from __future__ import annotations

import gc

import pytest
import torch

from decoding.models.cuda import graphed_target, slot_cache
from decoding.models.hf_treelm import HFTreeLM
from decoding.verify.tree import DraftTree
from tests.conftest import save_tiny_llama
from tests.graph_stand_in import stand_in_capture
from tests.models.test_lean_draft import WORDS, _ids, assert_same_forward


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from transformers import AutoModelForCausalLM

    folder = save_tiny_llama(tmp_path_factory.mktemp("tiny-graphed-target") / "m", WORDS, seed=11)
    return AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()


@pytest.mark.parametrize("fuse", [True, False], ids=["fused copies", "own weights"])
@pytest.mark.parametrize("padded", [False, True], ids=["exact rows", "padded to buckets"])
def test_the_gpu_target_forward_equals_the_transformers_forward(tiny, padded, fuse) -> None:
    assert_same_forward(tiny, graphed_target.GraphedLlama(tiny, padded=padded, fuse=fuse), seed=5, tol=1e-5)


def test_without_fusing_the_products_read_the_models_own_weights(tiny) -> None:
    graphed = graphed_target.GraphedLlama(tiny, fuse=False)
    x = torch.randn(3, tiny.config.hidden_size)
    attn = tiny.model.layers[1].self_attn
    want = torch.cat([attn.q_proj(x), attn.k_proj(x), attn.v_proj(x)], dim=-1)
    with torch.no_grad():
        attn.k_proj.weight.mul_(2)  # a change to the model's weight is a change to the product's
        want2 = torch.cat([attn.q_proj(x), attn.k_proj(x), attn.v_proj(x)], dim=-1)
        got = graphed.lean_layers[1].qkv(x)
        attn.k_proj.weight.div_(2)
    assert not torch.allclose(want, want2)
    torch.testing.assert_close(got, want2)


@pytest.mark.parametrize("padded", [False, True], ids=["exact rows", "padded to buckets"])
def test_the_gpu_target_behind_hftreelm_matches_after_a_tree_commit(tiny, padded) -> None:
    sessions = [HFTreeLM(tiny), HFTreeLM(graphed_target.GraphedLlama(tiny, padded=padded))]
    context = _ids(7, 2)[0].tolist()
    outs = []
    for lm in sessions:
        lm.start(context)
        tree = DraftTree.root(context[-1]).add_draws(0, [4, 9, 13], merge=False).add_draws(3, [5, 6], merge=False)
        outs.append(lm.logits(tree, [0, 1, 2]))
        outs.append(lm.logits(tree, [3, 4, 5]))
        lm.commit([0, 3, 5], 21, tree)  # keep prefix + slots of nodes 0, 3, 5 (not 1, 2, 4)
        assert lm.cache.get_seq_length() == 6 + 3
        outs.append(lm.logits(DraftTree.root(21), [0]))
    for a, b in zip(outs[:3], outs[3:], strict=True):
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-5)


def test_a_failed_capture_warns_once_and_runs_the_same_forward_eagerly_unpadded(tiny, monkeypatch) -> None:
    graphed = graphed_target.GraphedLlama(tiny, padded=True)
    graphed.graphs = True  # as on a GPU: the first call of a bucket captures (here: the capture fails)
    captures = []

    def failing(slots, inputs, taps=()):
        captures.append(inputs.ids.shape[1])
        raise RuntimeError("operation not permitted when stream is capturing")

    monkeypatch.setattr(graphed, "_capture", failing)
    sessions = [HFTreeLM(tiny), HFTreeLM(graphed)]
    context = _ids(6, 3)[0].tolist()
    tree = DraftTree.root(context[-1]).add_draws(0, [4, 9, 13], merge=False)
    outs = []
    with pytest.warns(UserWarning, match="CUDA graph capture failed"):
        for lm in sessions:
            lm.start(context)
            outs.append(lm.logits(tree, [0, 1, 2]))
            outs.append(lm.logits(tree, [3]))
    assert len(captures) == 1  # one try (the prefill's bucket), then never again
    assert not graphed.graphs and not graphed.padded  # later calls: eager, at their own size
    for a, b in zip(outs[:2], outs[2:], strict=True):
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-5)


def test_calls_replayed_from_graphs_copy_their_inputs_in_and_read_the_replayed_outputs(tiny, monkeypatch) -> None:
    """The replay path with a stand-in for CUDA graphs (tests/graph_stand_in.py): one capture per rows bucket
    (and taps), every later call of that bucket replayed on its inputs copied in; the logits stay transformers'."""
    captured = []
    monkeypatch.setattr(graphed_target, "capture", stand_in_capture(captured))
    graphed = graphed_target.GraphedLlama(tiny, padded=True)
    graphed.graphs = True  # as on a GPU
    sessions = [HFTreeLM(tiny), HFTreeLM(graphed)]
    context = _ids(6, 3)[0].tolist()
    outs = []
    for lm in sessions:
        lm.start(context)
        for token in (4, 9, 13):
            tree = DraftTree.root(lm.context[-1]).add_draws(0, [token, 5], merge=False)  # 3 rows: the 4-row bucket
            outs.append(lm.logits(tree, [0, 1, 2]))
            lm.commit([0, 1], 7, tree)
    assert set(sessions[1].cache.slots.graphs) == {8, 4} and len(captured) == 2  # the prefill's 5 rows, then 3
    assert sum(graph.replays for graph in captured) == 4  # the prefill, and the three tree calls
    for a, b in zip(outs[:3], outs[3:], strict=True):
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-5)


def test_a_full_buffer_grows_and_keeps_every_slot(tiny, monkeypatch) -> None:
    monkeypatch.setattr(slot_cache, "MIN_CAPACITY", 8)
    lean = graphed_target.GraphedLlama(tiny, padded=True)
    sessions = [HFTreeLM(tiny), HFTreeLM(lean)]
    context = _ids(7, 4)[0].tolist()  # 6 prefilled; the 4-row call (3 rows padded to 4) needs 10 > 8 slots
    outs = []
    for lm in sessions:
        lm.start(context)
        tree = DraftTree.root(context[-1]).add_draws(0, [4, 9], merge=False)
        outs.append(lm.logits(tree, [0, 1, 2]))
    assert sessions[1].cache.slots.capacity == 16
    torch.testing.assert_close(outs[1], outs[0], rtol=1e-5, atol=1e-5)


def test_a_dropped_sessions_slots_serve_the_next_session_and_live_ones_are_never_shared(tiny) -> None:
    lean = graphed_target.GraphedLlama(tiny)
    first, second = HFTreeLM(lean), HFTreeLM(lean)
    first.start(_ids(5, 6)[0].tolist())
    second.start(_ids(5, 7)[0].tolist())
    assert first.cache.slots is not second.cache.slots  # two live sessions: two buffers
    kept = first.cache.slots
    del first
    gc.collect()
    assert lean.spare == [kept]
    third = HFTreeLM(lean)
    context = _ids(4, 8)[0].tolist()
    third.start(context)
    assert third.cache.slots is kept and third.cache.get_seq_length() == len(context) - 1  # reset, then prefilled
    reference = HFTreeLM(tiny)
    reference.start(context)
    tree = DraftTree.root(context[-1])
    torch.testing.assert_close(third.logits(tree, [0]), reference.logits(tree, [0]), rtol=1e-5, atol=1e-5)


def test_custom_models_are_graphed_on_their_own_weights_and_the_embedded_one_fused(tiny, monkeypatch) -> None:
    """Which GraphedLlama each pair gets on a GPU (supports_graphs stubbed true: the CPU has no CUDA)."""
    from decoding.models import scoring

    monkeypatch.setattr(scoring, "supports_graphs", lambda model: True)
    assert not scoring.on_device(tiny, "tiny-custom").fuse  # a hub or local model: no weight copies
    assert scoring.scoring_target(tiny, "tiny-embedded").fuse  # the embedded target: fused (its copies: 280 MB)
    monkeypatch.setattr(scoring, "supports_graphs", lambda model: False)
    assert scoring.on_device(tiny, "tiny-custom-2") is tiny


def test_graphs_can_be_switched_off_and_are_off_on_zerogpu(monkeypatch) -> None:
    monkeypatch.setattr(graphed_target, "on_zerogpu", lambda: False)
    monkeypatch.delenv("SPECSCOPE_CUDA_GRAPHS", raising=False)
    assert graphed_target.graphs_allowed()
    monkeypatch.setenv("SPECSCOPE_CUDA_GRAPHS", "0")
    assert not graphed_target.graphs_allowed()
    monkeypatch.setenv("SPECSCOPE_CUDA_GRAPHS", "1")
    monkeypatch.setattr(graphed_target, "on_zerogpu", lambda: True)
    assert not graphed_target.graphs_allowed()


def test_the_gpu_target_is_used_only_on_a_cuda_device(tiny) -> None:
    assert not graphed_target.supports_graphs(tiny)  # on the CPU: the lean float32 target (lean_target.py)
    assert not graphed_target.GraphedLlama(tiny).graphs


def test_the_calibration_says_which_forward_scores_the_trees(tiny) -> None:
    from types import SimpleNamespace

    from decoding.speed.calibrate import target_words

    def pair_of(model):
        return SimpleNamespace(target_session=lambda: HFTreeLM(model))

    assert target_words(pair_of(tiny)) == "transformers' forward"
    assert target_words(pair_of(graphed_target.GraphedLlama(tiny))) == "the graphed target's forward, eagerly"
