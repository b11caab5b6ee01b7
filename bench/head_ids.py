"""The token ids a draft head scores, ranked by the target's own answers in the training shards.

The mass of an id is the target's probability p of it summed over every answer position of the shards whose
answers the target wrote (chat and magpie: what a draft meets while the target decodes); the teacher-forced
sources (docs, code) are another writer's text, ranked only where no shard of the target's own answers exists.
p comes from the final features the shards keep (teacher forcing: taps[:, -1]) through the target's lm_head, so
no forward of the target runs again. decoding/models/head/ranked_ids.py says why and how a head uses the ranking.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from bench import head_data
from decoding.models.head.ranked_ids import rank_by_mass

WRITTEN = ("chat", "magpie")  # the sources whose answers the target wrote itself
ROWS = 2048  # answer positions a product at a time


def answer_mass(folders: list[Path], lm_head_weight: torch.Tensor, sources: tuple[str, ...] = WRITTEN
                ) -> tuple[torch.Tensor, int]:
    """(the target's p summed over the answer positions of the `sources`' shards [V] float64, positions)."""
    weight = lm_head_weight.detach().float()  # [V, hidden]
    mass = torch.zeros(weight.shape[0], dtype=torch.float64, device=weight.device)
    count = 0
    for folder in folders:
        if json.loads((folder / "meta.json").read_text())["source"] not in sources:
            continue
        shard = head_data.read_shard(folder)
        if not len(shard.answer):
            continue
        rows = np.concatenate([np.arange(shard.starts[i] + max(int(shard.answer[i]), 1) - 1, shard.starts[i + 1] - 1)
                               for i in range(len(shard.answer))])  # the features that predict answer tokens
        for start in range(0, len(rows), ROWS):
            at = rows[start: start + ROWS]
            f = torch.from_numpy(np.asarray(shard.taps[at, -1], dtype=np.float32)).to(weight.device)  # [n, hidden]
            mass += torch.softmax(f @ weight.T, -1).sum(0).double()  # [V]
            count += len(at)
    return mass.cpu(), count


def ranked_from(folders: list[Path], lm_head_weight: torch.Tensor) -> tuple[torch.Tensor, dict]:
    """(all ids [V], the most mass in the target's own answers first; what ranked them, for the card)."""
    kinds = {json.loads((f / "meta.json").read_text())["source"] for f in folders}
    sources = tuple(s for s in WRITTEN if s in kinds) or tuple(sorted(kinds))  # the shards there are
    mass, positions = answer_mass(folders, lm_head_weight, sources)
    return rank_by_mass(mass), {"sources": list(sources), "answer_positions": positions}
