"""`python -m bench predict`: the chooser's predicted tokens per second of each shape against what runs measure.

    python -m bench predict [--pair embedded-head] [--prompts-file F] [--prompts N] [--temperatures 0,0.8]
                            [--shapes "alone;1;1,1;2,1"] [--repeats 2] [--max-new-tokens 40] [--threads N]
                            [--device cpu|cuda]

For each prompt, shape and repeat (seed = the repeat):
- one recorded run (lazy theory) gives the exact acceptance of its own p and q, the evidence the Speed view
  predicts from; the prediction is chooser.predict(shape, this machine's calibrated costs, that acceptance);
- one fast run (record=False, what fastest() returns) with the same seed is timed step by step. Measured
  tokens/s = the tokens of its steps after the first / their wall time: the first step pays the prompt's
  prefill, which a per-step prediction leaves out.
Per shape, the report gives the median and range over prompts of predicted / measured tokens/s, the same for
the speed-up over the target alone of the same prompt and seed (a machine whose speed drifts between the
calibration and the runs moves every shape's tokens/s alike, and the choice not at all), and the split into
tokens per step and ms per step (so an error is seen to come from the acceptance or from the costs).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from bench.speed import load_prompts, parse_temperatures
from decoding.models.kinds import CHOICES, built_in_kind
from decoding.run.config import parse_branching
from decoding.speed.chooser import Prediction

DEFAULT_SHAPES = {0.0: "alone;1;1,1;1,1,1;2;3;4;3,1", None: "alone;1;1,1;2;3;4;2,1;3,1"}  # None: any T > 0


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m bench predict", description=__doc__.split("\n")[0])
    ap.add_argument("--pair", default="embedded-head", type=built_in_kind, metavar=CHOICES)
    ap.add_argument("--prompts-file", type=Path, default=None, help="JSON {\"prompts\": [{kind, prompt}]}")
    ap.add_argument("--prompts", type=int, default=None, help="how many of its prompts (default: all of a file)")
    ap.add_argument("--temperatures", default="0,0.8")
    ap.add_argument("--device", default="cpu", help="cpu or cuda")
    ap.add_argument("--shapes", default=None, help="';'-separated Branching levels, 'alone' for the target "
                    "alone (default: chains and top-k trees at T = 0, chains and width-2 trees above)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--max-new-tokens", type=int, default=40)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    return ap


def parse_shapes(text: str) -> list[tuple[int, ...]]:
    """'alone;1;1,1;2,1' -> [(), (1,), (1, 1), (2, 1)]."""
    shapes = []
    for item in (s.strip() for s in text.split(";") if s.strip()):
        levels = () if item == "alone" else parse_branching(item, "--shapes (or 'alone')")
        if any(not 1 <= b <= 8 for b in levels):
            raise ValueError(f"--shapes: widths must be 1..8, got {item!r}")
        shapes.append(levels)
    if not shapes:
        raise ValueError("--shapes is empty")
    return shapes


@dataclass(frozen=True)
class Sample:
    """One prompt, shape and seed: predicted and measured, tokens per step and ms per step."""

    levels: tuple[int, ...]
    predicted_tokens: float
    predicted_ms: float
    measured_tokens: float
    measured_ms: float
    case: tuple[str, int] = ("", 0)  # (prompt, seed): the target alone's sample of the same case is the base

    @property
    def ratio(self) -> float:
        """Predicted / measured tokens per second."""
        return (self.predicted_tokens / self.predicted_ms) / (self.measured_tokens / self.measured_ms)


def relative_ratios(samples: list[Sample]) -> dict[tuple[int, ...], list[float]]:
    """levels -> per case, the predicted over the measured speed-up against the target alone of the same case:
    the machine's speed drifting between the calibration and the runs cancels out (a VM's did by 5-10 %)."""
    alone = {s.case: s for s in samples if not s.levels}
    out: dict[tuple[int, ...], list[float]] = {}
    for s in samples:
        base = alone.get(s.case)
        if s.levels and base is not None:
            out.setdefault(s.levels, []).append(s.ratio / base.ratio)
    return out


def config_of(levels: tuple[int, ...], temperature: float, seed: int, max_new: int):
    from decoding.run.config import Branching, DecodeConfig
    from decoding.speed.chooser import verifier_for

    if not levels:
        return DecodeConfig(verifier="sd", shape=Branching((1,)), drafting=False, temperature=temperature,
                            seed=seed, max_new_tokens=max_new, record=False)
    return DecodeConfig(verifier=verifier_for(levels, temperature == 0), shape=Branching(levels),
                        temperature=temperature, seed=seed, max_new_tokens=max_new, record=False)


def timed_steps(pair, config, prompt: str) -> tuple[int, float, int]:
    """(tokens, wall ms, steps) of a fast run's steps after the first."""
    from decoding.run import engine

    run = engine.start(pair, config, prompt)
    tokens, ms, steps, before, first = 0, 0.0, 0, 0, True
    while True:
        start = time.perf_counter()
        record = run.step()  # a fast run's records are all index 0
        wall = 1000 * (time.perf_counter() - start)
        if record is None:
            return tokens, ms, steps
        now = len(run.state.generated_ids)
        if not first:
            tokens, ms, steps = tokens + now - before, ms + wall, steps + 1
        before, first = now, False


def sample(pair, cal, levels: tuple[int, ...], temperature: float, seed: int, prompt: str, max_new: int) -> Sample:
    from decoding.run.seen import misses
    from decoding.speed import acceptance, chooser
    from decoding.speed.pair_acceptance import run_steps

    config = config_of(levels, temperature, seed, max_new)
    if levels:
        steps, rows = run_steps(pair, config.with_(record=True), prompt)
        widths, greedy = tuple(sorted({1, *levels})), temperature == 0
        missed = misses([record for _, record in steps], len(levels))  # lookup: a level with no guess, 0
        table = acceptance.table_from_rows(rows, widths, missed, greedy=greedy)
        predicted = chooser.predict(levels, cal.costs, table, greedy)
    else:
        predicted = chooser.predict((), cal.costs, cal.table(temperature))
    tokens, ms, steps = timed_steps(pair, config, prompt)
    return Sample(levels, predicted.tokens_per_step, predicted.step_ms, tokens / max(steps, 1), ms / max(steps, 1),
                  (prompt, seed))


def report(samples: list[Sample], temperature: float) -> str:
    """Per shape: median predicted and measured, the median [min-max] of predicted / measured tokens/s, and the
    same for the speed-up over the target alone (relative_ratios); shapes named with their verifier at this
    temperature (config_of's)."""
    lines = ["| shape | tok/s predicted | tok/s measured | predicted / measured: median [range] | "
             "x target alone, predicted / measured: median [range] | tokens/step pred / meas | "
             "ms/step pred / meas |", "|---|---|---|---|---|---|---|"]
    relative = relative_ratios(samples)
    for levels in dict.fromkeys(s.levels for s in samples):
        mine = [s for s in samples if s.levels == levels]
        med = {name: statistics.median(getattr(s, name) for s in mine)
               for name in ("predicted_tokens", "predicted_ms", "measured_tokens", "measured_ms")}
        name = Prediction(levels, 1.0, 1.0, temperature == 0).label()
        lines.append(
            f"| {name} | {1000 * med['predicted_tokens'] / med['predicted_ms']:.1f} | "
            f"{1000 * med['measured_tokens'] / med['measured_ms']:.1f} | {_spread([s.ratio for s in mine])} | "
            f"{_spread(relative.get(levels, []))} | {med['predicted_tokens']:.2f} / {med['measured_tokens']:.2f} | "
            f"{med['predicted_ms']:.1f} / {med['measured_ms']:.1f} |")
    return "\n".join(lines)


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} [{min(values):.2f}-{max(values):.2f}]" if values else "-"


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    temps = parse_temperatures(args.temperatures)
    prompts = [p["prompt"] for p in load_prompts(args.prompts, args.prompts_file)]
    if args.repeats < 1 or args.max_new_tokens < 2:
        raise ValueError("--repeats must be >= 1 and --max-new-tokens >= 2")
    if args.threads:
        torch.set_num_threads(args.threads)
    from decoding.speed import calibrate, machine
    from decoding.speed.plan import load_planned

    pair = load_planned(args.pair, device=args.device, progress=lambda m: print(m, file=sys.stderr))
    cal = calibrate.calibrated(pair, args.pair, progress=lambda m: print(f"calibrating: {m}", file=sys.stderr))
    print(f"`python -m bench predict {' '.join(argv or [])}`: {machine.cpu_model()}, {torch.get_num_threads()} "
          f"threads, torch {torch.__version__}, pair {args.pair}; calibration of {cal.when} "
          f"({cal.products_words()}); {len(prompts)} prompts x {args.repeats} seeds, "
          f"{args.max_new_tokens} new tokens\n")
    for t in temps:
        shapes = parse_shapes(args.shapes or DEFAULT_SHAPES[0.0 if t == 0 else None])
        samples = [sample(pair, cal, levels, t, seed, prompt, args.max_new_tokens)
                   for prompt in prompts for seed in range(args.repeats) for levels in shapes]
        print(f"T = {t}\n{report(samples, t)}\n", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
