"""The fused draft head (EAGLE-3-style): fused target features, one attention layer over the past, its own state.

Why: the MLP head (weights.py) sees one feature, the target's last, and accepted 0.38-0.45 a level
(docs/speed.md, "What limits speculation"). EAGLE-3 (Li et al. 2025) draws more from the target at no extra
target work: the hidden states of a low and a middle layer beside the final feature, fused by one linear
layer into g_j, and a decoder layer that attends over every earlier position's (g, token) pair; a level drafted
from a drafted node feeds the head's own output state back in place of g (the target has not seen that token),
and training unrolls those levels the way drafting runs them ("training-time test").

Pair j (one row of the layer) reads g_j and the embedding of token x_{j+1}, at rotary position j: they enter the
residual stream as g_j + mix(e(x_{j+1}), g_j) (EAGLE's input layer: the token is on the stream itself, not only
in what attention carries), then a pre-norm decoder layer (attention, gated MLP) gives the output state h_j.
q's logits over the head's ids are the target's lm_head rows of its head_size ids (ranked_ids.py) on
out_norm(h_j) (q = 0 beyond): the law of x_{j+2}. A drafted node at depth d below pair j's root reads (h of its
parent, its own token) at position j + d and attends to pairs 0..j and its own ancestors. Every q is a function
of the context and the tree path, fixed before a candidate is drawn: every verifier stays exact.

`FusedHead.unrolled` is the reference computation (training and the tests' oracle): all pairs of a sequence at
once, level by level. lean_fused.py computes the same rows incrementally for drafting.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

KIND = "fused"  # head.json's "kind" for this head (absent: the MLP head of weights.py)


@dataclass(frozen=True)
class FusedConfig:
    hidden: int = 576  # the target's hidden size
    taps: tuple[int, ...] = (3, 16)  # the target's hidden states after these layers, fused with its final feature
    heads: int = 4
    head_dim: int = 64
    inner: int = 1536  # the MLP's width
    head_size: int = 8192  # how many token ids the draft scores (the first of ranked_ids.ranked_ids)
    eps: float = 1e-5
    rope_base: float = 10000.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "taps", tuple(int(t) for t in self.taps))  # JSON gives a list


class FusedHead(nn.Module):
    """The head's weights and its reference forward (module docstring)."""

    def __init__(self, config: FusedConfig) -> None:
        super().__init__()
        self.config = config
        d, width = config.hidden, config.heads * config.head_dim
        self.tap_norms = nn.ModuleList(nn.RMSNorm(d, eps=config.eps) for _ in range(len(config.taps) + 1))
        self.fuse = nn.Linear((len(config.taps) + 1) * d, d, bias=False)
        self.embed_norm = nn.RMSNorm(d, eps=config.eps)
        self.state_norm = nn.RMSNorm(d, eps=config.eps)
        self.mix = nn.Linear(2 * d, d, bias=False)
        self.input_norm = nn.RMSNorm(d, eps=config.eps)
        self.qkv = nn.Linear(d, 3 * width, bias=False)
        self.o = nn.Linear(width, d, bias=False)
        self.post_norm = nn.RMSNorm(d, eps=config.eps)
        self.gate = nn.Linear(d, config.inner, bias=False)
        self.up = nn.Linear(d, config.inner, bias=False)
        self.down = nn.Linear(config.inner, d, bias=False)
        self.out_norm = nn.RMSNorm(d, eps=config.eps)
        with torch.no_grad():  # a fresh head starts from the target's final feature (g = its norm), as the MLP head
            self.fuse.weight.zero_()
            self.fuse.weight[:, -d:] = torch.eye(d)

    def fused(self, taps: torch.Tensor) -> torch.Tensor:
        """taps [.., len(taps) + 1, hidden] (the last: the final-normed feature) -> g [.., hidden]."""
        parts = [norm(taps[..., k, :]) for k, norm in enumerate(self.tap_norms)]
        return self.fuse(torch.cat(parts, dim=-1))

    def enter(self, g: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
        """(state g, token embedding e) [.., n, hidden] -> the layer's input stream x [.., n, hidden]."""
        return g + self.mix(torch.cat([self.embed_norm(e), self.state_norm(g)], -1))

    def qkv_of(self, x: torch.Tensor, positions: torch.Tensor):
        """The stream x [.., n, hidden] at rotary `positions` [n] -> q, k, v [.., heads, n, dim]."""
        c = self.config
        q, k, v = self.qkv(self.input_norm(x)).chunk(3, dim=-1)
        split = lambda t: t.unflatten(-1, (c.heads, c.head_dim)).transpose(-3, -2)  # noqa: E731
        cos, sin = rotary(positions, c.head_dim, c.rope_base, x.device)
        return rotate(split(q), cos, sin), rotate(split(k), cos, sin), split(v)

    def after_attention(self, x: torch.Tensor, attended: torch.Tensor) -> torch.Tensor:
        """The stream x [.., n, hidden], attended [.., heads, n, dim] -> the output state h [.., n, hidden]."""
        x = x + self.o(attended.transpose(-3, -2).flatten(-2))
        y = self.post_norm(x)
        return x + self.down(F.silu(self.gate(y)) * self.up(y))

    def logits(self, h: torch.Tensor, lm_rows: torch.Tensor) -> torch.Tensor:
        """h [.., hidden] -> q's logits over the head's ids [.., head_size] (lm_rows: [head_size, hidden])."""
        return self.out_norm(h) @ lm_rows.T

    def unrolled(self, taps: torch.Tensor, ids: torch.Tensor, embed: torch.Tensor, levels: int) -> list[torch.Tensor]:
        """The states h of every pair of a batch of sequences, `levels` levels deep (training-time test).

        taps [B, L, len(taps) + 1, hidden] (position j: the target's features at j), ids [B, L] (x_j), embed
        [V, hidden]. Level 1's pair j reads (g_j, e(x_{j+1})) at position j and attends to pairs 0..j; level d
        reads (its level d-1 state, e(x_{j+d})) at position j + d - 1 and attends to pairs 0..j of level 1 and to
        its own levels 2..d. Returns [h_1, ..., h_levels], each [B, L, hidden]; rows whose tokens run past the
        sequence read a zero-padded token (the caller masks them)."""
        length = ids.shape[1]
        g = self.fused(taps)  # [B, L, hidden]
        first_keys = first_values = None
        later: list[tuple[torch.Tensor, torch.Tensor]] = []
        states = []
        for level in range(1, levels + 1):
            shifted = F.pad(ids[:, level:], (0, level))  # [B, L]: x_{j+level}, 0 past the end
            positions = torch.arange(level - 1, length + level - 1, device=ids.device)
            x = self.enter(g, embed[shifted])  # [B, L, hidden]
            q, k, v = self.qkv_of(x, positions)  # [B, heads, L, dim]
            if level == 1:
                first_keys, first_values = k, v
            else:
                later.append((k, v))
            g = self.after_attention(x, unrolled_attention(q, first_keys, first_values, later))
            states.append(g)
        return states


def unrolled_attention(q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor,
                       later: list[tuple[torch.Tensor, torch.Tensor]]) -> torch.Tensor:
    """q [B, heads, L, dim] of pair j attends causally to level 1's keys/values [B, heads, L, dim] (pairs 0..j)
    and to each later level's key/value at its own pair j (the drafted ancestors and itself): [B, heads, L, dim]."""
    scale = 1.0 / math.sqrt(q.shape[-1])
    length = q.shape[-2]
    causal = torch.ones(length, length, dtype=torch.bool, device=q.device).tril()
    scores = (q @ keys.transpose(-1, -2)) * scale  # [B, heads, L, L]
    scores = scores.masked_fill(~causal, float("-inf"))
    diagonal = [((q * k).sum(-1) * scale)[..., None] for k, _ in later]  # [B, heads, L, 1] each
    weights = torch.softmax(torch.cat([scores, *diagonal], dim=-1), dim=-1)
    out = weights[..., :length] @ values
    for i, (_, v) in enumerate(later):
        out = out + weights[..., length + i, None] * v
    return out


def rotary(positions: torch.Tensor, dim: int, base: float, device) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin [n, dim] of the rotary embedding at `positions` [n] (llama's layout: halves repeated)."""
    inv = base ** (-torch.arange(0, dim, 2, device=device, dtype=torch.float32) / dim)  # [dim / 2]
    angles = positions.to(device=device, dtype=torch.float32)[:, None] * inv[None]  # [n, dim / 2]
    angles = torch.cat([angles, angles], dim=-1)
    return angles.cos(), angles.sin()


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x [.., n, dim] rotated at each row's position: x cos + rotate_half(x) sin."""
    half = x.shape[-1] // 2
    return x * cos + torch.cat((-x[..., half:], x[..., :half]), dim=-1) * sin
