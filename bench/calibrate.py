"""`python -m bench calibrate`: calibrate a pair on this machine and show what the chooser makes of it.

    python -m bench calibrate [--pair embedded-head] [--force] [--threads N] [--temperatures 0,0.8] [--top 8]
                              [--device cpu|cuda] [--measure-acceptance] [--ship-acceptance]

Prints the machine key (CPU model, torch build, threads), the target forward with every product method
(models/few_rows.PRODUCTS) at a few row counts and the plan chosen, the target forward's 1..32-row cost
curve before and after the plan, the draft and step costs, transformers' own one-token forward against the
calibrated one (is the target alone, the chooser's fallback, faster than plain decoding here?), the acceptance
by depth, and per temperature the predicted tokens per second of the best shapes against the target alone.
The calibration is cached (the path is printed); --force measures again.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import torch

from decoding.models.kinds import CHOICES, built_in_kind


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m bench calibrate", description=__doc__.split("\n")[0])
    ap.add_argument("--pair", default="embedded-head", type=built_in_kind, metavar=CHOICES)
    ap.add_argument("--device", default="cpu", help="cpu or cuda")
    ap.add_argument("--force", action="store_true", help="measure again even when a calibration is cached")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    ap.add_argument("--temperatures", default="0,0.8", help="comma-separated temperatures to choose for")
    ap.add_argument("--top", type=int, default=8, help="shapes listed per temperature")
    ap.add_argument("--measure-acceptance", action="store_true",
                    help="measure the pair's acceptance again (it is the pair's, not the machine's: shipped for "
                         "the built-in pairs, else measured once and kept)")
    ap.add_argument("--ship-acceptance", action="store_true",
                    help="(developers) measure it and write it into assets/speed/acceptance.json")
    return ap


def curve_table(cal) -> str:
    one_stock, one = cal.stock_costs.target_ms(1), cal.costs.target_ms(1)
    lines = ["| rows | stock ms | x 1 row | with plan ms | x 1 row (planned) | x stock 1 row | run as |",
             "|---|---|---|---|---|---|---|"]
    stock = dict(cal.stock_costs.target)  # measured at the plan's sizes only
    for n, after in cal.costs.target:
        before = f"{stock[n]:.1f} | {stock[n] / one_stock:.2f}" if n in stock else "- | -"
        lines.append(f"| {n} | {before} | {after:.1f} | {after / one:.2f} | {after / one_stock:.2f} | "
                     f"{cal.pad.get(n, n)} |")
    return "\n".join(lines)


def pad_trials_line(cal) -> str:
    """The paddings tried, as timed: 'padding (median ms unpadded -> run as more rows, alternately): 1 row as
    4: 35.6 -> 32.2 (kept); ...'."""
    words = [f"{n} row{'s' * (n > 1)} as {t.run_as}: {t.unpadded_ms:.1f} -> {t.padded_ms:.1f} "
             f"({'kept' if t.kept else 'not 5 % faster: unpadded'})" for n, t in sorted(cal.pad_trials.items())]
    return "padding (median ms unpadded -> run as more rows, timed alternately): " + "; ".join(words)


def product_table(cal) -> str:
    if not cal.products:
        return "(none to choose: the target is not the lean CPU one; the notes below say what runs it)"
    from decoding.speed.calibrate import DROP

    plan = cal.products_words()
    methods = list(next(iter(cal.products.values())))
    lines = ["| rows | " + " | ".join(f"{m} ms" for m in methods) + " | chosen |", "|---" * (len(methods) + 2) + "|"]
    for n, by in sorted(cal.products.items()):
        cells = " | ".join(f"{by[m]:.1f}" if m in by else "-" for m in methods)
        lines.append(f"| {n} | {cells} | {cal.plan.get(n, 'stock')} |")
    return "\n".join(lines) + f"\n\n('-': not timed, {DROP:g}x the fastest at a smaller size)\nplan: {plan}"


def choice_table(choice, top: int) -> str:
    alone = choice.alone.tokens_per_s
    lines = ["| shape | tokens/step | step ms | tokens/s | x target alone |", "|---|---|---|---|---|",
             f"| target alone | 1.00 | {choice.alone.step_ms:.1f} | {alone:.1f} | 1.00 |"]
    for p in choice.ranked[:top]:
        lines.append(f"| {p.label()} | {p.tokens_per_step:.2f} | {p.step_ms:.1f} | {p.tokens_per_s:.1f} | "
                     f"{p.tokens_per_s / alone:.2f} |")
    return "\n".join(lines)


def generate_forward_ms(pair, prompt: str, repeats: int = 5) -> float | None:
    """Median ms of transformers' own one-token forward on a cached context (what `generate()` runs per
    token), on the pair's target model; None for a pair without one. The calibration does not time it: the
    line it prints is the check that the target alone, the chooser's fallback, is not slower than plain
    decoding on this machine (`bench speed` measures it end to end)."""
    model = pair.target_model
    if model is None:
        return None
    from decoding.run import engine
    from decoding.run.config import DecodeConfig

    ids = torch.tensor([engine.encode(pair, DecodeConfig(), prompt)], device=model.device)  # [1, P]
    times = []
    with torch.inference_mode():
        out = model(input_ids=ids, use_cache=True)
        for _ in range(repeats + 1):  # the first call untimed
            token = out.logits[:, -1:].argmax(-1)  # [1, 1]
            _sync(model.device)
            start = time.perf_counter()
            out = model(input_ids=token, past_key_values=out.past_key_values, use_cache=True)
            _sync(model.device)  # a GPU returns before its kernels finish
            times.append(1000 * (time.perf_counter() - start))
    return statistics.median(times[1:])


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def generate_line(pair, cal) -> str:
    from decoding.speed.calibrate import prompts_for

    ms = generate_forward_ms(pair, prompts_for(cal.key["pair"])[0])
    if ms is None:
        return "transformers' own forward: none (this pair has no transformers target)"
    alone = cal.costs.target_ms(1)
    verdict = "faster" if alone < ms else "NOT faster: plain generate() may beat every choice here"
    return (f"transformers' own one-token forward (what generate() runs): {ms:.1f} ms; the calibrated one-row "
            f"forward: {alone:.1f} ms ({ms / alone:.2f}x: the target alone is {verdict})")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    temps = [float(t) for t in args.temperatures.split(",") if t.strip()]
    if args.threads:
        torch.set_num_threads(args.threads)
    from decoding.fastest import choice_from
    from decoding.speed import machine, pair_acceptance
    from decoding.speed.calibrate import calibrated, prompts_for
    from decoding.speed.plan import load_planned

    pair = load_planned(args.pair, device=args.device, progress=lambda m: print(m, file=sys.stderr))
    began = time.perf_counter()
    fresh = args.measure_acceptance or args.ship_acceptance
    cal = calibrated(pair, args.pair, force=args.force, fresh_acceptance=fresh,
                     progress=lambda m: print(f"calibrating ({time.perf_counter() - began:.1f} s): {m}",
                                              file=sys.stderr))
    if args.ship_acceptance:
        key, _ = pair_acceptance.key_and_prompts(pair, args.pair, prompts_for(args.pair))
        print(f"acceptance shipped in {pair_acceptance.ship(key, cal.acceptance)}", file=sys.stderr)
    picks = [choice_from(cal, args.pair, t) for t in temps]
    key = cal.key
    cached = "NOT cached (the cores were shared: see below)" if cal.shared else f"cache {machine.cache_file(key)}"
    print(f"`python -m bench calibrate {' '.join(argv or [])}`: {key['model']} ({key['device']}), torch {key['torch']} "
          f"(MKL {key['mkl']}), {key['threads']} threads, pair {key['pair']}; calibrated {cal.when} in "
          f"{cal.seconds:.1f} s; {cached}\n")
    print("target forward by product method (every product of the lean target), median ms:\n"
          + product_table(cal) + "\n")
    print("target forward, N rows on a cached context (median ms):\n" + curve_table(cal) + "\n")
    if cal.pad_trials:
        print(pad_trials_line(cal) + "\n")
    print("\n".join(cal.notes) + "\n")
    draft = ", ".join(f"{n} rows {ms:.1f} ms" for n, ms in cal.costs.draft)
    print(f"draft, one level: {draft}; a step's first level {cal.costs.draft_first:+.1f} ms (the draft catching "
          f"up); the rest of a step: {cal.costs.overhead:.1f} ms + "
          f"{cal.costs.overhead_per_row:.2f} ms a row")
    print(generate_line(pair, cal) + "\n")
    for pick, t in zip(picks, temps, strict=True):
        table = cal.table(t)
        rates = "; ".join(f"k={k}: " + " ".join(f"{a:.2f}" for a in v) for k, v in sorted(table.rates.items()))
        print(f"T = {t}: acceptance by depth ({table.nodes} nodes) {rates}")
        print(f"choice: {pick.choice.why()}\n" + choice_table(pick.choice, args.top) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
