"""On a CUDA GPU (marker `cuda`; skipped, not failed, where torch sees none): `./specscope test -m cuda`.

- the one-pass tree forward (models/target.score_tree through HFTreeLM) equals one plain forward per
  root-to-leaf path, in bfloat16 on the embedded target on the GPU (the tree mask and positions are right there),
  through transformers' model and through the target's forward replayed from CUDA graphs (graphed_target.py);
- that graphed forward equals transformers' forward in float32 (a prefill and tree calls of 1, 3 and 2 rows);
- the draft head's calls replayed from CUDA graphs give the eager calls' q, over every token id (head/pair.py);
- speculative greedy decoding with device cuda emits the target's own greedy tokens: on the embedded pair (target on
  the GPU, the int8 self-draft on the CPU: embedded/self_draft.py) and on the embedded-head pair (target and head
  on the GPU), both scored by the graphed forward (models/scoring.py);
- a custom pair of tiny llama folders in bfloat16: target and draft both graphed on their own weights
  (models/scoring.py), the forward equal to transformers', greedy equal to `generate()`;
- one app Step (the ui handler) with the device set to cuda (SPECSCOPE_DEVICE, what ui/decode.device reads);
- the draft head's training on cuda: its corpus kept in GPU memory gives the batches the mapped one gives, and
  `train-head --device cuda` makes data and trains at a toy scale on time budgets (the stages a lent GPU runs).
"""

from __future__ import annotations

import copy
import gc
from dataclasses import fields, replace

import pytest
import torch

from decoding.models import pairs as models
from decoding.models import scoring
from decoding.models.cuda.graphed_target import GraphedLlama
from decoding.models.embedded.model import MODEL_NAME
from decoding.models.hf_treelm import HFTreeLM
from decoding.models.target import score_tree
from decoding.run import engine
from decoding.run.config import DecodeConfig
from decoding.verify.tree import DraftTree
from tests.models.test_lean_draft import assert_same_forward
from tests.tree_oracles import score_by_paths

pytestmark = [pytest.mark.cuda, pytest.mark.slow,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="torch sees no CUDA GPU here")]

PROMPTS = ["What is the capital of France?", "Write a haiku about autumn leaves.", "def fibonacci(n):"]
NEW_TOKENS = 32
NEAR_TIE = 2e-3  # top-1 minus top-2 logit below which one forward vs another may legitimately flip a token


@pytest.fixture(scope="module")
def pair():
    return models.load_pair("embedded", device="cuda", progress=lambda *a: None)


@pytest.mark.parametrize("forward", ["transformers", "cuda graphs"])
def test_the_one_pass_tree_forward_equals_one_forward_per_path_in_bfloat16(pair, forward) -> None:
    model = copy.deepcopy(pair.target_model).to(torch.bfloat16).eval()  # [on the GPU]
    assert model.device.type == "cuda"
    prefix = pair.encode_prompt("Tell me about the moon.", chat=True)
    tree = (DraftTree.root(prefix[-1]).add_draws(0, [260, 1524, 3156], merge=False)
            .add_draws(1, [28, 476], merge=False).add_draws(4, [253], merge=False))
    scorer = GraphedLlama(model) if forward == "cuda graphs" else model
    lm = HFTreeLM(scorer, pair.vocab_size)
    lm.start(prefix)  # caches prefix[:-1]; the root is prefix[-1]
    one_pass = score_tree(lm, tree)  # [N, V] float32 on the CPU
    per_path = score_by_paths(model, prefix[:-1], tree)[:, : pair.vocab_size]  # [N, V]
    assert one_pass.shape == per_path.shape == (len(tree), pair.vocab_size)
    # bfloat16 keeps ~3 significant digits; a wrong mask or position moves logits by whole units
    torch.testing.assert_close(one_pass, per_path, atol=0.5, rtol=0.05)
    if forward == "cuda graphs":
        assert 8 in lm.cache.slots.graphs  # the 7-node tree was replayed from the 8-row graph (the prefill: its own)
    p, q = one_pass.softmax(-1), per_path.softmax(-1)  # [N, V]
    assert float((p - q).abs().sum(-1).max()) < 0.1  # total variation per node, twice
    top2 = per_path.topk(2, dim=-1).values  # [N, 2]
    clear = (top2[:, 0] - top2[:, 1]) > 0.5
    assert torch.equal(one_pass.argmax(-1)[clear], per_path.argmax(-1)[clear])


def test_the_graphed_target_equals_the_transformers_forward_on_cuda(pair) -> None:
    """float32 on the GPU: a prefill, then tree calls of 1, 3 and 2 rows replayed from graphs (padded to 1, 4, 2)."""
    graphed = GraphedLlama(pair.target_model)
    assert graphed.graphs and pair.target_session().model is scoring.scoring_target(pair.target_model,
                                                                                      MODEL_NAME)
    assert_same_forward(pair.target_model, graphed, seed=3, tol=2e-3)
    gc.collect()  # the dropped cache's slots go back to the model with their graphs
    assert len(graphed.spare) == 1 and set(graphed.spare[0].graphs) == {8, 1, 4, 2}  # prefill 8, then 1, 3, 2 rows


@pytest.mark.parametrize("kind, shape", [("embedded", (3, 2, 2)), ("embedded-head", (1, 1, 1, 1))])
def test_speculative_greedy_equals_plain_greedy_on_cuda(kind, shape) -> None:
    pair = models.load_pair(kind, device="cuda", progress=lambda *a: None)
    assert pair.device == "cuda" and pair.target_model.device.type == "cuda"
    config = DecodeConfig(verifier="rrs_wor", branching=shape, temperature=0.0, max_new_tokens=NEW_TOKENS)
    near_ties = [prompt for prompt in PROMPTS if not _greedy_matches(pair, config, prompt, NEAR_TIE)]
    assert len(near_ties) <= 1, f"too many near-ties: {near_ties}"


def test_the_draft_heads_calls_replay_from_cuda_graphs_and_score_every_id() -> None:
    """The embedded-head pair on cuda: the head's catch-up and levels replay from graphs on leased slots and give
    the eager calls' q (the same head and rows, unpadded); q covers every id there (pair.scored_ids)."""
    pair = models.load_pair("embedded-head", device="cuda", progress=lambda *a: None)
    ids = pair.encode_prompt(PROMPTS[0], chat=True)
    rows = []
    for graphed in (True, False):
        target = pair.target_session()
        draft = pair.draft_session(target)
        if not graphed:
            draft.run = draft.head.call
        target.start(ids)
        draft.start(ids)
        tree = DraftTree.root(ids[-1])
        got = [score_tree(draft, tree)[0]]  # [V]: the root's (the prompt's catch-up runs eagerly: past 16 rows)
        target.logits(tree, [0])
        target.commit([0], next_token=int(got[0].argmax()), tree=tree)  # a one-token step: a 1-row catch-up
        draft.commit([0], next_token=int(got[0].argmax()), tree=tree)
        tree = DraftTree.root(int(got[0].argmax()))
        got.append(draft.logits(tree, [0])[0])
        tree = tree.add_draws(0, got[-1].topk(3).indices.tolist(), merge=False)
        got += list(draft.logits(tree, [1, 2, 3]))  # one level of 3 rows: the 4-row graph
        rows.append(torch.stack(got))  # [5, V]
        if graphed:
            assert draft.run.graphs and {(1, True), (4, False)} <= set(draft.slots.graphs)
    assert bool(torch.isfinite(rows[0]).all())  # every id scored on a GPU
    torch.testing.assert_close(rows[0], rows[1], atol=2e-3, rtol=2e-3)


def test_a_custom_llama_pair_on_one_gpu_runs_both_models_from_graphs(tiny_matching_folders) -> None:
    """Hub or local llama models on cuda (bfloat16): target and draft both replayed from graphs, on their own
    weights (graphed_target fuse=False: no copies of a large model)."""
    target, draft = (str(folder) for folder in tiny_matching_folders)
    pair = models.load_pair("custom", target=target, draft=draft, device="cuda", progress=lambda *a: None)
    target_lm, draft_lm = pair.target_session(), pair.draft_session()
    assert pair.target_model.dtype == torch.bfloat16
    assert isinstance(target_lm.model, GraphedLlama) and isinstance(draft_lm.model, GraphedLlama)
    assert not target_lm.model.fuse and not draft_lm.model.fuse and target_lm.model is not draft_lm.model
    assert_same_forward(pair.target_model, target_lm.model, seed=2, tol=2e-2, vocab=pair.vocab_size)  # bfloat16
    # pointmass: at T = 0 its top-4 ranks the draft's untempered law (a sampling law's q is one-hot there, and a
    # node draws within q's support: one candidate, which these two random tiny models rarely agree on)
    config = DecodeConfig(verifier="pointmass", branching=(4, 2), temperature=0.0, max_new_tokens=16, chat=False)
    prompts = ["a b c", "f e d c", "b b a"]
    near_ties = [prompt for prompt in prompts if not _greedy_matches(pair, config, prompt, 0.05)]
    assert len(near_ties) <= 1, f"too many near-ties: {near_ties}"


def _greedy_matches(pair, config: DecodeConfig, prompt: str, near_tie: float) -> bool:
    """Speculative greedy tokens vs `generate()`'s: True when equal; False when they part at a near-tie
    (top-1 minus top-2 logit under `near_tie`, where one forward vs another may flip the token); else fails."""
    ids = pair.encode_prompt(prompt, chat=config.chat)
    with torch.no_grad():
        prompt_ids = torch.tensor([ids], device="cuda")
        want = pair.target_model.generate(prompt_ids, attention_mask=torch.ones_like(prompt_ids), do_sample=False,
                                          max_new_tokens=config.max_new_tokens,
                                          pad_token_id=min(pair.eos_ids))[0, len(ids):]
    run = engine.generate(pair, config, prompt)
    want, got = want.tolist(), list(run.generated_ids)
    assert len(got) > len(run.steps), "no draft was accepted: the draft does not read this target"
    first = next((i for i in range(min(len(got), len(want))) if got[i] != want[i]), None)
    if first is None:
        assert len(got) == len(want)
        return True
    with torch.no_grad():
        logits = pair.target_model(torch.tensor([ids + want[:first]], device="cuda")).logits[0, -1].double()
    top = torch.topk(logits, 2).values
    assert float(top[0] - top[1]) < near_tie, f"{prompt!r}: token {first} differs with a clear logit gap"
    return False


def test_one_app_step_with_the_device_set_to_cuda(monkeypatch) -> None:
    import app
    from ui import controls as ui_controls
    from ui.run_cache import RunCache
    from ui.session import Controls, Session

    monkeypatch.setenv("SPECSCOPE_DEVICE", "cuda")
    runs = RunCache()
    _, views = app.build_page("embedded", runs)
    controls = replace(Controls(), pair="embedded", prompt="Name three colours.", verifier="rrs_wor",
                       branching="2,2", temperature=1.0, seed=1, max_new_tokens=16)
    raw = {f.name: getattr(controls, f.name) for f in fields(Controls)}
    out = views.named(ui_controls.step(views, views.inputs(Session(), **raw), progress=None, runs=runs))
    session = out.session
    assert session.run is not None and len(session.steps) == 1 and session.run.generated_ids, out.status
    assert session.run.pair["device"] == "cuda"
    assert "⚠" not in out.status and "error" not in out.status.lower()


def test_the_head_corpus_kept_on_the_gpu_gives_the_mapped_batches(tmp_path) -> None:
    from bench import head_train
    from tests.bench.test_head_corpus import fake_shard

    folders = [tmp_path / "shards" / "chat-000", tmp_path / "shards" / "docs-000"]
    fake_shard(folders[0], "chat", [9, 5, 12, 7], seed=1)
    fake_shard(folders[1], "docs", [6, 11, 4], seed=2)
    plan = head_train.TrainPlan(held_share=0.0)
    mapped, resident = head_train.Corpus(folders, plan), head_train.Corpus(folders, plan)
    resident.keep_on("cuda")
    picks = mapped.fit[::-1]
    want, got = mapped.batch(picks, 8, "cuda"), resident.batch(picks, 8)
    for key in want:
        assert got[key].device.type == "cuda" and torch.equal(want[key], got[key]), key


def test_train_head_makes_data_and_trains_on_cuda(tmp_path) -> None:
    """The fused pipeline's data and training stages with --device cuda, at a toy scale and on time budgets (what
    a lent GPU runs at full scale: docs/speed.md, "The head trained on a GPU")."""
    import json

    from bench import train_head
    from decoding.models.head import weights as draft_head

    argv = ["--device", "cuda", "--work", str(tmp_path / "work"), "--out", str(tmp_path / "out"), "--chat-shards", "1",
            "--magpie-shards", "1", "--docs-shards", "1", "--code-shards", "0", "--batch", "4", "--new-tokens", "8",
            "--steps", "40", "--train-batch", "4", "--data-seconds", "120", "--train-seconds", "30", "--ship", "never",
            "--stop-after", "train"]
    assert train_head.main(argv) == 0
    about = json.loads((tmp_path / "work" / "candidate" / draft_head.CONFIG).read_text())["about"]
    assert about["device"] == "cuda" and 1 <= about["train"]["steps"] <= 40
    assert {"chat", "magpie"} <= set(about["data"]) and about["train"]["answer_tokens"] > 0
