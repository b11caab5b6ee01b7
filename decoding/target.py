"""Score a whole draft tree with the target in ONE forward, and the slow per-path oracle the tests trust."""

from __future__ import annotations

import torch

from decoding.tree import DraftTree
from decoding.treelm import TreeLM


def score_tree(target: TreeLM, tree: DraftTree) -> torch.Tensor:
    """[N, V] float32 target logits of every node of `tree` (node order), ONE forward.

    Row i is p(. | prefix, path(i)) before warping: it verifies i's draws, or gives the bonus at a leaf.
    """
    return target.logits(tree, list(range(len(tree))))


def score_by_paths(model, prefix_ids: list[int], tree: DraftTree) -> torch.Tensor:
    """[N, V] float32 logits of every node, one plain forward per root-to-leaf path, no cache.

    prefix_ids: the tokens BEFORE the root (the root is tree.tokens[0]). The oracle for score_tree.
    """
    rows: dict[int, torch.Tensor] = {}
    for path in tree.retrieve_paths():
        ids = torch.tensor([list(prefix_ids) + [tree.tokens[n] for n in path]], device=model.device)  # [1, L]
        with torch.inference_mode():
            logits = model(input_ids=ids, use_cache=False).logits[0].float().cpu()  # [L, V]
        for j, node in enumerate(path):
            rows.setdefault(node, logits[len(prefix_ids) + j])
    return torch.stack([rows[n] for n in range(len(tree))])  # [N, V]
