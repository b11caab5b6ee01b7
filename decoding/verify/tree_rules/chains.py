"""The maths the sequence-level tree rules share (block, traversal, hsd): a tree's one chain, the path weight
w = min(1, w(parent) p(x)/q(x)), the weighted residual (w p - q)_+ and its law, and the updated weight
S / (S + 1 - w) (docs/verifiers.md §14)."""

from __future__ import annotations

import torch

from decoding.verify.sampling import EPS_MASS
from decoding.verify.tree import DraftTree


def chain_nodes(tree: DraftTree) -> list[int] | None:
    """[0, n_1, ..., n_g] when the tree is one chain (at most one draw per node), else None."""
    nodes = [0]
    while tree.draws[nodes[-1]]:
        if len(tree.draws[nodes[-1]]) != 1:
            return None
        nodes.append(tree.draws[nodes[-1]][0])
    return nodes


def weight_step(w_parent: float, p_x: float, q_x: float) -> float:
    """min(1, w(parent) p(x)/q(x)); 0 for a token q could not have drawn (a warp mismatch)."""
    return min(1.0, w_parent * p_x / q_x) if q_x > 0 else 0.0


def weighted_residual(w: float, p_row: torch.Tensor, q_row: torch.Tensor) -> tuple[torch.Tensor, float]:
    """((w p - q)_+ [V], its mass S): the un-normalised residual both sequence-level verifiers use."""
    r = (w * p_row.to(torch.float64) - q_row.to(torch.float64)).clamp_(min=0.0)  # [V]
    return r, float(r.sum())


def updated_weight(w: float, mass: float) -> float:
    """S / (S + 1 - w): block's h_i, traversal's new w(parent). 1 when w = 1 (then S + 1 - w = S)."""
    if w >= 1.0:
        return 1.0
    return mass / (mass + 1.0 - w)


def residual_law(r: torch.Tensor, mass: float, fallback: torch.Tensor) -> torch.Tensor:
    """r / S [V], or the fallback row when r holds no mass (reached only with probability 0)."""
    return r / mass if mass > EPS_MASS else fallback.to(torch.float64).clone()
