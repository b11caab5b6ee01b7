"""`python -m decoding certify`: exit 0 certified lossless, 3 not lossless, 2 bad input (one line on stderr).

    python -m decoding certify (--verifier KEY | --verifier-file PATH | --engine NAME) [--language FILE] [--random N]
                               [--tree 2,2 | --k K] [--seed S] [--json PATH] [--fuzzy-threshold T]
                               [--cactus-delta D]

Without --language and --random, every preset of assets/languages is used. --json writes the
contract {"verifier", "lossless", "max_tv", "cases", "worst_case", "expected_tokens", "expected_accepted"}.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from decoding.lab import certify as certify_mod
from decoding.lab import language as lang
from decoding.lab.custom import load_custom
from decoding.run.config import parse_branching
from decoding.verify.entry import Verifier

EXIT_LOSSLESS, EXIT_BAD_INPUT, EXIT_LOSSY = 0, 2, 3


def add_flags(p: argparse.ArgumentParser) -> None:
    who = p.add_mutually_exclusive_group(required=True)
    who.add_argument("--verifier", help="a registry key (see `generate --help`)")
    who.add_argument("--verifier-file", help="a local Python file defining LAW, verify, conditional (README)")
    who.add_argument("--engine", default=None, metavar="NAME",
                     help="an engine preset (see `generate --help`): its verifier, drafting with the engine's law, "
                     "on its shape unless --tree / --k say otherwise")
    p.add_argument("--language", default=None, help="a tiny language JSON file (default: every preset)")
    p.add_argument("--random", type=int, default=0, metavar="N", help="also N seeded random languages")
    shape = p.add_mutually_exclusive_group()
    shape.add_argument("--tree", default=None, help="candidates per node at each depth, e.g. 2,2 or 1,1,1")
    shape.add_argument("--k", type=int, default=None, help="one node with K candidates (same as --tree K)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random languages and the Monte-Carlo check")
    p.add_argument("--json", default=None, help="write the certificate JSON here")
    p.add_argument("--fuzzy-threshold", type=float, default=None, metavar="T",
                   help="--verifier fuzzy: its JS threshold in nats (default: the rule's, 0.4)")
    p.add_argument("--cactus-delta", type=float, default=None, metavar="D",
                   help="--verifier cactus: each candidate's divergence budget (default: the rule's, 0.01)")


def resolve_entry(args: argparse.Namespace) -> Verifier:
    if args.verifier_file:
        return load_custom(args.verifier_file)
    if getattr(args, "engine", None):
        from decoding.run.engine_presets import get

        return get(args.engine).entry()
    from decoding.verify.registry import lookup

    entry = with_threshold(lookup(args.verifier), args.fuzzy_threshold)
    return with_delta(entry, getattr(args, "cactus_delta", None))


def with_threshold(entry: Verifier, threshold: float | None) -> Verifier:
    """The entry with --fuzzy-threshold applied, validated as DecodeConfig validates it (one line when wrong)."""
    if threshold is None:
        return entry
    from decoding.run.config import DecodeConfig

    if entry.name != "fuzzy":
        raise ValueError(f"--fuzzy-threshold applies to --verifier fuzzy only, not {entry.name!r}")
    return DecodeConfig(verifier="fuzzy", fuzzy_threshold=threshold).entry()


def with_delta(entry: Verifier, delta: float | None) -> Verifier:
    """The entry with --cactus-delta applied, validated as DecodeConfig validates it (one line when wrong)."""
    if delta is None:
        return entry
    from decoding.run.config import DecodeConfig

    if entry.name != "cactus":
        raise ValueError(f"--cactus-delta applies to --verifier cactus only, not {entry.name!r}")
    return DecodeConfig(verifier="cactus", branching=(1,), cactus_delta=delta).entry()


def resolve_shape(args: argparse.Namespace, entry: Verifier) -> tuple[int, ...]:
    if args.k is not None:
        return parse_branching(str(args.k), "--k")
    if args.tree:
        return parse_branching(args.tree, "--tree")
    if getattr(args, "engine", None):
        from decoding.run.engine_presets import get

        return tuple(get(args.engine).shape.widths)
    return certify_mod.default_shape(entry)


def resolve_languages(args: argparse.Namespace, shape: tuple[int, ...], law: str) -> list[lang.TinyLanguage]:
    if args.random < 0:
        raise ValueError(f"--random must be >= 0, got {args.random}")
    chosen = [lang.load(args.language)] if args.language else []
    chosen += certify_mod.random_languages(args.random, args.seed, shape, law)
    return chosen or [lang.load(path) for path in lang.presets().values()]


def run(args: argparse.Namespace) -> int:
    """Certify and report; ValueError (bad input) propagates to main's one-line handler (exit 2)."""
    entry = resolve_entry(args)
    shape = resolve_shape(args, entry)
    languages = resolve_languages(args, shape, str(entry.law))
    cert = certify_mod.certify(entry, languages, shape, seed=args.seed)
    for note in (n for language in languages for n in language.notes):
        print(f"note: {note}")
    print("\n".join(certify_mod.summary_lines(cert)))
    if args.json:
        Path(args.json).write_text(json.dumps(cert.to_json(), indent=2), encoding="utf-8")
    return EXIT_LOSSLESS if cert.lossless else EXIT_LOSSY
