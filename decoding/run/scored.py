"""One step's scored tree: the drafted tree with the target's and the draft's law at every node.

The engine builds it once per step (after the one target forward) and hands it whole to the
verifier and the recorder, so the four values that belong together cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from decoding.verify.tree import DraftTree


@dataclass(frozen=True)
class ScoredTree:
    """tree: the drafted DraftTree (N nodes, root included).
    p: [N, V] float64, the warped target law at each node (p = target).
    q: [N, V] float64, the draft law each node's children were drawn from (q = draft); zero rows
       where the drafter never ran (the leaves).
    has_q: [N] bool, which rows of q are real draft laws.
    """

    tree: DraftTree
    p: torch.Tensor  # [N, V]
    q: torch.Tensor  # [N, V]
    has_q: torch.Tensor  # [N]
