"""The fused head's training and held-out check end to end on a tiny llama (no embedded model, a few seconds):
a head trained with bench/head_train.py's objective on the target's own greedy answers is accepted by the real
decoding path (bench/head_eval.py's exact acceptance from recorded p and q) on prompts it never saw, greedy
speculative decoding with it reproduces the target's greedy decoding, and a head trained on features shifted by
one position (the labels come from the features: it learns the law of the token before) fails the check.

The tiny target is made learnable and decisive: its layers' output products are zeroed, so its feature at a
position is a function of that token alone, and its lm_head rows are set so that the next token is the current one's
successor in one fixed cycle through every word, by a wide margin (a bigram machine; no short cycle lets a
head that reads the wrong position guess right). Its p is sharp, so a T = 0 check has no near-ties."""

from __future__ import annotations

import pytest
import torch

from bench import head_eval, head_train
from decoding.models.codec import HFCodec
from decoding.models.head.fused import FusedConfig, FusedHead
from decoding.models.head.lean_fused import LeanFusedHead
from decoding.models.head.pair import HeadParts, head_pair
from decoding.models.lean import target as lean_target
from decoding.run import engine
from decoding.run.config import DecodeConfig
from tests.conftest import save_tiny_llama
from tests.greedy_oracles import assert_plain_greedy

WORDS = [f"w{i}" for i in range(40)]
TAPS = (1,)
TRAIN_PROMPTS = [" ".join(WORDS[i: i + 5]) for i in range(0, 40, 5)]  # every word once
HELD_OUT = ["w33 w2 w17 w8", "w5 w5 w21 w30 w9", "w12 w38 w1"]
FIRST_LEVEL = 0.6  # the fixture's check: the first level accepts at least this at T = 0


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return save_tiny_llama(tmp_path_factory.mktemp("tiny-train") / "m", WORDS, seed=3)


@pytest.fixture(scope="module")
def tiny(folder):
    """The bigram machine (module docstring): next(w) = a fixed permutation of the words."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    vocab = model.config.vocab_size
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        features = model.model(torch.arange(vocab)[:, None]).last_hidden_state[:, 0]  # [V, hidden]
        cycle = 2 + torch.randperm(vocab - 2, generator=torch.Generator().manual_seed(4))  # the words, one cycle
        before = torch.arange(vocab)  # <unk> and <eos> follow themselves
        before[cycle.roll(-1)] = cycle  # the word after cycle[i] is cycle[i + 1]
        model.lm_head.weight.copy_(0.3 * features[before])  # row y: the feature of the word before y
    return model


def answers(tiny, folder) -> list[list[int]]:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    seqs = []
    for prompt in TRAIN_PROMPTS:
        ids = tok.encode(prompt)
        with torch.no_grad():
            out = tiny.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                                do_sample=False, max_new_tokens=40, pad_token_id=tok.eos_token_id)
        seqs.append(out[0].tolist())
    return seqs


def batch_of(tiny, seqs: list[list[int]], shift: int = 0) -> dict[str, torch.Tensor]:
    """What head_train.Corpus.batch gives, from the tiny target's plain forwards (answers start at token 1);
    shift: the features (and so the labels) of `shift` positions before, the first rows repeated."""
    width = max(map(len, seqs))
    hidden = tiny.config.hidden_size
    batch = {"ids": torch.zeros(len(seqs), width, dtype=torch.long), "taps": torch.zeros(len(seqs), width, 2, hidden),
             "lse": torch.zeros(len(seqs), width), "length": torch.tensor([len(s) for s in seqs]),
             "answer": torch.ones(len(seqs), dtype=torch.long)}
    for row, seq in enumerate(seqs):
        with torch.no_grad():
            out = tiny(torch.tensor([seq]), output_hidden_states=True)
        at = (torch.arange(len(seq)) - shift).clamp(min=0)
        batch["ids"][row, : len(seq)] = torch.tensor(seq)
        batch["taps"][row, : len(seq)] = torch.stack([out.hidden_states[1][0], out.hidden_states[-1][0]], dim=1)[at]
        batch["lse"][row, : len(seq)] = torch.logsumexp(out.logits[0], -1)[at]
    return batch


def train_head(tiny, folder, shift: int = 0) -> FusedHead:
    torch.manual_seed(0)
    head = new_head(tiny)
    batch = batch_of(tiny, answers(tiny, folder), shift)
    embed, lm_rows = tiny.model.embed_tokens.weight.detach(), tiny.lm_head.weight.detach()
    opt = torch.optim.Adam(head.parameters(), lr=3e-3)
    for _ in range(150):
        loss, _ = head_train.losses(head, batch, embed, lm_rows, levels=3, mix=0.3)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return head.eval()


def new_head(tiny) -> FusedHead:
    return FusedHead(FusedConfig(hidden=tiny.config.hidden_size, taps=TAPS, heads=2, head_dim=8, inner=64,
                                 head_size=tiny.config.vocab_size))


@pytest.fixture(scope="module")
def trained(tiny, folder):
    return train_head(tiny, folder)


def pair_with(tiny, folder, head):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    codec = HFCodec(tokenizer, frozenset({int(tokenizer.eos_token_id)}), tiny.config.vocab_size, 128)
    lean = LeanFusedHead(head, tiny.lm_head.weight.detach())
    parts = HeadParts(lean, tiny.model.embed_tokens.weight.detach(), "tiny fused head")
    return head_pair(tiny, codec, lean_target.LeanFloatLlama(tiny), parts, "cpu")


def test_the_trained_head_passes_the_check_on_held_out_prompts(tiny, folder, trained) -> None:
    result = head_eval.measure(pair_with(tiny, folder, trained), HELD_OUT, 24, temperatures=(0.0,))
    assert head_eval.meets(result, 0.0, FIRST_LEVEL), result["0.0"]["by_depth"]


def test_a_head_trained_on_features_shifted_by_one_position_fails_the_check(tiny, folder) -> None:
    shifted = train_head(tiny, folder, shift=1)
    result = head_eval.measure(pair_with(tiny, folder, shifted), HELD_OUT, 24, temperatures=(0.0,))
    assert not head_eval.meets(result, 0.0, FIRST_LEVEL), result["0.0"]["by_depth"]


def test_an_untrained_head_fails_the_check(tiny, folder) -> None:
    torch.manual_seed(1)
    result = head_eval.measure(pair_with(tiny, folder, new_head(tiny).eval()), HELD_OUT, 24, temperatures=(0.0,))
    assert not head_eval.meets(result, 0.0, FIRST_LEVEL), result["0.0"]["by_depth"]


@pytest.mark.parametrize("shape", [dict(verifier="sd", branching=(1, 1, 1)),
                                   dict(verifier="pointmass", branching=(2, 2))])
def test_speculative_greedy_with_the_trained_head_equals_plain_greedy(tiny, folder, trained, shape) -> None:
    """Oracle: transformers' generate(do_sample=False) on the same ids (tests/greedy_oracles.py)."""
    pair = pair_with(tiny, folder, trained)
    config = DecodeConfig(temperature=0.0, max_new_tokens=40, chat=False, **shape)
    for prompt in HELD_OUT:
        run = engine.generate(pair, config, prompt)
        got = list(run.generated_ids)
        assert len(got) >= 2 * len(run.steps)  # the head's drafts were accepted: two tokens a step or more
        assert_plain_greedy(pair, pair.encode_prompt(prompt, chat=False), got)


def test_training_goes_on_from_a_saved_head_with_more_ids_but_not_another_shape(tmp_path) -> None:
    """`train-head --init DIR --head-size N`: the saved weights, scoring N ids (head_pipeline.start_head); a head of
    another shape (here other taps) is refused with the config it holds."""
    from bench.head_pipeline import start_head
    from decoding.models.head.weights import save_head

    saved = FusedHead(FusedConfig(hidden=16, taps=(1,), heads=2, head_dim=8, inner=32, head_size=30))
    save_head(saved, tmp_path / "h", {"made_by": "test"})
    wider = FusedConfig(hidden=16, taps=(1,), heads=2, head_dim=8, inner=32, head_size=60)
    head = start_head(str(tmp_path / "h"), wider)
    assert head.config == wider
    for name, tensor in head.state_dict().items():
        assert torch.equal(tensor, saved.state_dict()[name].half().float()), name  # saved in float16
    with pytest.raises(ValueError, match="taps=\\(1,\\)"):
        start_head(str(tmp_path / "h"), FusedConfig(hidden=16, taps=(0,), heads=2, head_dim=8, inner=32, head_size=30))
