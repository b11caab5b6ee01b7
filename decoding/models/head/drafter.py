"""The draft session of a draft-head pair: q from the trained head (draft_head.py), as a TreeLM.

Node features: the root's is head(target.root_feature, e(root)); a deeper node's is head(parent's
predicted feature, e(node)). q's logits are the target's lm_head rows of the head's ids (ranked_ids.py)
applied to a node's feature, -inf beyond. Without a target feature (a one-token context: nothing was
prefilled) the root has no guess (treelm.proposes): the step is a plain target step.
"""

from __future__ import annotations

import torch

from decoding.models.head.feature_target import FeatureTreeLM
from decoding.models.head.lean import LeanHead
from decoding.models.treelm import TreeBook
from decoding.verify.tree import DraftTree


class HeadTreeLM(TreeBook):
    """The draft head behind the TreeLM protocol; reads the paired target session's root feature."""

    def __init__(self, head: LeanHead, embed: torch.Tensor, vocab_size: int, target: FeatureTreeLM) -> None:
        super().__init__()
        self.head, self.embed = head, embed  # the head and q's lm_head rows [H, hidden]; embed [V, hidden]
        self.vocab_size = vocab_size
        self.target = target
        self.features: dict[int, torch.Tensor] = {}  # tree node -> its predicted feature [hidden], this step

    def _reset(self, context: list[int]) -> None:
        """start and commit (TreeBook's) begin a new step: the predicted features belong to the old tree."""
        super()._reset(context)
        self.features = {}

    def logits(self, tree: DraftTree, nodes: list[int]) -> torch.Tensor:
        self._admit(tree, nodes)
        out = torch.full((len(nodes), self.vocab_size), float("-inf"))  # [n, V]: no guess unless filled
        if not nodes or self.target.root_feature is None:
            return out
        self.forwards += 1
        with torch.inference_mode():
            for wave in _waves(tree, nodes, self.features):
                parents = [self.target.root_feature if n == 0 else self.features[tree.parents[n]] for n in wave]
                tokens = torch.tensor([tree.tokens[n] for n in wave], device=self.embed.device)
                predicted = self.head(torch.stack(parents), self.embed[tokens])  # [w, hidden]
                self.features.update(zip(wave, predicted, strict=True))
            feats = torch.stack([self.features[n] for n in nodes])  # [n, hidden]
            out[:, self.head.ids] = self.head.logits(feats).float().cpu()  # [n, H] into [n, V]: q on the CPU
        return out


def _waves(tree: DraftTree, nodes: list[int], known: dict[int, torch.Tensor]) -> list[list[int]]:
    """`nodes` in groups whose parents' features are known before the group (usually one group: a level)."""
    waves, done, left = [], set(known), list(nodes)
    while left:
        wave = [n for n in left if n == 0 or tree.parents[n] in done]
        if not wave:
            raise ValueError(f"nodes {left} come before their parents' features (need topological order)")
        waves.append(wave)
        done.update(wave)
        left = [n for n in left if n not in done]
    return waves
