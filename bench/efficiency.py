"""Block efficiency (tokens per target forward) of verifier pairs on the same shapes, over seeds.

`python -m bench efficiency` compares, on the embedded pair by default: block vs sd on a
chain of 4, traversal vs rrs_wor on a 2,2,2 tree, at T = 0.8 and 1.0, 8 seeds, 24 new tokens per
run. Prints the mean over seeds with a 95 % t confidence interval, and the paired difference (same
seed, same prompt). A benchmark, not a test: numbers move with the pair and the prompt.
"""

from __future__ import annotations

import argparse
import math
import statistics

from decoding.run import engine
from decoding.run.config import DecodeConfig
from decoding.speed.plan import load_planned

T_975 = {2: 12.706, 3: 4.303, 4: 3.182, 5: 2.776, 6: 2.571, 7: 2.447, 8: 2.365, 9: 2.306, 10: 2.262}
COMPARISONS = (("block", "sd", (1, 1, 1, 1)), ("traversal", "rrs_wor", (2, 2, 2)))


def parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m bench efficiency", description=__doc__.split("\n")[0])
    ap.add_argument("--pair", default="embedded")
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--max-new-tokens", type=int, default=24)
    ap.add_argument("--temperatures", default="0.8,1.0")
    ap.add_argument("--prompt", default="Write a short story about a robot who learns to paint.")
    return ap.parse_args(argv)


def efficiency(pair, key: str, shape: tuple[int, ...], temperature: float, seed: int, args) -> float:
    config = DecodeConfig(verifier=key, branching=shape, temperature=temperature, seed=seed,
                          max_new_tokens=args.max_new_tokens, record=False)
    run = engine.start(pair, config, args.prompt)
    steps = sum(1 for _ in run)  # one target forward per step (record=False keeps no StepRecords)
    return len(run.state.generated_ids) / steps


def mean_ci(xs: list[float]) -> tuple[float, float]:
    """(mean, half-width of the 95 % t interval)."""
    n = len(xs)
    if n < 2:
        return xs[0], math.inf
    return statistics.fmean(xs), T_975.get(n, 1.96) * statistics.stdev(xs) / math.sqrt(n)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv or [])
    pair = load_planned(args.pair)
    print(f"block efficiency (tokens per target forward), pair {args.pair}, {args.seeds} seeds, "
          f"{args.max_new_tokens} new tokens per run; mean ± 95 % CI")
    for temperature in (float(t) for t in args.temperatures.split(",")):
        for new, old, shape in COMPARISONS:
            a = [efficiency(pair, new, shape, temperature, s, args) for s in range(args.seeds)]
            b = [efficiency(pair, old, shape, temperature, s, args) for s in range(args.seeds)]
            (ma, ha), (mb, hb) = mean_ci(a), mean_ci(b)
            md, hd = mean_ci([x - y for x, y in zip(a, b, strict=True)])
            shape_text = ",".join(map(str, shape))
            print(f"T={temperature} shape {shape_text}: {new} {ma:.3f} ± {ha:.3f} | {old} {mb:.3f} ± {hb:.3f} "
                  f"| paired diff {md:+.3f} ± {hd:.3f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
