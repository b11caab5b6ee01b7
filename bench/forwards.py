"""Benchmark (not a test): what one forward of each part of a speculative step costs, old way vs new way.

    python -m bench forwards [--rounds 5] [--calls 10] [--threads 2] [--rows 5,22]

On the embedded pair, from a 200-token cached context, interleaved round by round (so a busy machine
slows every variant alike), median milliseconds per call:
- target, one token (what plain `generate()` pays per token), transformers vs the lean float32 target
  (lean_target.py);
- target verify of N rows (N causal rows: a tree mask costs nothing, docs/speed.md), stock
  `F.linear` products vs MKL-packed products (packed_linear.py) vs the lean target (packed);
- draft, one token: transformers' int8 self-draft (embedded/self_draft.py) vs the lean int8 draft
  (lean_draft.py), full head and a head over the first 16384 ids.
The ratio column divides by the one-token target forward.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from contextlib import nullcontext

import torch

CONTEXT = 200


def _cached_call(model, rows: int, packed: bool) -> Callable[[], None]:
    """A call that feeds `rows` new tokens (a chain, causal) on a cached context, then drops them again."""
    from decoding.models.hf_treelm import HFTreeLM
    from decoding.models.lean.packed_linear import packed_products
    lm = HFTreeLM(model)
    lm.start(torch.randint(10, 40000, (CONTEXT,), generator=torch.Generator().manual_seed(0)).tolist())
    with torch.inference_mode():  # the root, cached once
        model(input_ids=torch.tensor([[lm.context[-1]]]), past_key_values=lm.cache, use_cache=True)
    ids = torch.randint(10, 40000, (1, rows), generator=torch.Generator().manual_seed(1))  # [1, rows]

    def call() -> None:
        with torch.inference_mode(), packed_products() if packed else nullcontext():
            model(input_ids=ids, past_key_values=lm.cache, use_cache=True, logits_to_keep=rows)
        for layer in lm.cache.layers:  # back to the context (a prefix: no copy for the lean cache)
            layer.keys, layer.values = layer.keys[..., :CONTEXT, :], layer.values[..., :CONTEXT, :]

    return call


def variants(rows: list[int]) -> dict[str, Callable[[], None]]:
    from decoding.models.embedded.self_draft import transformers_self_draft
    from decoding.models.lean import int8_draft as lean_draft
    from decoding.models.lean import target as lean_target
    from decoding.speed.plan import load_planned
    target = load_planned("embedded", device="cpu").target_model
    hf_draft = transformers_self_draft(target)
    lean = lean_target.LeanFloatLlama(target)
    calls = {"target, 1 token": _cached_call(target, 1, packed=False),
             "target, 1 token, lean": _cached_call(lean, 1, packed=False)}
    for n in rows:
        calls[f"target verify, {n} rows, F.linear"] = _cached_call(target, n, packed=False)
        calls[f"target verify, {n} rows, packed"] = _cached_call(target, n, packed=True)
        calls[f"target verify, {n} rows, lean packed"] = _cached_call(lean, n, packed=True)
    calls["draft 1 token, transformers int8"] = _cached_call(hf_draft, 1, packed=False)
    calls["draft 1 token, lean int8"] = _cached_call(lean_draft.LeanInt8Llama(target), 1, packed=False)
    return calls


def measure(calls: dict[str, Callable[[], None]], rounds: int, per_round: int) -> dict[str, list[float]]:
    """name -> milliseconds of every timed call; each round runs every variant `per_round` times in turn."""
    times: dict[str, list[float]] = {name: [] for name in calls}
    for call in calls.values():
        call()  # warm-up (and the packing of packed variants)
    for _ in range(rounds):
        for name, call in calls.items():
            for _ in range(per_round):
                start = time.perf_counter()
                call()
                times[name].append(1000 * (time.perf_counter() - start))
    return times


def report(times: dict[str, list[float]]) -> str:
    base = statistics.median(times["target, 1 token"])
    lines = ["| forward | median ms | p10-p90 ms | x target 1 token |", "|---|---|---|---|"]
    for name, ms in times.items():
        deciles = statistics.quantiles(ms, n=10)
        lines.append(f"| {name} | {statistics.median(ms):.1f} | {deciles[0]:.1f}-{deciles[-1]:.1f} | "
                     f"{statistics.median(ms) / base:.2f} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench forwards")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=10, help="calls per variant per round")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (0: torch's default)")
    parser.add_argument("--rows", default="5,22", help="tree sizes of the verify forward (5: chain of 4; 22: 3,2,2)")
    args = parser.parse_args(argv)
    rows = [int(r) for r in args.rows.split(",") if r.strip()]
    if args.rounds < 1 or args.calls < 2 or not rows or min(rows) < 1:
        parser.error("--rounds >= 1, --calls >= 2 and --rows positive integers")
    if args.threads:
        torch.set_num_threads(args.threads)
    times = measure(variants(rows), args.rounds, args.calls)
    print(f"`python -m bench forwards {' '.join(argv)}` ({torch.get_num_threads()} threads, "
          f"{CONTEXT}-token cached context, {args.rounds} rounds x {args.calls} calls, interleaved)\n")
    print(report(times))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
