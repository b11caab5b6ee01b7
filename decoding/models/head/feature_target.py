"""The target session of a draft-head pair: an HFTreeLM that also keeps the feature the draft head starts from.

A draft head (draft_head.py) drafts from the target's final-normed feature at the position BEFORE the
current root: the feature whose logits gave the root token. The target computes it anyway (the prefill's
last row, then the row of the last accepted node of each step's tree forward); this session keeps it as
`root_feature`, so the draft costs no extra target work.
"""

from __future__ import annotations

import torch

from decoding.models.hf_treelm import HFTreeLM
from decoding.verify.tree import DraftTree


class FeatureTreeLM(HFTreeLM):
    """An HFTreeLM whose forwards also return their rows' features; `root_feature` [hidden] or None."""

    def __init__(self, model, vocab_size: int | None = None) -> None:
        super().__init__(model, vocab_size)
        self.root_feature: torch.Tensor | None = None  # [hidden] float32 on the model's device: gave the root
        self._features: dict[int, torch.Tensor] = {}  # tree node -> its feature [hidden], this step
        self._last: torch.Tensor | None = None  # [keep, hidden] of the last forward

    def start(self, context: list[int]) -> None:
        self.root_feature, self._features = None, {}
        super().start(context)
        if self._last is not None and len(context) > 1:
            self.root_feature = self._last[-1]

    def logits(self, tree: DraftTree, nodes: list[int]) -> torch.Tensor:
        out = super().logits(tree, nodes)  # [len(nodes), V]
        if nodes:
            self._features.update(zip(nodes, self._last[-len(nodes):], strict=True))
        return out

    def commit(self, path: list[int], next_token: int, tree: DraftTree | None = None) -> None:
        last = self._features.get(path[-1]) if path else None
        super().commit(path, next_token, tree)
        self.root_feature, self._features = last, {}  # None when the last node was never scored

    def _forward(self, ids: torch.Tensor, mask: torch.Tensor | None = None, positions: torch.Tensor | None = None,
                 keep: int = 1) -> torch.Tensor:
        logits, features = forward_with_features(self.model, self.cache, ids, mask, positions, keep)
        self._last = features[0].float()  # [keep, hidden] on the model's device: the head drafts there
        return logits


def forward_with_features(model, cache, ids, mask, positions, keep: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(logits [1, keep, V], final-normed features [1, keep, hidden]) of ONE forward: the lean model returns
    both; a transformers causal LM runs its base model and its lm_head apart."""
    kwargs = dict(attention_mask=mask, position_ids=positions, past_key_values=cache, use_cache=True)
    if hasattr(model, "lean_layers"):
        out = model(input_ids=ids, logits_to_keep=keep, **kwargs)
        return out.logits, out.features
    hidden = model.model(input_ids=ids, **kwargs).last_hidden_state[:, -keep:]  # [1, keep, hidden]
    return model.lm_head(hidden), hidden
