"""A cheaper exact self-draft: the int8 self-draft with a truncated head (and, optionally, a smoothed int8 down_proj).

Why: on a 2-core CPU the int8 self-draft (embedded.int8_self_draft) costs ~0.58 of a target forward,
too much for speculation to beat plain decoding. Two parts of it are still expensive:
- the lm_head (49152 x 576) is ~15 % of the draft. `TruncatedHead` scores only the first
  `head_size` token ids (BPE ids are in merge order: the lowest are the most frequent tokens) and
  gives -inf logits elsewhere, so q is exactly 0 there and the verifier sees the exact q rows
  (a target token outside the subset is still emitted through the residual: lossless). Measured on
  SmolLM2-135M (4 chat prompts x 64 greedy tokens): ids < 16384 hold 98 % of the greedy tokens and
  96 % of p's mass; agreement with the target .770 -> .770, alpha(T=1) .787 -> .769 (8192 ids: .750, .746).
- down_proj stays float32 because its input carries activation outliers that per-tensor int8
  activations destroy. SmoothQuant (Xiao et al. 2023) moves them into the weights: for a channel
  scale s, down(x) = (W * s) (x / s), and x = act(gate) * up, so 1/s folds EXACTLY into up_proj's
  rows. The smoothed float model is the same function (float rounding only); then int8 suffers less.
  s is calibrated once from the target's own activations on fixed calibration text (not the bench
  prompts), so the draft is deterministic for a given model. Measured: it did NOT pay on SmolLM2-135M:
  agreement .770 (down_proj float32) -> .477 (plain int8), .660 (alpha .5), .723 (alpha .7), a larger loss
  in tokens per step than the ~15 % of draft time it saves; the embedded-fast pair keeps down_proj float32.
"""

from __future__ import annotations

import copy

import torch

from decoding.models.embedded import int8_linears
from decoding.models.row_quant import per_row_activations

SMOOTH_ALPHA = 0.5  # SmoothQuant's migration strength: s = a^alpha / w^(1 - alpha)
MIN_SCALE = 1e-5


class TruncatedHead(torch.nn.Module):
    """LM head over token ids [0, head_size): logits [..., vocab] with -inf beyond the subset."""

    def __init__(self, head: torch.nn.Linear, head_size: int) -> None:
        super().__init__()
        vocab, hidden = head.weight.shape
        if not 0 < head_size <= vocab:
            raise ValueError(f"head_size must be in 1..{vocab}, got {head_size}")
        self.vocab = vocab
        self.proj = torch.nn.Linear(hidden, head_size, bias=head.bias is not None)
        self.proj.weight = torch.nn.Parameter(head.weight.detach()[:head_size].clone(), requires_grad=False)
        if head.bias is not None:
            self.proj.bias = torch.nn.Parameter(head.bias.detach()[:head_size].clone(), requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        kept = self.proj(x)  # [..., head_size]
        pad = kept.new_full((*kept.shape[:-1], self.vocab - kept.shape[-1]), float("-inf"))
        return torch.cat([kept, pad], dim=-1)  # [..., vocab]


def down_proj_input_max(model, calibration: list[list[int]]) -> dict[int, torch.Tensor]:
    """Layer index -> [intermediate] max |input| of that layer's down_proj over the calibration ids."""
    amax: dict[int, torch.Tensor] = {}
    hooks = []
    for i, layer in enumerate(model.model.layers):
        def record(_module, inputs, _out, i=i):
            a = inputs[0].detach().abs().reshape(-1, inputs[0].shape[-1]).amax(0)  # [intermediate]
            amax[i] = torch.maximum(amax[i], a) if i in amax else a
        hooks.append(layer.mlp.down_proj.register_forward_hook(record))
    try:
        with torch.inference_mode():
            for ids in calibration:
                model(torch.tensor([ids], device=model.device))
    finally:
        for hook in hooks:
            hook.remove()
    return {i: a.float().cpu() for i, a in amax.items()}


def smooth_down_proj(model, amax: dict[int, torch.Tensor], alpha: float = SMOOTH_ALPHA) -> None:
    """Fold SmoothQuant scales into up_proj (rows / s) and down_proj (columns * s), in place.

    The float function is unchanged (down(act(g) * up / s) with W * s): only the ranges move.
    """
    with torch.no_grad():
        for i, layer in enumerate(model.model.layers):
            up, down = layer.mlp.up_proj, layer.mlp.down_proj
            w = down.weight.abs().amax(0).float().clamp(min=MIN_SCALE)  # [intermediate]
            s = (amax[i].clamp(min=MIN_SCALE) ** alpha / w ** (1 - alpha)).clamp(min=MIN_SCALE)
            up.weight.div_(s[:, None].to(up.weight.dtype))
            if up.bias is not None:
                up.bias.div_(s.to(up.bias.dtype))
            down.weight.mul_(s[None, :].to(down.weight.dtype))


def fast_self_draft(target, head_size: int, calibration: list[list[int]] | None = None) -> torch.nn.Module:
    """A CPU int8 copy of `target` with an lm_head over the first `head_size` token ids (-inf elsewhere).

    Without `calibration`, down_proj stays float32 (as in embedded.int8_self_draft); with it, down_proj is
    SmoothQuant-folded (scales from those ids) and int8 too."""
    draft = copy.deepcopy(target).to("cpu", torch.float32).eval()
    if calibration is not None:
        smooth_down_proj(draft, down_proj_input_max(draft, calibration))
    draft.lm_head = TruncatedHead(draft.lm_head, head_size)
    draft.config.tie_word_embeddings = False  # the head is its own module now: never re-tie it
    draft = int8_linears(draft, keep_float=() if calibration is not None else ("down_proj",))
    return per_row_activations(draft)  # one activation scale per row (row_quant.py)
