"""Choose the draft shape from the machine's costs and the pair's acceptance: pure arithmetic, no torch.

A Branching shape (b_1, ..., b_D) drafts b_d candidates under every node of depth d-1 and verifies the
whole tree in ONE target forward. With A(k, d) = P(one of k candidates at depth d is accepted | depth d is
reached) (exact per node from p and q, `acceptance.py`), the accepted path goes down one node per level,
so the expected tokens per step are

    E(b) = 1 + sum_{d=1..D} prod_{i=1..d} A(b_i, i)            (the 1: the token a step always emits)

and a step costs `StepCosts.step_ms(b)`: one draft forward per level over that level's parents, one target
forward over all 1 + nodes(b) rows, and the step's overhead. The predicted speed is E(b) / step_ms(b)
tokens per ms against 1 / alone_ms() for the target alone. The search enumerates every shape within the
depth, width and node budgets (a Sequoia-style search over node budgets and depths, Chen et al. 2024, on
level-uniform trees; cheap: a few thousand shapes) and keeps the fastest; none predicted MARGIN x the target
alone or more means the target alone. The margin is the model's own error: on held-out prompts its predicted
speed-ups were within 5-10 % of the measured ones, and the embedded pair's rrs_wor 2 at T = 0.8, predicted
at 1.07x, ran at 0.96x; a gain smaller than the error is a coin flip, and the target alone never loses.
The same holds between shapes: of the shapes predicted within MARGIN of the fastest, the smallest is chosen
(fewest drafted nodes, then fewest levels). A larger shape rests on more acceptance rates and more of the cost
model, and its extra gain, a few %, is within the model's error: on one AMD EPYC core the chooser's sd 1,1,1,
predicted 2 % above sd 1,1, ran 3-8 % below it in 14 of 16 runs on held-out prompts (docs/speed.md, "Rows made
cheap").
Chains use `sd`, trees `rrs_wor` (lossless; k = 1 is sd), so the answer is always a lossless DecodeConfig.
Chains that stop where the draft is unsure (DecodeConfig.min_confidence, run/confidence.py) are candidates too,
when the table holds the measured chain steps (`AcceptanceTable.chain`: each step's accepted count k and its
drafted nodes' path confidences). With floor c and up to D levels, a step drafts L = 1 + the number of leading
nodes whose confidence reaches c (at most D) and emits 1 + min(k, L) tokens of the measured run. The prediction
(`dynamic`) takes those steps' mean cost step_ms(L), and their mean tokens relative to the same steps cut at D
(1 + min(k, D)), times E(1,...,1) of depth D: the ratio cancels the luck of the measured coins. Floors are tried
on the grid FLOORS and each depth keeps its best; a chain with a floor counts as its full depth among the shapes
near the fastest.
At T = 0 (greedy) trees use `pointmass` on the draft's top-k (EAGLE-2's greedy tree): p is one-hot, so a level of
k candidates accepts exactly when the target's argmax is among the draft's k best tokens, and A(k, d) is that
rate (the draft ranks by its untempered law, laws.draft_temperature); i.i.d. or without-replacement draws from
a one-hot q would add nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product

from decoding.run.config import MAX_NODES, Branching
from decoding.run.costs import StepCosts

MARGIN = 1.05  # a shape is chosen only when predicted at least this much faster than the target alone
FLOORS = tuple(round(0.1 * i, 1) for i in range(1, 10))  # the minimum confidences a chain is predicted with
ChainStep = tuple[int, tuple[float, ...]]  # (drafted tokens accepted, each drafted node's path confidence)


@dataclass(frozen=True)
class AcceptanceTable:
    """rates[k][d-1] = A(k, d), the mean exact acceptance of k candidates at depth d (k = 1: sd's
    sum min(p, q)). Depths beyond the measured ones take the deepest measured value."""

    rates: dict[int, tuple[float, ...]]
    nodes: int = 0  # p/q rows it was measured on (the view says how much evidence there is)
    chain: tuple[ChainStep, ...] = ()  # the measured chain steps (module docstring); () when not measured

    def __post_init__(self) -> None:
        if 1 not in self.rates or any(not v for v in self.rates.values()):
            raise ValueError("an acceptance table needs at least A(1, 1)")
        if any(not 0.0 <= a <= 1.0 for v in self.rates.values() for a in v):
            raise ValueError("acceptance rates must lie in [0, 1]")

    @property
    def widths(self) -> tuple[int, ...]:
        return tuple(sorted(self.rates))

    @property
    def chain_depth(self) -> int:
        """The deepest measured chain step's drafted nodes (0: no chain steps)."""
        return max((len(sure) for _, sure in self.chain), default=0)

    def rate(self, k: int, depth: int) -> float:
        """A(k, depth); a width never measured takes the widest measured below it (a lower bound: more
        candidates never accept less)."""
        by_depth = self.rates[k if k in self.rates else max(w for w in self.rates if w < k)]
        return by_depth[min(depth, len(by_depth)) - 1]

    def to_dict(self) -> dict:
        out = {"rates": {str(k): list(v) for k, v in sorted(self.rates.items())}, "nodes": self.nodes}
        if self.chain:  # a step as one list: k, then the confidences
            out["chain"] = [[k, *(round(c, 4) for c in sure)] for k, sure in self.chain]
        return out

    @staticmethod
    def from_dict(d: dict) -> AcceptanceTable:
        chain = tuple((int(step[0]), tuple(float(c) for c in step[1:])) for step in d.get("chain", ()))
        return AcceptanceTable({int(k): tuple(float(a) for a in v) for k, v in d["rates"].items()},
                               int(d.get("nodes", 0)), chain)


def expected_tokens(levels: tuple[int, ...], table: AcceptanceTable) -> float:
    total, reach = 1.0, 1.0
    for depth, k in enumerate(levels, start=1):
        reach *= table.rate(k, depth)
        total += reach
    return total


def verifier_for(levels: tuple[int, ...], greedy: bool = False) -> str:
    """The lossless verifier of a shape: sd for a chain; a tree: rrs_wor, or at T = 0 pointmass on the top-k."""
    if set(levels) <= {1}:
        return "sd"
    return "pointmass" if greedy else "rrs_wor"


@dataclass(frozen=True)
class Prediction:
    levels: tuple[int, ...]  # () = the target alone
    tokens_per_step: float
    step_ms: float
    greedy: bool = False  # T = 0: a tree is the draft's top-k, verified by pointmass
    floor: float = 0.0  # a chain's minimum confidence (0: every level, every step)

    @property
    def verifier(self) -> str:
        return verifier_for(self.levels, self.greedy)

    @property
    def tokens_per_s(self) -> float:
        return 1000.0 * self.tokens_per_step / self.step_ms

    def label(self) -> str:
        if not self.levels:
            return "target alone"
        shape = f"{self.verifier} {','.join(map(str, self.levels))}"
        return f"{shape}, min confidence {self.floor:g}" if self.floor else shape


@dataclass(frozen=True)
class Choice:
    best: Prediction  # levels () when nothing beats the target alone
    alone: Prediction
    ranked: tuple[Prediction, ...]  # every candidate, fastest first

    @property
    def speedup(self) -> float:
        return self.best.tokens_per_s / self.alone.tokens_per_s

    def why(self) -> str:
        if not self.best.levels:
            top = self.ranked[0] if self.ranked else None
            ratio = top.tokens_per_s / self.alone.tokens_per_s if top else 0.0
            lost = f"; the best shape, {top.label()}, would run at {ratio:.2f}x" if top else ""
            within = f", within the cost model's {MARGIN - 1:.0%} error" if 1.0 < ratio < MARGIN else ""
            return f"no draft shape beats the target alone on this machine{lost}{within}: decoding without a draft"
        top = self.ranked[0] if self.ranked else self.best
        kept = (f"; {top.label()} was predicted {top.tokens_per_s / self.best.tokens_per_s - 1:.0%} faster, within "
                f"the cost model's {MARGIN - 1:.0%} error: the smaller shape") if top.levels != self.best.levels else ""
        return (f"{self.best.label()}: {self.best.tokens_per_step:.2f} tokens a step in {self.best.step_ms:.1f} ms, "
                f"predicted {self.speedup:.2f}x the target alone ({self.alone.step_ms:.1f} ms a token){kept}")


def shapes(max_depth: int = 8, widths: tuple[int, ...] = (1, 2, 3), max_nodes: int = MAX_NODES
           ) -> list[tuple[int, ...]]:
    """Every Branching shape of depth 1..max_depth over `widths` with at most max_nodes drafted nodes."""
    return [levels for depth in range(1, max_depth + 1) for levels in product(widths, repeat=depth)
            if Branching(levels).max_nodes <= max_nodes]


def predict(levels: tuple[int, ...], costs: StepCosts, table: AcceptanceTable, greedy: bool = False,
            floor: float = 0.0) -> Prediction:
    """A shape's prediction; with a floor, a chain's (`dynamic`), when the table holds chain steps."""
    if not levels:
        return Prediction((), 1.0, costs.alone_ms(), greedy)
    if floor > 0 and table.chain and set(levels) == {1}:
        return dynamic(len(levels), floor, costs, table, greedy)
    return Prediction(levels, expected_tokens(levels, table), costs.step_ms(levels), greedy)


def dynamic(depth: int, floor: float, costs: StepCosts, table: AcceptanceTable, greedy: bool = False) -> Prediction:
    """A chain of up to `depth` levels with minimum confidence `floor`, from the table's chain steps (module
    docstring)."""
    cut = [(k, drafted_levels(sure, depth, floor)) for k, sure in table.chain if sure]
    if not cut or depth > table.chain_depth:  # nothing measured to cut, or not so deep
        return predict((1,) * depth, costs, table, greedy)
    full = sum(1 + min(k, depth) for k, _ in cut)
    tokens = sum(1 + min(k, n) for k, n in cut)
    ms = sum(costs.step_ms((1,) * n) for _, n in cut) / len(cut)
    levels = (1,) * depth
    return Prediction(levels, expected_tokens(levels, table) * tokens / full, ms, greedy, floor)


def drafted_levels(sure: tuple[float, ...], depth: int, floor: float) -> int:
    """The levels a step drafts: the first always, one more under each leading node sure enough, at most
    `depth` (and no more than the measured chain's nodes)."""
    levels = 1
    while levels < min(depth, len(sure)) and sure[levels - 1] >= floor:
        levels += 1
    return levels


def choose(costs: StepCosts, table: AcceptanceTable, *, max_depth: int = 8, max_nodes: int = 64,
           chains_only: bool = False, greedy: bool = False) -> Choice:
    """The smallest shape predicted within MARGIN of the fastest (smallest_near), or the target alone when none is
    predicted MARGIN x as fast.
    greedy: T = 0, trees of the draft's top-k (pointmass; the table's A(k) must be top-k rates, acceptance.py).
    chains_only: widths of 1 only."""
    widths = (1,) if chains_only else table.widths
    candidates = [predict(s, costs, table, greedy) for s in shapes(max_depth, widths, max_nodes)]
    deepest = min(max_depth, table.chain_depth)
    candidates += [max((dynamic(d, c, costs, table, greedy) for c in FLOORS), key=lambda p: p.tokens_per_s)
                   for d in range(2, deepest + 1)]  # each depth's best floor (the others fill the ranking alike)
    ranked = sorted(candidates, key=lambda p: (-p.tokens_per_s, len(p.levels), p.floor))
    alone = predict((), costs, table, greedy)
    best = smallest_near(ranked) if ranked and ranked[0].tokens_per_s >= MARGIN * alone.tokens_per_s else alone
    return Choice(best, alone, tuple(ranked))


def smallest_near(ranked: list[Prediction]) -> Prediction:
    """Of the shapes predicted within MARGIN of the fastest (ranked[0]), the one with the fewest drafted nodes,
    then the fewest levels, then the fastest (the module docstring: a gain within the model's error is a coin
    flip, and a smaller shape has less to be wrong about)."""
    near = [p for p in ranked if MARGIN * p.tokens_per_s >= ranked[0].tokens_per_s]
    return min(near, key=lambda p: (Branching(p.levels).max_nodes, len(p.levels), p.floor > 0, -p.tokens_per_s))
