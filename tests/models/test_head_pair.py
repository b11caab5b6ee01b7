"""(slow) The embedded-head pair: the shipped head loads offline, drafts only its head ids, and speculative
greedy decoding with it reproduces the target's own greedy decoding (near-ties: tests/greedy_oracles.py)."""

from __future__ import annotations

import pytest
import torch

from decoding.models import pairs as models
from decoding.models.cuda.graphed_target import GraphedLlama
from decoding.models.head.pair import head_pair, head_parts, scored_ids
from decoding.models.head.ranked_ids import ranked_ids
from decoding.models.head.weights import HEAD_DIR, load_head
from decoding.models.target import score_tree
from decoding.run import engine
from decoding.run.config import DecodeConfig
from decoding.verify.tree import DraftTree
from tests.greedy_oracles import NEW_TOKENS, PROMPTS, assert_plain_greedy

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pair():
    return models.load_pair("embedded-head", device="cpu")


def test_the_head_drafts_its_ids_and_agrees_with_the_target_at_the_root(pair):
    assert pair.kind == "embedded-head" and pair.draft_reads_target
    with pytest.raises(ValueError, match="pass it"):
        pair.draft_session()
    size = load_head().config.head_size
    scored = ranked_ids(HEAD_DIR, pair.codec.vocab_size)[:size]  # the commonest ids first (ranked_ids.py)
    ids = pair.encode_prompt(PROMPTS[0], chat=True)
    target = pair.target_session()
    draft = pair.draft_session(target)
    target.start(ids)
    draft.start(ids)
    q_logits = score_tree(draft, DraftTree.root(ids[-1]))[0]  # [V]
    p_logits = score_tree(target, DraftTree.root(ids[-1]))[0]  # [V]
    assert torch.equal(torch.isfinite(q_logits).nonzero().flatten(), scored.sort().values)  # q = 0 elsewhere
    assert int(scored.max()) >= size  # not the lowest ids: the ranking ships with the head
    assert int(q_logits.argmax()) == int(p_logits.argmax())


@pytest.mark.parametrize("prompt", PROMPTS)
def test_speculative_greedy_equals_plain_greedy(pair, prompt):
    config = DecodeConfig(verifier="sd", branching=(1, 1, 1), temperature=0.0, max_new_tokens=NEW_TOKENS)
    ids = pair.encode_prompt(prompt, chat=True)
    run = engine.generate(pair, config, prompt)
    got = list(run.generated_ids)
    assert len(got) > len(run.steps)  # some of the head's drafts were accepted: fewer target steps than tokens
    assert_plain_greedy(pair, ids, got)


def test_a_chain_that_stops_where_the_head_is_unsure_is_still_plain_greedy(pair):
    """DecodeConfig.min_confidence on the real head: the depth varies from step to step, the text does not."""
    config = DecodeConfig(verifier="sd", branching=(1, 1, 1, 1), temperature=0.0, max_new_tokens=NEW_TOKENS,
                          min_confidence=0.3)
    run = engine.generate(pair, config, PROMPTS[2])
    drafted = {len(step.nodes) - 1 for step in run.steps}
    assert len(drafted) > 1 and max(drafted) <= 4  # deep where sure, short where not
    assert len(run.generated_ids) > len(run.steps)
    assert_plain_greedy(pair, pair.encode_prompt(PROMPTS[2], chat=True), list(run.generated_ids))


@pytest.mark.parametrize("scorer", ["transformers", "graphed"])
def test_the_pair_scored_by_another_forward_drafts_and_decodes_alike(pair, scorer):
    """The paths a GPU runs, on the CPU here: the graphed forward (graphed_target.py, run eagerly with its
    bucket padding), or transformers' model for a target it cannot graph, gives p and the features; the head
    drafts on the model's device. Both give the lean path's q and the target's own greedy tokens."""
    model = pair.target_model
    forward = GraphedLlama(model, padded=True) if scorer == "graphed" else model
    generic = head_pair(model, pair.codec, forward, head_parts(model, "cpu"), "cpu")
    ids = pair.encode_prompt(PROMPTS[1], chat=True)
    q_by = []
    for each in (pair, generic):
        target = each.target_session()
        draft = each.draft_session(target)
        target.start(ids)
        draft.start(ids)
        q_by.append(score_tree(draft, DraftTree.root(ids[-1]))[0])  # [V]
    assert type(generic.target_session().model) is not type(pair.target_session().model)  # another forward
    finite = torch.isfinite(q_by[0])
    assert torch.equal(finite, torch.isfinite(q_by[1]))
    torch.testing.assert_close(q_by[1][finite], q_by[0][finite], atol=1e-3, rtol=1e-4)
    config = DecodeConfig(verifier="sd", branching=(1, 1, 1), temperature=0.0, max_new_tokens=NEW_TOKENS)
    run = engine.generate(generic, config, PROMPTS[1])
    assert len(run.generated_ids) > len(run.steps)
    assert_plain_greedy(generic, ids, list(run.generated_ids))


def test_the_head_scores_every_id_on_a_gpu_and_its_trained_ids_elsewhere():
    """head/pair.scored_ids: the wider output product is free on a GPU, a cost on a CPU (docs/speed.md)."""
    assert [scored_ids(device, 8192, 49152) for device in ("cuda", "cuda:1", "cpu", "mps")] == [49152] * 2 + [8192] * 2
    assert scored_ids("cpu", 49152, 49152) == 8192 and scored_ids("cpu", 4096, 49152) == 4096  # at most CPU_IDS
