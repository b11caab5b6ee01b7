"""From calibrations to a DecodeConfig: what `decoding.fastest.fastest()` returns, and the reasons shown with it.

For each pair tried: load it, calibrate it on this machine (cached), choose its fastest shape at the given
temperature (chooser.choose; at T = 0 trees are the draft's top-k), and keep the pair whose prediction is
fastest. A pair whose best is the target alone yields `drafting=False`: plain decoding through the same forward.
"""

from __future__ import annotations

from dataclasses import dataclass

from decoding.run.config import Branching, DecodeConfig
from decoding.speed import calibrate, chooser


@dataclass(frozen=True)
class PairChoice:
    pair_kind: str
    calibration: calibrate.Calibration
    choice: chooser.Choice

    def config(self, temperature: float) -> DecodeConfig:
        return config_for(self.choice.best, temperature, self.calibration)


def config_for(best: chooser.Prediction, temperature: float, cal: calibrate.Calibration) -> DecodeConfig:
    if not best.levels:
        return DecodeConfig(verifier="sd", shape=Branching((1,)), temperature=temperature, record=False,
                            drafting=False, costs=cal.costs)
    return DecodeConfig(verifier=best.verifier, shape=Branching(best.levels), temperature=temperature,
                        record=False, costs=cal.costs)


def choose_for(pair, pair_kind: str, temperature: float, *, force: bool = False, progress=None) -> PairChoice:
    cal = calibrate.calibrated(pair, pair_kind, force=force, progress=progress)
    choice = chooser.choose(cal.costs, cal.table(temperature), greedy=temperature == 0)
    return PairChoice(pair_kind, cal, choice)


def best_config(kinds: tuple[str, ...], temperature: float, *, force: bool = False, progress=None
                ) -> tuple[str, DecodeConfig]:
    from decoding.models.pairs import load_pair

    picks = [choose_for(load_pair(kind), kind, temperature, force=force, progress=progress) for kind in kinds]
    top = max(picks, key=lambda c: c.choice.best.tokens_per_s)
    return top.pair_kind, top.config(temperature)
