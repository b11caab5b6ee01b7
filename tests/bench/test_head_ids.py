"""bench/head_ids.py: the ids ranked by the target's p summed over the answer positions of the shards whose
answers it wrote (chat, magpie), read from the final features the shards keep; teacher-forced text (docs, code)
only where no such shard exists."""

from __future__ import annotations

import numpy as np
import torch

from bench import head_data, head_ids

HIDDEN, VOCAB = 4, 6


def shard(work, source: str, index: int, seqs: list[list[int]], answer: list[int], seed: int):
    taps = torch.Generator().manual_seed(seed)
    n = sum(map(len, seqs))
    forced = {"taps": torch.randn(n, 2, HIDDEN, generator=taps).half().numpy(), "lse": np.zeros(n, np.float32)}
    folder = work / "shards" / f"{source}-{index:03d}"
    folder.parent.mkdir(parents=True, exist_ok=True)
    head_data.write_shard(folder, seqs, answer, forced, {"source": source, "index": index})
    return folder


def expected_mass(folder, weight: torch.Tensor) -> torch.Tensor:
    """p summed where a feature predicts an answer token: sequence i's positions answer[i] - 1 .. len - 2."""
    s = head_data.read_shard(folder)
    total = torch.zeros(VOCAB, dtype=torch.float64)
    for i in range(len(s.answer)):
        for j in range(int(s.starts[i]) + int(s.answer[i]) - 1, int(s.starts[i + 1]) - 1):
            f = torch.from_numpy(np.asarray(s.taps[j, -1], dtype=np.float32))
            total += torch.softmax(weight @ f, -1).double()
    return total


def test_the_mass_is_p_summed_over_the_answer_positions_of_the_targets_own_answers(tmp_path) -> None:
    weight = torch.randn(VOCAB, HIDDEN, generator=torch.Generator().manual_seed(1))
    chat = shard(tmp_path, "chat", 0, [[1, 2, 3, 4, 5], [2, 2, 4]], [3, 1], seed=2)
    magpie = shard(tmp_path, "magpie", 0, [[5, 1, 0, 3]], [2], seed=3)
    docs = shard(tmp_path, "docs", 0, [[0, 1, 2, 3, 4, 5, 0]], [1], seed=4)
    folders = sorted(head_data.iter_shards(tmp_path))
    mass, positions = head_ids.answer_mass(folders, weight)
    assert positions == (2 + 2) + 2  # chat: 5 - 3 and 3 - 1 answer tokens; magpie: 4 - 2; docs not counted
    torch.testing.assert_close(mass, expected_mass(chat, weight) + expected_mass(magpie, weight))
    ranked, about = head_ids.ranked_from(folders, weight)
    assert about == {"sources": ["chat", "magpie"], "answer_positions": 6}
    assert torch.equal(ranked, torch.sort(-mass, stable=True).indices)
    ranked, about = head_ids.ranked_from([docs], weight)  # no answers the target wrote: the text it read
    assert about["sources"] == ["docs"]
    assert torch.equal(ranked, torch.sort(-expected_mass(docs, weight), stable=True).indices)
