"""`python -m decoding museum [--json FILE] [--only KEY]`: the museum of real speculative-decoding bugs, each
reproduced exactly (decoding/lab/museum.py, docs/verifiers.md §20). Exit 0 when every exhibit reproduces its
published number (or says why it cannot) and its fix certifies lossless; 3 otherwise; 2 on bad input."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

EXIT_OK, EXIT_FAILED = 0, 3


def add_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", default=None, metavar="FILE", help="write every exhibit's report here")
    p.add_argument("--only", default=None, metavar="KEY", help="one exhibit (its key, see the listing)")


def run(args: argparse.Namespace) -> int:
    from decoding.lab import museum

    exhibits = [museum.get(args.only)] if args.only else list(museum.EXHIBITS)
    reports = [museum.report(exhibit) for exhibit in exhibits]
    problems = [line for rep in reports for line in museum.check(rep)]
    for rep in reports:
        print("\n".join(lines(rep)))
    print(f"{len(reports)} exhibit(s); " + ("every published number reproduced or explained, every fix certified "
                                            "lossless" if not problems else f"{len(problems)} problem(s)"))
    for line in problems:
        print(f"problem: {line}")
    if args.json:
        Path(args.json).write_text(json.dumps({"exhibits": [rep.to_json() for rep in reports]}, indent=2),
                                   encoding="utf-8")
    return EXIT_FAILED if problems else EXIT_OK


def lines(rep) -> list[str]:
    """One exhibit in a few lines: the thread, the number published and reproduced, the TV, the fix."""
    links = ", ".join(url for _, url in rep.links)
    if rep.reproduces is None:
        got = f"not recomputed: {rep.why_not}"
    elif rep.refusal:
        got = f"reproduced: {rep.refusal}"
    else:
        got = f"{'reproduced' if rep.reproduces else 'NOT reproduced'}: {_numbers(rep.reproduced_value)}"
        if rep.why_not:
            got += f" ({rep.why_not})"
    tv = "no law (refused)" if rep.tv is None else f"{rep.tv:.4f}"
    fix = f"{rep.fix}: {'certified lossless' if rep.fix_lossless else 'NOT lossless'} (max TV {rep.fix_max_tv:.1e})"
    return [f"[{rep.key}] {rep.project}: {rep.title}",
            f"  threads: {links}",
            f"  status: {rep.status}; buggy rule: {rep.file}",
            f"  published: {rep.published}",
            f"  specscope: {got}",
            f"  exact TV of the bug at the toy node: {tv}"
            + ("" if rep.acceptance is None else f"; its acceptance {rep.acceptance:.4f}"),
            f"  fix: {fix}"]


def _numbers(values) -> str:
    return "[" + ", ".join(f"{v:.4f}" for v in values) + "]"
