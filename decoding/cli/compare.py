"""`python -m decoding compare`: several verifiers on the same steps (one forward each), or whole runs."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from decoding.run.config import DecodeConfig, parse_branching


def add_flags(p: argparse.ArgumentParser) -> None:
    d = DecodeConfig()
    p.add_argument("--prompt", required=True, help="the prompt text")
    p.add_argument("--verifiers", default=None, help="comma-separated keys, e.g. rrs,rrs_wor,spectr,pointmass "
                   "(needed unless --engine names the run verifier)")
    p.add_argument("--engine", default=None, metavar="NAME",
                   help="an engine preset (see `generate --help`): its verifier runs the step, its shape is the tree")
    p.add_argument("--run-verifier", default=None, help="the verifier whose verdict is emitted (default: the first)")
    p.add_argument("--pair", default="embedded", choices=["embedded", "lookup", "toy"], help="built-in model pair")
    p.add_argument("--tree", default=",".join(map(str, d.branching)), help="children per node at each depth")
    p.add_argument("--sequences", type=int, default=0, help="K independent draft sequences (instead of --tree)")
    p.add_argument("--depth", type=int, default=4, help="length of each sequence with --sequences")
    p.add_argument("--temperature", type=float, default=d.temperature, help="0 = greedy")
    p.add_argument("--steps", type=int, default=4, help="compared steps (per-step mode)")
    p.add_argument("--seed", type=int, default=d.seed, help="seed (first seed with --runs)")
    p.add_argument("--mc-draws", type=int, default=400, help="Monte-Carlo walks per verifier and step")
    p.add_argument("--runs", action="store_true", help="run-level comparison: each verifier decodes alone")
    p.add_argument("--seeds", type=int, default=8, help="seeds for --runs")
    p.add_argument("--max-new-tokens", type=int, default=32, help="tokens per run with --runs")
    p.add_argument("--chat", action=argparse.BooleanOptionalAction, default=True, help="chat template")
    p.add_argument("--json", default=None, help="write the JSON here")


def _config(args: argparse.Namespace, run_key: str) -> DecodeConfig:
    if args.steps < 1 or args.seeds < 1 or args.mc_draws < 0:
        raise ValueError("--steps and --seeds must be >= 1 and --mc-draws >= 0")
    shape = (dict(sequences=args.sequences, depth=args.depth) if args.sequences
             else dict(branching=parse_branching(args.tree, "--tree")))
    return DecodeConfig(verifier=run_key, temperature=args.temperature, seed=args.seed, chat=args.chat,
                        max_new_tokens=min(1024, args.steps * 64) if not args.runs else args.max_new_tokens, **shape)


def run(args: argparse.Namespace) -> int:
    from decoding.compare import contract, runs, selection, session
    from decoding.speed.plan import load_planned

    _apply_engine(args)
    keys = selection.parse_keys(args.verifiers)
    run_key = args.run_verifier or keys[0]
    if run_key not in keys:
        keys = [run_key, *keys]
    config = _config(args, run_key)
    selection.check_selection(keys, config)  # refuse before loading a model
    pair = load_planned(args.pair)
    if args.runs:
        seeds = [args.seed + i for i in range(args.seeds)]
        results = runs.compare_runs(pair, config, args.prompt, keys, seeds, lambda m: print(m, file=sys.stderr))
        _print_runs(results)
        body = {"steps": [], "runs": runs.runs_json(results)}
    else:
        cmp = session.start(pair, config, args.prompt, keys, mc_draws=args.mc_draws)
        records = [r for _, r in zip(range(args.steps), cmp, strict=False)]
        _print_steps(records)
        body = contract.steps_json(records)
    if args.json:
        Path(args.json).write_text(json.dumps(body, allow_nan=True), encoding="utf-8")
        print(f"JSON written to {args.json}", file=sys.stderr)
    return 0


def _apply_engine(args: argparse.Namespace) -> None:
    """--engine: the preset's verifier runs the step (first in --verifiers) and its shape is the tree; without
    it --verifiers is required (one line when missing)."""
    if not args.engine:
        if not args.verifiers:
            raise ValueError("give --verifiers (e.g. rrs,rrs_wor) or --engine NAME")
        return
    from decoding.run.config import Sequences
    from decoding.run.engine_presets import get

    preset = get(args.engine)
    others = [k.strip() for k in (args.verifiers or "").split(",") if k.strip() and k.strip() != preset.verifier]
    args.verifiers = ",".join([preset.verifier, *others])
    args.run_verifier = preset.verifier
    if isinstance(preset.shape, Sequences):
        args.sequences, args.depth = preset.shape.k, preset.shape.depth
    else:
        args.sequences, args.tree = 0, preset.shape.text()


def _print_steps(records) -> None:
    for r in records:
        parts = [f"{v.key}: L={len(v.accepted_path) - 1} E[tok]={v.expected_tokens:.3f}" for v in r.compare.verdicts]
        print(f"step {r.index} ({r.target_forwards} target forward, forest {r.compare.forest_nodes} nodes): "
              + "; ".join(parts))


def _print_runs(results) -> None:
    print(f"{'verifier':<10} {'tokens/forward':>14} {'95% CI':>17} {'E[tokens]/step':>14}  acceptance by depth")
    for r in results:
        depth = " ".join(f"{a:.2f}" for a in r.acceptance_by_depth)
        interval = f"[{r.ci_low:6.3f}, {r.ci_high:6.3f}]" if math.isfinite(r.ci_low) else "(one seed: none)"
        print(f"{r.key:<10} {r.mean:>14.3f} {interval:>17} {r.expected_tokens:>14.3f}  {depth}")
