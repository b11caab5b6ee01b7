"""Benchmark (not a test): embedded-pair load times and milliseconds per step of a 3,2,2 tree.

    python -m bench engine [--steps 12] [--repeats 3] [--skip-load]

Load times are measured in fresh subprocesses: "first" converts the GGUF into an empty cache folder,
"cached" loads the same folder again. Step times come from the StepRecords of several runs; "record"
is the rest of the step (node records, exact acceptance, expected tokens).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

LOAD_SNIPPET = (
    "import time; t=time.perf_counter(); from decoding.speed.plan import load_planned; "
    "load_planned('embedded', progress=lambda m: None); print(time.perf_counter()-t)"
)
PROMPTS = ["Why is the sky blue?", "Write a haiku about autumn leaves.", "def fibonacci(n):"]


def load_seconds(cache_dir: str) -> float:
    env = dict(os.environ, SPECSCOPE_CACHE=cache_dir)
    out = subprocess.run([sys.executable, "-c", LOAD_SNIPPET], env=env, capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def bench_loads() -> None:
    with tempfile.TemporaryDirectory() as cache:
        first = load_seconds(cache)
        cached = [load_seconds(cache) for _ in range(2)]
    print(f"embedded pair load: first (GGUF -> safetensors cache) {first:.1f} s; "
          f"cached {min(cached):.1f} s (best of {len(cached)}, fresh processes)")


def bench_steps(steps: int, repeats: int) -> None:
    from decoding.run import engine
    from decoding.run.config import DecodeConfig
    from decoding.speed.plan import load_planned

    pair = load_planned("embedded", progress=lambda m: None)
    rows = []
    for r in range(repeats):
        for prompt in PROMPTS:
            config = DecodeConfig(verifier="rrs_wor", branching=(3, 2, 2), temperature=0.8, seed=r,
                                  max_new_tokens=4 * steps)
            run = engine.start(pair, config, prompt)
            for _ in range(steps):
                t0 = time.perf_counter()
                rec = run.step()
                if rec is None:
                    break
                rows.append((rec.draft_ms, rec.target_ms, rec.verify_ms, (time.perf_counter() - t0) * 1e3,
                             len(rec.emitted), rec.draft_forwards))
    med = [statistics.median(c) for c in zip(*rows, strict=True)]
    print(f"3,2,2 tree, rrs_wor, T=0.8, {len(rows)} steps ({repeats} repeats x {len(PROMPTS)} prompts), medians:")
    print(f"  draft {med[0]:.1f} ms ({med[5]:.0f} forwards) | target verify forward {med[1]:.1f} ms | "
          f"verification walk {med[2]:.1f} ms | record+theory {med[3] - med[0] - med[1] - med[2]:.1f} ms | "
          f"step total {med[3]:.1f} ms | {statistics.mean(r[4] for r in rows):.2f} tokens/step")
    base = engine.baseline(pair, pair.encode_prompt(PROMPTS[0], True), 32)
    print(f"  plain target decoding: {1e3 * base.seconds / max(1, len(base.ids)):.1f} ms/token")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench engine")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-load", action="store_true", help="skip the load-time measurement")
    args = parser.parse_args(argv)
    if not args.skip_load:
        bench_loads()
    bench_steps(args.steps, args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
