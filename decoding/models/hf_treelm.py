"""`HFTreeLM`: a transformers causal LM behind the TreeLM protocol (treelm.py), one forward per call.

Cache layout during a step: [committed prefix P][pending m][fed tree nodes, in the order they were fed].
Pending tokens are accepted tokens that were never fed (a draft leaf): they are fed, causally, in front of
the tree nodes of the next step's first call.
"""

from __future__ import annotations

import torch

from decoding.models.lean.packed_linear import packed_products, use_packed_projection
from decoding.models.tree_inputs import step_inputs
from decoding.models.treelm import TreeBook
from decoding.verify.tree import DraftTree


class HFTreeLM(TreeBook):
    """A transformers causal LM behind the TreeLM protocol, with its own DynamicCache (one per session).

    vocab_size: width of the returned logits; a narrower model is padded with -inf (a token the
    model cannot produce), a wider one is cut (e.g. a draft whose embedding has more padding rows).
    """

    def __init__(self, model, vocab_size: int | None = None) -> None:
        super().__init__()
        self.model = model
        use_packed_projection(model)  # few-row products packed once per row bucket; inert outside logits
        self.model_vocab = int(model.config.get_text_config().vocab_size)
        self.vocab_size = int(vocab_size or self.model_vocab)
        self.cache = None
        self.n_cached = 0  # committed prefix P in the cache
        self.pending: list[int] = []  # accepted tokens not in the cache, fed before the next root
        self.pending_fed = False  # the pending tokens were fed in this step's first call
        self.slots: dict[int, int] = {}  # tree node -> its cache slot (this step)

    @property
    def device(self) -> torch.device:
        return self.model.device

    def start(self, context: list[int]) -> None:
        from transformers import DynamicCache

        self._reset(context)
        new_cache = getattr(self.model, "new_cache", None)  # a lean model brings its own cache kind
        self.cache = new_cache() if callable(new_cache) else DynamicCache()
        self.n_cached, self.pending, self.pending_fed, self.slots = 0, [], False, {}
        if len(context) > 1:
            ids = torch.tensor([self.context[:-1]], device=self.device)  # [1, P]
            with torch.inference_mode():
                self._forward(ids, keep=1)
            self.n_cached = len(context) - 1
            self.prefills += 1

    def logits(self, tree: DraftTree, nodes: list[int]) -> torch.Tensor:
        self._admit(tree, nodes)
        if not nodes:
            return torch.empty(0, self.vocab_size)
        pending = [] if self.pending_fed else self.pending  # fed once, in the step's first call
        filled = self.cache.get_seq_length()  # prefix (+ pending) + nodes fed earlier in this step
        self.slots.update({n: filled + len(pending) + i for i, n in enumerate(nodes)})
        ids, mask, positions = step_inputs(tree, nodes, pending, self.slots, self.n_cached,
                                           self.n_cached + len(self.pending), filled, self.model.dtype)
        dev = self.device
        with torch.inference_mode(), packed_products():
            logits = self._forward(ids.to(dev), mask.to(dev), positions.to(dev), keep=len(nodes))
        self.pending_fed = True
        self.forwards += 1
        return self._fit_vocab(logits[0, -len(nodes):].float().cpu())  # [len(nodes), V]

    def _forward(self, ids: torch.Tensor, mask: torch.Tensor | None = None, positions: torch.Tensor | None = None,
                 keep: int = 1) -> torch.Tensor:
        """ONE model forward over ids [1, n] into the cache: logits [1, keep, V] of the last `keep` rows
        (a subclass that also needs the rows' features overrides this)."""
        out = self.model(input_ids=ids, attention_mask=mask, position_ids=positions, past_key_values=self.cache,
                         use_cache=True, logits_to_keep=keep)
        return out.logits

    def _fit_vocab(self, logits: torch.Tensor) -> torch.Tensor:
        width = logits.shape[-1]
        if width > self.vocab_size:
            return logits[:, : self.vocab_size]
        if width < self.vocab_size:
            pad = torch.full((logits.shape[0], self.vocab_size - width), float("-inf"))
            return torch.cat([logits, pad], dim=-1)
        return logits

    def commit(self, path: list[int], next_token: int, tree: DraftTree | None = None) -> None:
        tokens = self._path_tokens(path, tree)
        fed_path = [n for n in path if n in self.slots]  # a prefix of the path: parents are fed first
        keep = list(range(self.n_cached))
        if self.pending_fed:
            keep += range(self.n_cached, self.n_cached + len(self.pending))
            self.pending = []
        keep += [self.slots[n] for n in fed_path]
        self._keep_cache(keep)
        self.n_cached = len(keep)
        self.pending = self.pending + tokens[len(fed_path):]
        self.pending_fed, self.slots = False, {}
        self.context = self.context + tokens[1:] + [int(next_token)]
        self.tree, self.fed = None, {}

    def _keep_cache(self, keep: list[int]) -> None:
        """Keep only cache positions `keep` (in order) on every layer; a plain prefix is a slice."""
        if self.cache is None or self.cache.get_seq_length() == len(keep) == 0:
            return
        if hasattr(self.cache, "keep"):  # a cache in one buffer gathers every layer at once (slot_cache.py)
            self.cache.keep(keep)
            return
        contiguous = keep == list(range(len(keep)))
        index = torch.tensor(keep, dtype=torch.long)
        for layer in self.cache.layers:
            if not getattr(layer, "is_initialized", False) or layer.keys.numel() == 0:
                continue
            if contiguous:
                layer.keys = layer.keys[..., : len(keep), :]
                layer.values = layer.values[..., : len(keep), :]
            else:
                idx = index.to(layer.keys.device)
                layer.keys = layer.keys.index_select(-2, idx)
                layer.values = layer.values.index_select(-2, idx)
