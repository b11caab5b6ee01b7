"""`python -m decoding export-html TRACE -o FILE` and `python -m decoding lesson -o DIR`: teaching material
that needs no server (decoding/cli hands them over by name, decoding/cli/handoff.py says why).

Bad input (a missing or malformed trace, an output path that cannot be written) is one line on stderr and
exit 2, through the CLI's own `guarded`.
"""

from __future__ import annotations

import argparse
import sys

from decoding.cli.main import guarded

COMMANDS = ("export-html", "lesson")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m decoding", description="specscope: teaching material")
    sub = parser.add_subparsers(dest="command", required=True)
    export = sub.add_parser("export-html", help="a trace as one self-contained HTML replay file (no server)",
                            formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    export.add_argument("trace", help="a trace JSON file (python -m decoding generate --json, or the app's export)")
    export.add_argument("-o", "--output", required=True, help="the HTML file to write")
    lesson = sub.add_parser("lesson", help="a static site: the teaching examples, each with its replay embedded",
                            formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    lesson.add_argument("-o", "--output", required=True, help="the folder to write index.html and the replays into")
    return parser


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    return guarded(lambda: _dispatch(args))


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "lesson":
        from ui import lesson

        index = lesson.build(args.output)
        print(f"lesson written to {index} (open it from disk, or upload the folder as a static Space)",
              file=sys.stderr)
        return 0
    from ui import replay_file

    out = replay_file.export(args.trace, args.output)
    print(f"replay written to {out} ({out.stat().st_size / 1e6:.2f} MB)", file=sys.stderr)
    return 0
