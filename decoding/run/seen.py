"""What a run has seen of its draft's acceptance, kept as numbers once its p and q rows are let go.

A lazy-theory run keeps a step's p and q rows only until a view fills that step's theory (`Run.fill_theory`):
two [V] float64 rows per visit are too much to keep for a whole run. The Speed view predicts every draft shape
from the run's own exact acceptance, so `fill_theory` logs here, from the rows, before it lets them go: A(1)
at each visited node (sd's sum min(p, q), O(V)) and, on WIDE_PER_STEP visits of the step, A(2), two candidates
drawn without replacement (rrs_wor's; an enumeration, milliseconds a node at V = 49152 on a 2-core CPU:
docs/speed.md, "Measurements the code's comments cite"). A greedy
run (T = 0) logs the top-k rates instead, what the chooser's T = 0 trees accept (`top_k_rate`): sd's sum min(p, q)
is that rate only for a one-hot q, and a top-k law's q at T = 0 is the draft's untempered law.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from decoding.verify import laws
from decoding.verify.theory import routes as theory

WIDE_PER_STEP = 2  # visits per filled step whose A(2) is computed too
MAX_LOGGED = 4096  # bounded memory: a run of many steps keeps its latest numbers


def top_k_rate(p: torch.Tensor, q: torch.Tensor, k: int) -> float:
    """p's mass on q's k best tokens: at T = 0, 1 when the target's argmax is among them (pointmass on top-k).
    Only tokens q allows count (a node draws no more: laws.within_support): a one-hot q's top-4 is its one token."""
    return float(p[laws.top_order(q, laws.within_support(q, k))].sum())


def ranks_runner_up(q: torch.Tensor) -> bool:
    """q [V] gives more than one token mass: its top-2 says something (a sampling law's q at T = 0 is one-hot)."""
    return int((q > 0).sum()) > 1


def node_acceptance(p: torch.Tensor, q: torch.Tensor, k: int) -> float:
    """Exact P(accept) of k candidates at one node: sd for k = 1, rrs_wor (without replacement) above;
    a q with fewer than k tokens of support gives what its whole support gives."""
    if k == 1:
        return theory.acceptance("sd", p, q, 1).value
    support = int((q > 0).sum())
    return theory.acceptance("rrs_wor", p, q, min(k, max(support, 1))).value


def no_guess(record, depth: int) -> list[tuple[int, float]]:
    """[(d, 0.0)] when the step's accepted path ended at a leaf above the tree's depth `depth`: the drafter had no
    guess there (prompt lookup without a match), a level the step reached and could not gain on. Without it the
    lookup pair's acceptance counted only its guesses (0.67 at depth 1), while 100 of its 112 calibration steps
    drafted nothing, and the chooser predicted 2.5x. [] for a step that drafted to the depth, or depth 0."""
    if depth <= 0:
        return []
    last = record.nodes[record.accepted_path[-1]]
    return [(last.depth + 1, 0.0)] if last.depth < depth and not last.draws else []


def misses(records, depth: int) -> list[tuple[int, float]]:
    """no_guess over several steps' records."""
    return [miss for record in records for miss in no_guess(record, depth)]


def fixed_depth(config) -> int:
    """The depth every step of a run drafts to, what no_guess measures against; 0 when it varies (adaptive, a
    minimum confidence) or nothing is drafted."""
    return 0 if config.adaptive or config.min_confidence > 0 or not config.drafting else config.tree_depth


@dataclass
class Seen:
    ones: list[tuple[int, float]] = field(default_factory=list)  # (depth of the candidates, A(1))
    wide: list[tuple[float, float]] = field(default_factory=list)  # (A(1), A(2)) at one node
    greedy: bool = False  # T = 0: top-k rates (top_k_rate), A(2) on every visit whose q ranks a runner-up
    depth: int = 0  # the run's tree depth: a step that stopped above it for want of a guess logs a 0 (no_guess)

    def add_step(self, record, kept: list[tuple[int, torch.Tensor, torch.Tensor]]) -> None:
        """A step's kept (visit index, p [V], q [V]) rows, before they are let go."""
        rule = top_k_rate if self.greedy else node_acceptance
        for n, (visit, p, q) in enumerate(kept):
            a1 = rule(p, q, 1)
            self.ones.append((record.nodes[record.visits[visit].node].depth + 1, a1))
            if (n < WIDE_PER_STEP and not self.greedy) or (self.greedy and ranks_runner_up(q)):
                self.wide.append((a1, rule(p, q, 2)))
        self.ones += no_guess(record, self.depth)
        del self.ones[:-MAX_LOGGED], self.wide[:-MAX_LOGGED]

    def ratio(self) -> float | None:
        """A(2) / A(1) over the sampled nodes (what the Speed view carries to every depth); None before any."""
        base = sum(a1 for a1, _ in self.wide)
        return sum(a2 for _, a2 in self.wide) / base if base > 0 else None
