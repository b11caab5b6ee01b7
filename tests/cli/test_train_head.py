"""train-head's data plumbing (no model): answers+features survive a safetensors round trip, and every
training example lines up f_t with x_{t+1}, x_{t+2}, f_{t+1}, f_{t+2} of the same answer, answers only."""

from __future__ import annotations

import torch

from decoding.cli.train_head import IM_START, examples, load_data, save_data


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


def test_examples_line_up_features_and_tokens_of_the_answer() -> None:
    data = fake_answers()
    ex = examples(data["seqs"], data["feats"])
    for i in range(len(ex["f"])):
        t, answer = int(ex["f"][i, 0]), int(ex["answer"][i])
        seq = data["seqs"][answer]
        assert int(ex["f"][i, 1]) == answer and t >= max(j for j, x in enumerate(seq) if x == IM_START) + 1
        assert (int(ex["x1"][i]), int(ex["x2"][i])) == (seq[t + 1], seq[t + 2])
        assert (int(ex["g1"][i, 0]), int(ex["g2"][i, 0])) == (t + 1, t + 2)
    assert sorted(int(a) for a in ex["answer"].unique()) == [0, 1]
    assert len(ex["f"]) == (11 - 3 - 4) + (7 - 3 - 1)  # from the last header token's successor to len - 3
