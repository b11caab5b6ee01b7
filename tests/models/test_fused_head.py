"""The fused draft head (fused.py) on a tiny llama (no embedded model): the target session keeps every position's
taps, each draft row (lean_fused.py through fused_drafter.py, kept keys and all) is the reference computation
`FusedHead.unrolled` along that node's own path from the target's plain features (greedy decoding with a
trained head: tests/bench/test_fused_training.py)."""

from __future__ import annotations

import gc
import json

import pytest
import torch

from decoding.models.cuda.graphed_target import GraphedLlama
from decoding.models.head import graphed_calls
from decoding.models.head.feature_target import FeatureTreeLM
from decoding.models.head.fused import FusedConfig, FusedHead
from decoding.models.head.fused_drafter import FusedHeadTreeLM
from decoding.models.head.graphed_calls import GraphedHeadCalls
from decoding.models.head.lean_fused import LeanFusedHead
from decoding.models.head.weights import load_head, save_head
from decoding.models.lean import few_rows, native_rows
from decoding.models.lean import target as lean_target
from decoding.verify.tree import DraftTree
from tests.conftest import save_tiny_llama
from tests.graph_stand_in import stand_in_capture
from tests.models.test_lean_draft import WORDS

HEAD_SIZE = 30  # the tiny vocabulary has more ids: q = 0 beyond these
TAPS = (1,)  # the tiny llama has 2 layers: the state after the first, fused with the final feature


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return save_tiny_llama(tmp_path_factory.mktemp("tiny-fused") / "m", WORDS, seed=11)


@pytest.fixture(scope="module")
def tiny(folder):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()


@pytest.fixture(scope="module")
def head(tiny):
    torch.manual_seed(5)
    config = FusedConfig(hidden=tiny.config.hidden_size, taps=TAPS, heads=2, head_dim=8, inner=48,
                         head_size=HEAD_SIZE)
    return FusedHead(config).eval()


def plain_rows(tiny, ids: list[int]) -> torch.Tensor:
    """[len(ids), len(TAPS) + 1, hidden]: every position's taps and final feature, one plain causal forward."""
    with torch.no_grad():
        out = tiny.model(torch.tensor([ids]), output_hidden_states=True)
    return torch.stack([out.hidden_states[t][0] for t in TAPS] + [out.last_hidden_state[0]], dim=1)


def reference_row(tiny, head, context: list[int], path_tokens: list[int], lm_rows=None) -> torch.Tensor:
    """[V] the head's logits at the end of `path_tokens` (root first): FusedHead.unrolled over the context and the
    drafted tokens, read at the root's pair and the path's level."""
    seq = context + path_tokens[1:]
    with torch.no_grad():
        states = head.unrolled(plain_rows(tiny, seq)[None], torch.tensor([seq]), tiny.model.embed_tokens.weight,
                               levels=len(path_tokens))
        row = torch.full((tiny.config.vocab_size,), float("-inf"))
        lm_rows = tiny.lm_head.weight[:HEAD_SIZE] if lm_rows is None else lm_rows  # [HEAD_SIZE, hidden]
        row[:HEAD_SIZE] = head.logits(states[-1][0, len(context) - 2], lm_rows)
    return row


def sessions(tiny, head, scorer, graphed: bool = False):
    """The target session and the draft session; graphed: the head's calls padded as a GPU replays them from
    CUDA graphs (graphed_calls.py, run eagerly here), on slots leased from them."""
    target = FeatureTreeLM(scorer, taps=TAPS)
    lean = LeanFusedHead(head, tiny.lm_head.weight.detach()[:HEAD_SIZE])
    calls = GraphedHeadCalls(lean, graphs=False) if graphed else None
    return target, FusedHeadTreeLM(lean, tiny.model.embed_tokens.weight.detach(), target.vocab_size, target, calls)


def scorers(tiny):
    """The target's three forwards: transformers', the lean CPU one, the GPU one (graphed_target.py: run eagerly
    here, padded to its rows buckets as it is on a GPU)."""
    return {"transformers": tiny, "lean": lean_target.LeanFloatLlama(tiny), "graphed": GraphedLlama(tiny, padded=True)}


@pytest.mark.parametrize("kind", ["transformers", "lean", "graphed"])
def test_the_target_keeps_every_positions_taps(tiny, head, kind) -> None:
    target, _ = sessions(tiny, head, scorers(tiny)[kind])
    context = [3, 7, 2, 9, 4]
    target.start(context)
    torch.testing.assert_close(target.history, plain_rows(tiny, context[:-1]), atol=1e-4, rtol=1e-4)
    tree = DraftTree.root(context[-1]).add_draws(0, [5, 8], merge=False).add_draws(2, [6], merge=False)
    target.logits(tree, [0, 1, 2, 3])
    target.commit([0, 2, 3], next_token=10, tree=tree)  # accepted 8, 6; the bonus 10 is the next root
    torch.testing.assert_close(target.history, plain_rows(tiny, context + [8, 6]), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("kind", ["transformers", "lean", "graphed"])
def test_each_draft_row_is_the_unrolled_head_along_its_own_path(tiny, head, kind) -> None:
    assert_rows_follow_paths(tiny, head, *sessions(tiny, head, scorers(tiny)[kind]))


def test_the_head_calls_padded_as_a_gpu_replays_them_give_the_same_rows(tiny, head) -> None:
    """Each call padded to its rows bucket, attention over the whole slot buffer, padded rows in slots of their
    own (what the CUDA graphs replay); the slots grown mid-run (a small buffer), then given back for reuse."""
    target, draft = sessions(tiny, head, tiny, graphed=True)
    draft.slots.keys, draft.slots.values = draft.slots.keys[:, :4], draft.slots.values[:, :4]  # room for 4 only
    calls = draft.run
    assert isinstance(calls, GraphedHeadCalls) and not calls.graphs
    assert_rows_follow_paths(tiny, head, target, draft)
    assert draft.slots.capacity >= 8  # grown past the 4 slots: 4 context pairs, then a 4-row bucket after them
    slots = draft.slots
    del draft
    gc.collect()
    assert calls.spare == [slots]
    holder = type("Session", (), {})()
    assert calls.lease(holder) is slots and calls.spare == [] and slots.filled == 0


def test_calls_replayed_from_graphs_copy_their_inputs_in_and_read_the_replayed_outputs(tiny, head, monkeypatch) -> None:
    """graphed_calls' replay path with a stand-in for CUDA graphs: each bucket and call kind captured once, every
    later call's inputs copied into the captured ones, the rows still the reference's."""
    captured = []
    monkeypatch.setattr(graphed_calls, "capture", stand_in_capture(captured))
    target, draft = sessions(tiny, head, tiny, graphed=True)
    draft.run.graphs = True
    assert_rows_follow_paths(tiny, head, target, draft)
    # per step: a catch-up (4 pairs, then 3: both the 4-row bucket), a level of 2 rows, two levels of 1 row
    assert set(draft.slots.graphs) == {(4, True), (2, False), (1, False)} and len(captured) == 3
    assert sum(graph.replays for graph in captured) == 8 and draft.run.graphs  # every call replayed, 3 captured


@pytest.mark.parametrize("method", sorted(set(few_rows.available_products()) - {"stock"}))
def test_with_a_product_plan_the_rows_are_the_same(tiny, head, method) -> None:
    target, draft = sessions(tiny, head, tiny)
    few_rows.apply_plan(draft.head, {n: method for n in range(1, 9)}, pad={2: 4})
    products = [draft.head.head] + [getattr(draft.head.lean_layers[0], n)
                                    for n in ("fuse", "mix", "qkv", "o", "gate", "up", "down")]
    assert all(isinstance(p, few_rows.PlannedProjection) and p.plan[1] == method for p in products)
    assert_rows_follow_paths(tiny, head, target, draft)


@pytest.mark.parametrize("method", sorted({"native", "native512"} & set(few_rows.available_products())))
def test_a_head_of_float16_values_keeps_float16_panels_and_the_same_rows(tiny, head, method) -> None:
    """A shipped head's weights are float16 values (save_head), and its lm_head rows are rounded to them
    (weights.draft_lm_rows): every product keeps the native kernels' copy in float16, the rows stay the
    reference's. A weight of float32 values keeps float32 panels."""
    from copy import deepcopy

    from decoding.models.head.weights import draft_lm_rows

    halved = deepcopy(head)
    with torch.no_grad():
        for weight in halved.parameters():
            weight.copy_(weight.to(torch.float16).float())
    rows = draft_lm_rows(tiny.lm_head.weight, HEAD_SIZE)  # [HEAD_SIZE, hidden]
    assert native_rows.exact_in_half(rows) and not native_rows.exact_in_half(tiny.lm_head.weight[:HEAD_SIZE])
    target = FeatureTreeLM(tiny, taps=TAPS)
    draft = FusedHeadTreeLM(LeanFusedHead(halved, rows), tiny.model.embed_tokens.weight.detach(),
                            target.vocab_size, target)
    few_rows.apply_plan(draft.head, {n: method for n in range(1, 9)})
    inners = few_rows.products_of(draft.head)
    assert len(inners) == 8 and all(inner.panel_dtype == torch.float16 for inner in inners)
    assert_rows_follow_paths(tiny, halved, target, draft, lm_rows=rows)
    assert all(inner.native_panels.dtype == torch.float16 for inner in inners)  # what the rows were made with
    plain = few_rows.products_of(sessions(tiny, head, tiny)[1].head)  # float32 values, the lm rows unrounded
    assert plain[0].panel_dtype == torch.float32  # the lm rows
    assert all((inner.panel_dtype == torch.float16) == native_rows.exact_in_half(inner.weight) for inner in plain)


def assert_rows_follow_paths(tiny, head, target, draft, lm_rows=None) -> None:
    """Two steps: a tree grown over three calls (siblings, and a node with its child in one call), then, after a
    commit of two drafted tokens and a bonus, a tree whose first call catches up on three committed pairs."""
    context = [3, 7, 2, 9, 4]
    target.start(context)
    draft.start(context)
    for _ in range(2):
        tree = DraftTree.root(context[-1])
        rows = {0: draft.logits(tree, [0])[0]}
        tree = tree.add_draws(0, [5, 8], merge=False)
        rows.update(zip([1, 2], draft.logits(tree, [1, 2]), strict=True))
        tree = tree.add_draws(1, [6], merge=False).add_draws(3, [2], merge=False)  # node 3 and its child 4 at once
        rows.update(zip([3, 4], draft.logits(tree, [3, 4]), strict=True))
        for node, row in rows.items():
            expected = reference_row(tiny, head, context, [tree.tokens[n] for n in tree.path(node)], lm_rows)
            torch.testing.assert_close(row, expected, atol=1e-4, rtol=1e-4)
            assert bool(torch.isneginf(row[HEAD_SIZE:]).all())
        assert len({round(float(r[0]), 6) for r in rows.values()}) == len(rows)  # the rows really differ
        target.logits(tree, [0, 1, 2, 3, 4])
        for lm in (target, draft):
            lm.commit([0, 1, 3], next_token=11, tree=tree)  # accepted 5, 6; bonus 11
        context = context + [5, 6, 11]


def test_without_target_features_the_draft_has_no_guess(tiny, head) -> None:
    target, draft = sessions(tiny, head, tiny)
    target.start([4])  # one token: nothing prefilled, so no features yet
    draft.start([4])
    assert len(target.history) == 0
    assert bool(torch.isneginf(draft.logits(DraftTree.root(4), [0])).all())
    assert draft.forwards == 0


def test_a_saved_fused_head_loads_back_and_an_unknown_kind_is_refused(head, tmp_path) -> None:
    save_head(head, tmp_path, {"note": "test"})
    loaded = load_head(tmp_path)
    assert isinstance(loaded, FusedHead) and loaded.config == head.config
    for (name, a), (_, b) in zip(head.state_dict().items(), loaded.state_dict().items(), strict=True):
        torch.testing.assert_close(b, a.to(torch.float16).float(), atol=0, rtol=0, msg=name)
    about = json.loads((tmp_path / "head.json").read_text())
    (tmp_path / "head.json").write_text(json.dumps(about | {"kind": "medusa"}))
    with pytest.raises(ValueError, match="kind 'medusa', which this specscope cannot run"):
        load_head(tmp_path)


@pytest.mark.parametrize("kind", ["transformers", "lean"])
def test_a_head_scoring_ranked_ids_puts_each_rows_q_at_those_ids(tiny, head, kind) -> None:
    """ranked_ids.py: the head's output rows are the lm_head rows of its ids (the commonest first, not the lowest):
    row k of its product is q's logit of token ids[k], the same logit a head scoring every id gives that token,
    and q = 0 at every other id."""
    vocab = tiny.config.vocab_size
    weight = tiny.lm_head.weight.detach()  # [V, hidden]
    ids = torch.arange(vocab).flip(0)[:HEAD_SIZE]  # the highest ids, highest first
    rows = {}
    for name, scored in (("all", torch.arange(vocab)), ("ranked", ids)):
        target = FeatureTreeLM(scorers(tiny)[kind], taps=TAPS)
        draft = FusedHeadTreeLM(LeanFusedHead(head, weight[scored], scored), tiny.model.embed_tokens.weight.detach(),
                                target.vocab_size, target)
        context = [3, 7, 2, 9, 4]
        target.start(context)
        draft.start(context)
        tree = DraftTree.root(context[-1]).add_draws(0, [5, 8], merge=False)
        rows[name] = torch.cat([draft.logits(tree, [0]), draft.logits(tree, [1, 2])])  # [3, V]
    assert torch.equal(torch.isfinite(rows["ranked"]).nonzero()[:, 1].unique(), ids.sort().values)
    torch.testing.assert_close(rows["ranked"][:, ids], rows["all"][:, ids], atol=1e-5, rtol=1e-5)
