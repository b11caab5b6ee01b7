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

from collections.abc import Callable

import torch

from decoding.models.head.drafter import _waves
from decoding.models.head.feature_target import FeatureTreeLM
from decoding.models.head.graphed_calls import GraphedHeadCalls
from decoding.models.head.head_slots import HeadSlots
from decoding.models.head.lean_fused import HeadCall, LeanFusedHead
from decoding.models.treelm import TreeBook
from decoding.verify.tree import DraftTree


class FusedHeadTreeLM(TreeBook):
    """The fused draft head behind the TreeLM protocol; reads the paired target session's history.
    `run`: how a call of the head runs: LeanFusedHead.call eagerly, or with `calls` (on a GPU) replayed from CUDA
    graphs on slots leased from them (graphed_calls.py); the keys and values it reads and writes live in `slots`
    (head_slots.py)."""

    def __init__(self, head: LeanFusedHead, embed: torch.Tensor, vocab_size: int, target: FeatureTreeLM,
                 calls: GraphedHeadCalls | None = None) -> None:
        super().__init__()
        self.head, self.embed = head, embed  # embed [V, hidden]
        self.vocab_size = vocab_size
        self.target = target
        self.run: Callable[[HeadSlots, HeadCall], tuple[torch.Tensor, torch.Tensor]] = calls or head.call
        c = head.config
        self.slots = calls.lease(self) if calls is not None else HeadSlots(c.heads, c.head_dim, embed.device)
        self.covered: list[int] = []  # the context tokens the kept pairs were computed on (0 .. pairs)
        self.states: dict[int, torch.Tensor] = {}  # tree node -> its output state [hidden], this step
        self.rows: dict[int, torch.Tensor] = {}  # tree node -> q's logits over the head's ids [H], this step

    def start(self, context: list[int]) -> None:
        self.slots.forget(0)
        self.covered = []
        super().start(context)

    def _reset(self, context: list[int]) -> None:
        """start and commit (TreeBook's) begin a new step: drafted rows belong to the old tree; kept pairs stay
        while the new context extends the tokens they were computed on."""
        super()._reset(context)
        self.states, self.rows = {}, {}
        kept = self.slots.committed if self.context[: len(self.covered)] == self.covered else 0
        self.slots.forget(kept)
        if not kept:
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
                self._catch_up(history)
            for wave in _waves(tree, [n for n in nodes if n != 0], self.states):
                self._draft_rows(tree, wave)
            rows = torch.stack([self.rows[n] for n in nodes])  # [n, H]
            out[:, self.head.ids] = rows.float().cpu()  # [n, H] into [n, V]: q on the CPU
        return out

    def _catch_up(self, history: torch.Tensor) -> None:
        """Rows for the committed pairs not kept yet (through the root's pair n - 2), kept in the slots; the last
        is the root's."""
        done, last = self.slots.committed, len(self.context) - 2
        k, dev = last + 1 - done, self.embed.device
        self.slots.reserve(last + 1)
        tokens = torch.tensor(self.context[done + 1: last + 2], device=dev)  # token j + 1 of pair j
        sees = torch.ones(k, done + k, dtype=torch.bool, device=dev)  # every kept pair, the new ones causally
        sees[:, done:] = torch.ones(k, k, dtype=torch.bool, device=dev).tril()
        pairs = torch.arange(done, last + 1, device=dev)  # [k]
        h, q = self.run(self.slots, HeadCall(history[done: last + 1].flatten(-2), self.embed[tokens], pairs, pairs,
                                             done, sees, from_taps=True))
        self.slots.forget(last + 1)
        self.covered = self.context[: last + 2]
        self.states[0], self.rows[0] = h[-1], q[-1]

    def _draft_rows(self, tree: DraftTree, wave: list[int]) -> None:
        """One row per drafted node of `wave` (their parents' states known) in the next free slots: each attends
        to the committed pairs, its drafted ancestors and itself."""
        slots, dev = self.slots, self.embed.device
        first, n = slots.filled, len(wave)
        slots.reserve(first + n)
        paths = [tree.path(node) for node in wave]
        sees = torch.zeros(n, first + n, dtype=torch.bool)
        sees[:, : slots.committed] = True
        for row, path in enumerate(paths):
            sees[row, [slots.drafted[a] for a in path[1:-1]]] = True  # its drafted ancestors
            sees[row, first + row] = True  # itself
        g = torch.stack([self.states[tree.parents[node]] for node in wave])  # [w, hidden]
        tokens = torch.tensor([tree.tokens[node] for node in wave], device=dev)
        positions = torch.tensor([slots.committed - 1 + len(path) - 1 for path in paths], device=dev)  # pair + depth
        write_at = torch.arange(first, first + n, device=dev)
        h, q = self.run(slots, HeadCall(g, self.embed[tokens], positions, write_at, first, sees.to(dev)))
        for row, node in enumerate(wave):
            slots.drafted[node] = first + row
            self.states[node], self.rows[node] = h[row], q[row]
