"""Chain length chosen per step from what past steps showed (DecodeConfig.adaptive).

Lossless by construction: the length of step t's chain is a function of steps 1..t-1 only (how many
of their drafted tokens were accepted), fixed before step t draws anything, and every lossless
verifier emits the target's law for ANY tree fixed in advance. The choice maximises expected tokens
per unit of time:
    E[tokens](L) = (1 - a^(L+1)) / (1 - a)        (a = per-token acceptance, i.i.d. approximation)
    cost(L)      = L * DRAFT_COST + VERIFY_COST   (target forwards: one draft forward per chain token)
with a estimated from past steps (Laplace prior). The costs are never timed during a run, so a seeded run
stays reproducible: the machine's calibrated costs when the config carries them (`DecodeConfig.costs`,
measured once by decoding.speed.calibrate and written into the config and so the trace: a replay decides
from the same numbers), where a length of 0 (the target alone for that step) is allowed when no chain
pays; else the constants below (docs/speed.md, "Drafts that need no second model"). A resumed run starts
its estimate afresh.
"""

from __future__ import annotations

from dataclasses import dataclass

from decoding.run.costs import StepCosts

DRAFT_COST = 0.58  # one int8 self-draft forward, in target forwards (docs/speed.md)
VERIFY_COST = 1.3  # one multi-row verify forward, in one-token target forwards


@dataclass
class ChainStats:
    """Running totals of past steps: tests along the chain and how many passed."""

    tested: int = 0
    accepted: int = 0

    def add(self, tested: int, accepted: int) -> None:
        self.tested += tested
        self.accepted += accepted

    def acceptance(self) -> float:
        return (self.accepted + 1) / (self.tested + 2)  # Laplace: 0.5 before any step


def expected_tokens(a: float, length: int) -> float:
    return float(length + 1) if a >= 1.0 else (1.0 - a ** (length + 1)) / (1.0 - a)


def chain_length(stats: ChainStats, max_length: int, costs: StepCosts | None = None) -> int:
    """The length with the most expected tokens per unit of cost: in 0..max_length with calibrated `costs`
    (0: the target alone pays best), in 1..max_length with the fixed constants."""
    a = stats.acceptance()
    if costs is None:
        return max(range(1, max_length + 1), key=lambda n: expected_tokens(a, n) / (n * DRAFT_COST + VERIFY_COST))
    return max(range(0, max_length + 1), key=lambda n: expected_tokens(a, n) / costs.step_ms((1,) * n))
