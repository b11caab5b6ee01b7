"""The slow per-path oracle for the one-pass tree forward: one plain forward per root-to-leaf path."""

from __future__ import annotations

import torch

from decoding.verify.tree import DraftTree


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
