"""Score a whole draft tree with the target in ONE forward (the per-path oracle lives in tests/)."""

from __future__ import annotations

import torch

from decoding.models.treelm import TreeLM
from decoding.verify.tree import DraftTree


def score_tree(target: TreeLM, tree: DraftTree) -> torch.Tensor:
    """[N, V] float32 target logits of every node of `tree` (node order), ONE forward.

    Row i is p(. | prefix, path(i)) before warping: it verifies i's draws, or gives the bonus at a leaf.
    """
    return target.logits(tree, list(range(len(tree))))
