"""FASTEST: the fastest lossless configuration measured with `python -m bench speed`; `fastest()`: the fastest
lossless configuration on THIS machine, chosen from its calibrated costs (decoding/speed).

A (pair kind, DecodeConfig) tuple for outside checks that time specscope on their own prompts:
`pair = load_pair(FASTEST[0]); engine.generate(pair, FASTEST[1].with_(temperature=...), prompt)`.
record=False is the fast path (no per-node records, no theory); the verifier is lossless, so the
output law is the target's at any temperature. Importing this module loads no model.

Why this one, and what else was measured and not kept (sessions 4-10, the commands and the numbers):
docs/speed-journal.md. It was tuned on one VM; on another machine the
few-row verify can cost twice as much and the same config lose to plain decoding (docs/speed.md, "Cost
of one target forward on a CPU"). Hence `fastest(pair_kind=None)`: it calibrates the pair on the machine at
hand (once; cached per machine, decoding/speed/calibrate.py), predicts every draft shape's tokens per second
from those costs and the pair's exact acceptance (decoding/speed/chooser.py), and returns the fastest, or
the target alone (`drafting=False`) when no shape is predicted 5 % faster (chooser.MARGIN). A chain may come with a
minimum confidence (`DecodeConfig.min_confidence`: it drafts deep only where the draft is sure, chooser.dynamic).
FASTEST stays the default without calibration.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from decoding.run.config import Branching, DecodeConfig

if TYPE_CHECKING:  # calibrate imports torch: importing FASTEST must not
    from decoding.speed import calibrate, chooser

FASTEST: tuple[str, DecodeConfig] = (
    "embedded-head",
    DecodeConfig(verifier="sd", branching=(1, 1), temperature=0.0, record=False),
)

PAIRS_TRIED = ("embedded-head", "embedded")  # fastest() without a pair: the trained head, then the int8 self-draft


def fastest(pair_kind: str | None = None, *, temperature: float = 0.0, force: bool = False,
            progress=None) -> tuple[str, DecodeConfig]:
    """(pair kind, DecodeConfig): the fastest lossless configuration on this machine at `temperature`
    (calibrated and cached; `force` measures again). Loads the pair(s); use the answer as FASTEST is used.
    The config carries the costs it was chosen from (`DecodeConfig.costs`), so a trace says why."""
    return best_config((pair_kind,) if pair_kind else PAIRS_TRIED, temperature, force=force, progress=progress)


@dataclass(frozen=True)
class PairChoice:
    """A pair's calibration here and the chooser's verdict on it (the reasons shown with the answer)."""

    pair_kind: str
    calibration: calibrate.Calibration
    choice: chooser.Choice

    def config(self, temperature: float) -> DecodeConfig:
        return config_for(self.choice.best, temperature, self.calibration)


def config_for(best: chooser.Prediction, temperature: float, cal: calibrate.Calibration) -> DecodeConfig:
    """The chosen shape as a DecodeConfig carrying the costs it was chosen from (the target alone: drafting off)."""
    if not best.levels:
        return DecodeConfig(verifier="sd", shape=Branching((1,)), temperature=temperature, record=False,
                            drafting=False, costs=cal.costs)
    return DecodeConfig(verifier=best.verifier, shape=Branching(best.levels), temperature=temperature,
                        record=False, costs=cal.costs, min_confidence=best.floor)


def choose_for(pair, pair_kind: str, temperature: float, *, force: bool = False, progress=None) -> PairChoice:
    """Calibrate `pair` here (cached) and choose its fastest shape at `temperature` (at T = 0 trees are the
    draft's top-k)."""
    from decoding.speed import calibrate

    cal = calibrate.calibrated(pair, pair_kind, force=force, progress=progress)
    return choice_from(cal, pair_kind, temperature)


def choice_from(cal: calibrate.Calibration, pair_kind: str, temperature: float) -> PairChoice:
    """The chooser's verdict on a calibration in hand at `temperature` (one calibration serves every temperature,
    even one that was not cached: timed while other processes took the cores)."""
    from decoding.speed import chooser

    return PairChoice(pair_kind, cal, chooser.choose(cal.costs, cal.table(temperature), greedy=temperature == 0))


def best_config(kinds: tuple[str, ...], temperature: float, *, force: bool = False, progress=None
                ) -> tuple[str, DecodeConfig]:
    """Of the pairs `kinds`, each loaded with this machine's plan, the one whose choice is predicted fastest."""
    from decoding.speed.plan import load_planned

    picks = [choose_for(load_planned(kind), kind, temperature, force=force, progress=progress) for kind in kinds]
    top = max(picks, key=lambda c: c.choice.best.tokens_per_s)
    return top.pair_kind, top.config(temperature)
