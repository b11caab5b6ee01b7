"""train-head's data plumbing and objective (no embedded model): answers+features survive a safetensors round
trip, every training example lines up f_t with x_{t+k}, f_{t+k} (k = 1..levels) of the same answer, answers only,
and the unrolled objective feeds each level the head's own previous prediction (oracle: the chain by hand)."""

from __future__ import annotations

import pytest
import torch

from bench.train_head import IM_START, Objective, at, examples, load_data, save_data
from decoding.models.head.weights import DraftHead, HeadConfig


def fake_answers() -> dict:
    """Two answers after a chat header (IM_START ... assistant, then the answer); feature row t = [t, answer]."""
    seqs = [[IM_START, 50, 51, IM_START, 60, 10, 11, 12, 13, 14, 15], [IM_START, 60, 20, 21, 22, 23, 24]]
    feats = [torch.tensor([[float(t), float(a)] for t in range(len(s))], dtype=torch.float16)
             for a, s in enumerate(seqs)]
    return {"seqs": seqs, "feats": feats}


def test_answers_and_features_round_trip(tmp_path) -> None:
    data = fake_answers()
    save_data(data, str(tmp_path / "a.safetensors"))
    back = load_data(str(tmp_path / "a.safetensors"))
    assert back["seqs"] == data["seqs"]
    for a, b in zip(data["feats"], back["feats"], strict=True):
        assert torch.equal(a, b)


@pytest.mark.parametrize("levels", [1, 2, 3])
def test_examples_line_up_features_and_tokens_of_the_answer(levels) -> None:
    data = fake_answers()
    ex = examples(data["seqs"], data["feats"], levels)
    everyone = torch.arange(len(ex["pos"]))
    _, f = at(ex, everyone, 0)
    for i in range(len(ex["pos"])):
        t, answer = int(f[i, 0]), int(ex["answer"][i])
        seq = data["seqs"][answer]
        assert int(f[i, 1]) == answer and t >= max(j for j, x in enumerate(seq) if x == IM_START) + 1
        for k in range(1, levels + 1):
            x, g = at(ex, everyone[i:i + 1], k)
            assert int(x[0]) == seq[t + k] and (int(g[0, 0]), int(g[0, 1])) == (t + k, answer)
    assert sorted(int(a) for a in ex["answer"].unique()) == [0, 1]
    # from the last header token's successor to len - 1 - levels, in each answer
    assert len(ex["pos"]) == (11 - 1 - levels - 4) + (7 - 1 - levels - 1)


def test_each_level_is_the_head_on_its_own_previous_prediction() -> None:
    """Oracle: the chain f -> head(f, e(x_{t+1})) -> head(., e(x_{t+2})) -> ... by hand, level by level; the
    objective's acceptance per level is sum_x min(p, q) of that chain against the gold feature's law."""
    torch.manual_seed(3)
    hidden, vocab, levels = 8, 70, 3
    seqs = [[IM_START, 5] + torch.randint(vocab, (12,)).tolist(), [IM_START] + torch.randint(vocab, (9,)).tolist()]
    feats = [torch.randn(len(s), hidden).to(torch.float16) for s in seqs]
    head = DraftHead(HeadConfig(hidden=hidden, inner=16, head_size=vocab)).eval()
    embed, lm_rows = torch.randn(vocab, hidden), torch.randn(vocab, hidden)
    ex = examples(seqs, feats, levels)
    idx = torch.arange(len(ex["pos"]))
    with torch.no_grad():
        _, alphas = Objective(head, embed, lm_rows, levels)(ex, idx)
        flat_ids, flat_f = torch.tensor([t for s in seqs for t in s]), torch.cat(feats).float()
        pred = flat_f[ex["pos"]]
        for k in range(1, levels + 1):
            pred = head(pred, embed[flat_ids[ex["pos"] + k]])
            p, q = torch.softmax(flat_f[ex["pos"] + k] @ lm_rows.T, -1), torch.softmax(pred @ lm_rows.T, -1)
            assert alphas[k - 1] == pytest.approx(float(torch.minimum(p, q).sum(-1).mean()), abs=1e-6)
    assert len(alphas) == levels
