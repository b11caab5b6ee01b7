"""The command line: `python -m decoding generate|compare|certify|museum|saguaro|engine-trace ...`.

`bench ...` and `train-head ...` are handed to the top-level `bench` package (`python -m bench ...`, where
they moved; handoff.py says why there is no import). User errors (bad flags, bad prompt, models that cannot
load) print one line to stderr and exit 2, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from decoding.cli.handoff import TEACHING, hand_to_bench, hand_to_teaching
from decoding.models.kinds import CHOICES, built_in_kind
from decoding.run.config import Branching, DecodeConfig, Sequences, parse_branching

# subcommand -> the argv `python -m bench` gets (the rest of the command line follows)
HANDED_TO_BENCH = {"bench": [], "train-head": ["train-head"]}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m decoding", description="specscope decoding CLI")
    sub = parser.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("generate", help="run speculative decoding and write a trace",
                         formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    _add_generate_flags(gen)
    from decoding.cli import compare as compare_cli

    cmp = sub.add_parser("compare", help="several verifiers on the same steps, one target forward each")
    compare_cli.add_flags(cmp)
    cert = sub.add_parser("certify", help="certify a verifier exactly on tiny languages (exit 0 lossless, 3 not)")
    from decoding.cli.certify import add_flags as add_certify_flags

    add_certify_flags(cert)
    mus = sub.add_parser("museum", help="real speculative-decoding bugs, each reproduced exactly (exit 0 all hold)")
    from decoding.cli import museum as museum_cli

    museum_cli.add_flags(mus)
    sag = sub.add_parser("saguaro", help="Saguaro sampling (SSD) on tiny languages: exact cache-hit, certified "
                         "against q' (exit 0 lossless), beside plain SD and the raw-q mistake")
    from decoding.cli import saguaro as saguaro_cli

    saguaro_cli.add_flags(sag)
    eng = sub.add_parser("engine-trace", help="an engine's speculative-decoding record (vLLM, SGLang, llama.cpp): "
                         "per-position acceptance, histogram, cliff, beside the exact expectation; or --export a run")
    from decoding.cli import engine_trace as engine_trace_cli

    engine_trace_cli.add_flags(eng)
    sub.add_parser("train-head", help="train the embedded-head pair's draft head: `python -m bench train-head`",
                   add_help=False)
    sub.add_parser("bench", help="benchmarks (not tests): `python -m bench WHICH ...`", add_help=False)
    sub.add_parser("export-html", help="a trace as one self-contained HTML replay file: export-html TRACE -o FILE",
                   add_help=False)
    sub.add_parser("lesson", help="a static teaching site from the teaching examples: lesson -o DIR", add_help=False)
    return parser


def _add_generate_flags(p: argparse.ArgumentParser) -> None:
    d = DecodeConfig()
    p.add_argument("--prompt", required=True, help="the prompt text")
    p.add_argument("--pair", default="embedded",
                   type=built_in_kind, metavar=CHOICES,
                   help="built-in model pair (ignored when --target is given)")
    p.add_argument("--target", default=None, help="target model: hub id or local folder")
    p.add_argument("--draft", default=None, help="draft model: hub id or local folder (needs --target)")
    p.add_argument("--device", default="auto", help="auto (cuda, then mps, then cpu), cpu, cuda, mps")
    p.add_argument("--verifier", default=d.verifier, help=_verifier_help())
    p.add_argument("--tree", default=d.shape_text(),
                   help="children per node at each depth, e.g. 3,2,2 or a chain 1,1,1,1")
    p.add_argument("--sequences", type=int, default=0, help="K independent draft sequences (instead of --tree)")
    p.add_argument("--depth", type=int, default=4, help="length of each sequence with --sequences")
    p.add_argument("--temperature", type=float, default=d.temperature, help="0 = greedy")
    p.add_argument("--top-k", type=int, default=d.top_k, help="0 = off")
    p.add_argument("--top-p", type=float, default=d.top_p, help="1 = off")
    p.add_argument("--seed", type=int, default=d.seed, help="seed of every random draw")
    p.add_argument("--max-new-tokens", type=int, default=d.max_new_tokens, help="stop after this many tokens")
    p.add_argument("--chat", action=argparse.BooleanOptionalAction, default=True,
                   help="wrap the prompt in the model's chat template when it has one")
    p.add_argument("--json", default=None, help="write the trace JSON to this path")
    p.add_argument("--fuzzy-threshold", type=float, default=d.fuzzy_threshold, metavar="T",
                   help=f"--verifier fuzzy: accept when JS(p, q) <= T nats (default {d.fuzzy_threshold}; "
                   "0 = only where q = p, ln 2 = 0.693 accepts every draft)")
    p.add_argument("--cactus-delta", type=float, default=d.cactus_delta, metavar="D",
                   help=f"--verifier cactus: each candidate's divergence budget delta (default {d.cactus_delta}; "
                   "0 = plain SD; larger accepts more and moves the output further from p)")
    p.add_argument("--min-confidence", type=float, default=d.min_confidence, metavar="C",
                   help="a drafted node gets children only where the draft's own probability of its path (the "
                   "product of q down it; at temperature 0 the draft's untempered q) is at least C: deep where the "
                   "draft is sure, short where it is not (EAGLE-2's dynamic depth; lossless with every lossless "
                   "verifier); 0 = off, the whole --tree every step")
    p.add_argument("--engine", default=None, metavar="NAME", help=engine_help())
    p.add_argument("--also-pair", default=None, type=built_in_kind, metavar=CHOICES,
                   help="run the same config and seed again with this second built-in pair and say whether the "
                   "texts match (with gls and one draft per node they do: the text does not depend on the draft)")


def _verifier_help() -> str:
    from decoding.verify.registry import VERIFIERS

    keys = ", ".join(k if e.lossless else f"{k} (lossy)" for k, e in VERIFIERS.items())
    return f"verifier key: {keys}"


def engine_help() -> str:
    from decoding.run.engine_presets import PRESETS

    return ("an engine's verification mode: sets the verifier and the draft shape (and so the candidate law) as "
            f"that engine does, over --verifier and --tree; one of: {', '.join(PRESETS)}")


def config_from_args(args: argparse.Namespace) -> DecodeConfig:
    config = _flag_config(args)
    if getattr(args, "engine", None):
        from decoding.run.engine_presets import get

        return get(args.engine).config(config)
    return config


def _flag_config(args: argparse.Namespace) -> DecodeConfig:
    shape = Sequences(args.sequences, args.depth) if args.sequences else Branching(parse_branching(args.tree, "--tree"))
    return DecodeConfig(verifier=args.verifier, shape=shape, temperature=args.temperature, top_k=args.top_k,
                        top_p=args.top_p, seed=args.seed, max_new_tokens=args.max_new_tokens, chat=args.chat,
                        fuzzy_threshold=args.fuzzy_threshold, cactus_delta=args.cactus_delta,
                        min_confidence=getattr(args, "min_confidence", 0.0))


def run_generate(args: argparse.Namespace) -> int:
    from decoding.run import engine
    from decoding.run.schema import trace_to_json
    from decoding.speed.plan import load_planned

    config = config_from_args(args)  # validate before loading any model
    if args.draft and not args.target:
        raise ValueError("--draft needs --target")
    kind = "custom" if args.target else args.pair
    pair = load_planned(kind, target=args.target, draft=args.draft, device=args.device)
    trace = engine.generate(pair, config, args.prompt)
    print(trace.text)
    _print_summary(config, trace.summary, kind if args.also_pair else None)
    if args.also_pair:
        other = engine.generate(load_planned(args.also_pair, device=args.device), config, args.prompt)
        print(f"--- {args.also_pair} (same config, same seed) ---")
        print(other.text)
        _print_summary(config, other.summary, args.also_pair)
        same = other.generated_ids == trace.generated_ids
        print(f"the two pairs emitted {'the same' if same else 'different'} text", file=sys.stderr)
    if args.json:
        Path(args.json).write_text(trace_to_json(trace), encoding="utf-8")
        print(f"trace written to {args.json}", file=sys.stderr)
    return 0


def _print_summary(config: DecodeConfig, s, kind: str | None) -> None:
    """The run's one-line summary on stderr; `kind` names the pair when two pairs ran."""
    pair = f"{kind} | " if kind else ""
    floor = f", min confidence {config.min_confidence:g}" if config.min_confidence else ""
    print(
        f"[{pair}{config.verifier} | {config.shape_text()}{floor} | T={config.temperature}] {s.new_tokens} tokens in "
        f"{s.steps} steps, {s.target_forwards} target forwards ({s.tokens_per_forward:.2f} tokens/forward), "
        f"{s.seconds:.2f} s, stop: {s.stop_reason}",
        file=sys.stderr,
    )


def main(argv: list[str]) -> int:
    if argv[:1] and argv[0] in HANDED_TO_BENCH:  # their own flags, parsed by bench
        return hand_to_bench(HANDED_TO_BENCH[argv[0]] + argv[1:])
    if argv[:1] and argv[0] in TEACHING:  # drawn by viz in the page's words: ui/teaching_cli.py
        return hand_to_teaching(argv)
    args = build_parser().parse_args(argv)
    return guarded(lambda: _dispatch(args))


def _dispatch(args) -> int:
    if args.command == "generate":
        return run_generate(args)
    if args.command == "compare":
        from decoding.cli import compare as compare_cli

        return compare_cli.run(args)
    if args.command == "certify":
        from decoding.cli.certify import run as run_certify

        return run_certify(args)
    if args.command == "museum":
        from decoding.cli import museum as museum_cli

        return museum_cli.run(args)
    if args.command == "saguaro":
        from decoding.cli import saguaro as saguaro_cli

        return saguaro_cli.run(args)
    if args.command == "engine-trace":
        from decoding.cli import engine_trace as engine_trace_cli

        return engine_trace_cli.run(args)
    raise AssertionError(f"unhandled command {args.command!r}")


def guarded(command: Callable[[], int | None]) -> int:
    """Run a command: bad input (ValueError, a missing file, an OS error) is one line on stderr and exit 2, never
    a traceback; Ctrl-C exits 130. `python -m bench` runs its subcommands through it too."""
    try:
        return int(command() or 0)
    except (ValueError, FileNotFoundError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
