"""The target session of a draft-head pair: an HFTreeLM that also keeps the features the draft head starts from.

A draft head (draft_head.py) drafts from the target's final-normed feature at the position BEFORE the
current root: the feature whose logits gave the root token. The target computes it anyway (the prefill's
last row, then the row of the last accepted node of each step's tree forward); this session keeps it as
`root_feature`, so the draft costs no extra target work.

A fused head (fused.py) attends to every earlier position, so with `taps` the session also keeps `history`:
each context position's hidden states after the tapped layers and its final feature, [positions, len(taps) + 1,
hidden], from the prefill's every row and then each step's accepted nodes (the same forwards; the taps are
copies of rows the forward computes anyway).
"""

from __future__ import annotations

import torch

from decoding.models.hf_treelm import HFTreeLM
from decoding.verify.tree import DraftTree


class FeatureTreeLM(HFTreeLM):
    """An HFTreeLM whose forwards also return their rows' features; `root_feature` [hidden] or None; with `taps`,
    `history` [context length - 1, len(taps) + 1, hidden] (position j: the features that gave token j + 1), or
    None where a committed node was never scored (the draft then has no guess)."""

    def __init__(self, model, vocab_size: int | None = None, taps: tuple[int, ...] | None = None) -> None:
        super().__init__(model, vocab_size)
        self.taps = taps
        self.root_feature: torch.Tensor | None = None  # [hidden] float32 on the model's device: gave the root
        self.history: torch.Tensor | None = None  # [positions, len(taps) + 1, hidden] (with taps)
        self._features: dict[int, torch.Tensor] = {}  # tree node -> its feature [hidden], this step
        self._node_rows: dict[int, torch.Tensor] = {}  # tree node -> its taps and feature [len(taps) + 1, hidden]
        self._last: torch.Tensor | None = None  # [keep, hidden] of the last forward
        self._rows: torch.Tensor | None = None  # [rows, len(taps) + 1, hidden] of the last forward (with taps)

    def start(self, context: list[int]) -> None:
        self.root_feature, self._features, self._node_rows, self._rows = None, {}, {}, None
        super().start(context)
        if self._last is not None and len(context) > 1:
            self.root_feature = self._last[-1]
        if self.taps is not None:
            self.history = self._rows if len(context) > 1 else self._empty_history()

    def logits(self, tree: DraftTree, nodes: list[int]) -> torch.Tensor:
        out = super().logits(tree, nodes)  # [len(nodes), V]
        if nodes:
            self._features.update(zip(nodes, self._last[-len(nodes):], strict=True))
            if self.taps is not None:
                self._node_rows.update(zip(nodes, self._rows[-len(nodes):], strict=True))
        return out

    def commit(self, path: list[int], next_token: int, tree: DraftTree | None = None) -> None:
        last = self._features.get(path[-1]) if path else None
        if self.taps is not None:
            rows = [self._node_rows.get(n) for n in path]
            whole = self.history is not None and all(r is not None for r in rows)
            self.history = torch.cat([self.history, torch.stack(rows)]) if whole else None
        super().commit(path, next_token, tree)
        self.root_feature, self._features, self._node_rows = last, {}, {}  # None when the last node was never scored

    def _forward(self, ids: torch.Tensor, mask: torch.Tensor | None = None, positions: torch.Tensor | None = None,
                 keep: int = 1) -> torch.Tensor:
        if self.taps is None:
            logits, features = forward_with_features(self.model, self.cache, ids, mask, positions, keep)
        else:  # every row's features: a prefill's whole prompt, a tree call's nodes
            logits, features, self._rows = forward_with_taps(self.model, self.cache, ids, mask, positions, keep,
                                                             self.taps)
            features = features[:, -keep:]
        self._last = features[0].float()  # [keep, hidden] on the model's device: the head drafts there
        return logits

    def _empty_history(self) -> torch.Tensor:
        hidden = int(self.model.config.hidden_size)
        return torch.zeros(0, len(self.taps) + 1, hidden, device=self.device)


def forward_with_features(model, cache, ids, mask, positions, keep: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(logits [1, keep, V], final-normed features [1, keep, hidden]) of ONE forward: the lean model returns
    both; a transformers causal LM runs its base model and its lm_head apart."""
    kwargs = dict(attention_mask=mask, position_ids=positions, past_key_values=cache, use_cache=True)
    if hasattr(model, "lean_layers"):
        out = model(input_ids=ids, logits_to_keep=keep, **kwargs)
        return out.logits, out.features
    hidden = model.model(input_ids=ids, **kwargs).last_hidden_state[:, -keep:]  # [1, keep, hidden]
    return model.lm_head(hidden), hidden


def forward_with_taps(model, cache, ids, mask, positions, keep: int, taps: tuple[int, ...]
                      ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(logits [1, keep, V], features [1, n, hidden], every row's taps and feature [n, len(taps) + 1, hidden]
    float32) of ONE forward over ids [1, n]."""
    kwargs = dict(attention_mask=mask, position_ids=positions, past_key_values=cache, use_cache=True)
    n = ids.shape[1]
    if hasattr(model, "lean_layers"):
        out = model(input_ids=ids, logits_to_keep=keep, taps=taps, feature_rows=n, **kwargs)
        logits, features, tapped = out.logits, out.features, out.taps  # taps [1, n, len(taps), hidden]
    else:
        base = model.model(input_ids=ids, output_hidden_states=True, **kwargs)
        features = base.last_hidden_state  # [1, n, hidden]
        tapped = torch.stack([base.hidden_states[t] for t in taps], dim=2)
        logits = model.lm_head(features[:, -keep:])
    rows = torch.cat([tapped, features[:, :, None]], dim=2)[0].float()  # [n, len(taps) + 1, hidden]
    return logits, features, rows
