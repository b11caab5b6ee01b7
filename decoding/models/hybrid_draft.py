"""Prompt lookup first, the draft head elsewhere: one drafter that takes the better guess per node.

Prompt lookup's guess is right 60-79 % of the time where the context's trailing 3- or 2-gram occurred
before, and costs nothing (lookup.py); the draft head (head_draft.py) guesses everywhere at ~0.5. This
drafter gives each node the lookup's row where lookup has a guess and the head's row otherwise. Which
row a node gets depends on that node's context only, fixed before its candidates are drawn, so q is
the law the candidates are drawn from and every verifier stays exact (as treelm.proposes' no-guess rule).
The head still runs on every node: a deeper node's head feature needs its parent's.
"""

from __future__ import annotations

import torch

from decoding.models.head_draft import HeadTreeLM
from decoding.models.lookup import lookup_session
from decoding.models.treelm import proposes
from decoding.verify.tree import DraftTree


class LookupFirstTreeLM:
    """A TreeLM: the lookup row where lookup has a guess, else the head row (both sessions kept in step)."""

    def __init__(self, head: HeadTreeLM) -> None:
        self.head = head
        self.lookup = lookup_session(head.vocab_size)
        self.vocab_size = head.vocab_size

    @property
    def forwards(self) -> int:
        return self.head.forwards

    @property
    def prefills(self) -> int:
        return self.head.prefills

    def start(self, context: list[int]) -> None:
        self.head.start(context)
        self.lookup.start(context)

    def logits(self, tree: DraftTree, nodes: list[int]) -> torch.Tensor:
        by_lookup = self.lookup.logits(tree, nodes)  # [n, V]
        rows = self.head.logits(tree, nodes)  # [n, V], a fresh tensor: the lookup's rows are copied in place
        for i in torch.nonzero(proposes(by_lookup)).flatten().tolist():
            rows[i] = by_lookup[i]
        return rows  # [n, V]

    def commit(self, path: list[int], next_token: int, tree: DraftTree | None = None) -> None:
        self.head.commit(path, next_token, tree)
        self.lookup.commit(path, next_token, tree)
