"""The inputs of one tree forward: which cache columns each new row sees, as an additive mask, and positions.

A tree row sees the committed prefix, the pending tokens and the nodes of its own path; siblings share a
position (their depth). Pure tensor code, shared by every forward that scores a tree (hf_treelm.py, the lean
and graphed forwards).
"""

from __future__ import annotations

import torch

from decoding.verify.tree import DraftTree


def tree_rows_allowed(tree: DraftTree, nodes: list[int], slots: dict[int, int], base: int,
                      n_cols: int) -> torch.Tensor:
    """[len(nodes), n_cols] bool: a node row sees columns [0, base) and the slots of its path (itself included)."""
    allowed = torch.zeros(len(nodes), n_cols, dtype=torch.bool)
    allowed[:, :base] = True
    for row, node in enumerate(nodes):
        allowed[row, [slots[a] for a in tree.path(node)]] = True
    return allowed


def additive_mask(allowed: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """bool [n_new, n_cols] -> float [1, 1, n_new, n_cols]: 0 attend, finfo.min blocked (eager and sdpa)."""
    mask = torch.zeros(allowed.shape, dtype=dtype)
    mask.masked_fill_(~allowed, torch.finfo(dtype).min)
    return mask[None, None]


def step_inputs(tree: DraftTree, nodes: list[int], pending: list[int], slots: dict[int, int], n_cached: int,
                base: int, filled: int, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Inputs of one tree call: ids [1, n_new], additive mask [1, 1, n_new, filled + n_new], positions [1, n_new].

    The new tokens are `pending` (fed causally after the n_cached committed tokens) then `nodes`.
    base = n_cached + every pending token: a tree row sees all of them, plus the slots of its path;
    a node's position is base + its depth (siblings share one).
    """
    n_new = len(pending) + len(nodes)
    pending_rows = torch.ones(len(pending), filled + n_new, dtype=torch.bool).tril(filled)
    node_rows = tree_rows_allowed(tree, nodes, slots, base, filled + n_new)
    allowed = torch.cat([pending_rows, node_rows])  # [n_new, filled + n_new]
    depths = torch.tensor([tree.depths[n] for n in nodes], dtype=torch.long)
    positions = torch.cat([torch.arange(n_cached, n_cached + len(pending)), base + depths])  # [n_new]
    ids = torch.tensor([pending + [tree.tokens[n] for n in nodes]])  # [1, n_new]
    return ids, additive_mask(allowed, dtype), positions[None]
