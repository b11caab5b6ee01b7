"""The draft session of a fused-head pair: q from the fused head (fused.py), as a TreeLM.

The head keeps keys and values of every committed pair j = (the target's features at position j, token j + 1),
read from the paired target session's `history` (feature_target.py). A step's first call catches up on the
pairs committed since the last step (the prompt, then each step's accepted tokens) in one forward; its last
row is the root's: pair n - 2 (the features that gave the root, the root's token), whose q is the law of the
next token. A drafted node's row reads (its parent's output state, its own token) at position n - 2 + depth and
attends to every committed pair and to its own drafted ancestors; those rows are dropped at the commit (the
next step redoes the accepted ones from the target's real features). Without target features (a one-token
context, or a history with a gap) the root has no guess (treelm.proposes): the step is a plain target step.
"""

from __future__ import annotations

import torch

from decoding.models.head.drafter import _waves
from decoding.models.head.feature_target import FeatureTreeLM
from decoding.models.head.lean_fused import LeanFusedHead
from decoding.models.treelm import TreeBook
from decoding.verify.tree import DraftTree


class FusedHeadTreeLM(TreeBook):
    """The fused draft head behind the TreeLM protocol; reads the paired target session's history."""

    def __init__(self, head: LeanFusedHead, embed: torch.Tensor, vocab_size: int, target: FeatureTreeLM) -> None:
        super().__init__()
        self.head, self.embed = head, embed  # embed [V, hidden]
        self.vocab_size = vocab_size
        self.target = target
        c = head.config
        self._empty = torch.zeros(c.heads, 0, c.head_dim, device=embed.device)
        self.keys = self.values = self._empty  # [heads, pairs, dim]: committed pairs 0 .. pairs - 1
        self.covered: list[int] = []  # the context tokens the kept pairs were computed on (0 .. pairs)
        self.states: dict[int, torch.Tensor] = {}  # tree node -> its output state [hidden], this step
        self.drafted: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}  # drafted node -> key, value [heads, dim]

    def start(self, context: list[int]) -> None:
        self.keys = self.values = self._empty
        self.covered = []
        super().start(context)

    def _reset(self, context: list[int]) -> None:
        """start and commit (TreeBook's) begin a new step: drafted rows belong to the old tree; kept pairs stay
        while the new context extends the tokens they were computed on."""
        super()._reset(context)
        self.states, self.drafted = {}, {}
        if self.context[: len(self.covered)] != self.covered:
            self.keys = self.values = self._empty
            self.covered = []

    def logits(self, tree: DraftTree, nodes: list[int]) -> torch.Tensor:
        self._admit(tree, nodes)
        out = torch.full((len(nodes), self.vocab_size), float("-inf"))  # [n, V]: no guess unless filled
        history = self.target.history
        if not nodes or history is None or len(self.context) < 2 or len(history) < len(self.context) - 1:
            return out
        self.forwards += 1
        with torch.inference_mode():
            if 0 not in self.states:
                self.states[0] = self._catch_up(history)
            for wave in _waves(tree, [n for n in nodes if n != 0], self.states):
                self._draft_rows(tree, wave)
            states = torch.stack([self.states[n] for n in nodes])  # [n, hidden]
            out[:, : self.head.head_size] = self.head.logits(states).float().cpu()  # [n, H]: q on the CPU
        return out

    def _catch_up(self, history: torch.Tensor) -> torch.Tensor:
        """Rows for the committed pairs not kept yet (through the root's pair n - 2); their keys and values are
        kept. Returns the root's output state [hidden]."""
        done, last = self.keys.shape[1], len(self.context) - 2
        pairs = torch.arange(done, last + 1, device=self.embed.device)  # [k]
        tokens = torch.tensor(self.context[done + 1: last + 2], device=self.embed.device)  # token j + 1 of pair j
        g = self.head.fused(history[done: last + 1])  # [k, hidden]
        sees = torch.ones(len(pairs), done + len(pairs), dtype=torch.bool, device=g.device)
        sees[:, done:] = torch.ones(len(pairs), len(pairs), dtype=torch.bool, device=g.device).tril()
        h, k, v = self.head.rows(g, self.embed[tokens], pairs, self.keys, self.values, sees)
        self.keys, self.values = torch.cat([self.keys, k], 1), torch.cat([self.values, v], 1)
        self.covered = self.context[: last + 2]
        return h[-1]

    def _draft_rows(self, tree: DraftTree, wave: list[int]) -> None:
        """One row per drafted node of `wave` (their parents' states known): each attends to the committed pairs,
        its drafted ancestors and itself."""
        root_pair = len(self.context) - 2
        earlier = list(self.drafted)  # drafted nodes with kept keys, in order
        paths = [tree.path(n) for n in wave]
        sees = torch.zeros(len(wave), self.keys.shape[1] + len(earlier) + len(wave), dtype=torch.bool)
        sees[:, : self.keys.shape[1]] = True
        for row, path in enumerate(paths):
            ancestors = set(path[1:-1])
            for col, node in enumerate(earlier):
                sees[row, self.keys.shape[1] + col] = node in ancestors
            sees[row, self.keys.shape[1] + len(earlier) + row] = True  # itself
        dev = self.embed.device
        g = torch.stack([self.states[tree.parents[n]] for n in wave])  # [w, hidden]
        tokens = torch.tensor([tree.tokens[n] for n in wave], device=dev)
        positions = torch.tensor([root_pair + len(path) - 1 for path in paths], device=dev)  # pair + depth
        past_k = torch.cat([self.keys] + [self.drafted[n][0][:, None] for n in earlier], 1)
        past_v = torch.cat([self.values] + [self.drafted[n][1][:, None] for n in earlier], 1)
        h, k, v = self.head.rows(g, self.embed[tokens], positions, past_k, past_v, sees.to(dev))
        for row, node in enumerate(wave):
            self.states[node] = h[row]
            self.drafted[node] = (k[:, row], v[:, row])
