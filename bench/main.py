"""The command line of the speed wing: `python -m bench WHICH [flags]` (`./specscope bench WHICH ...`).

Each subcommand is a module with `main(argv) -> int` that parses its own flags. User errors print one
line to stderr and exit 2, never a traceback.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass

from decoding.cli.main import guarded


@dataclass(frozen=True)
class Command:
    module: str  # imported only when chosen: most commands load torch or a model
    help: str


COMMANDS: dict[str, Command] = {
    "verifiers": Command("bench.verifiers", "time per node of every verifier"),
    "engine": Command("bench.engine", "load times and per-step timings"),
    "efficiency": Command("bench.efficiency", "block efficiency (tokens per target forward) of verifier pairs"),
    "speed": Command("bench.speed", "specscope against generate(), assisted generation and prompt lookup"),
    "forwards": Command("bench.forwards", "one forward of each step part, old way vs new way"),
    "theory": Command("bench.theory", "a record's per-node theory against an earlier revision's code"),
    "calibrate": Command("bench.calibrate", "calibrate a pair on this machine (cached) and show the chosen shape"),
    "predict": Command("bench.predict", "the chooser's predicted tokens/s per shape against measured runs"),
    "app": Command("bench.app_clicks", "Step click-to-render latency in headless Chromium"),
    "replay-keys": Command("bench.replay_keys", "story key press -> event drawn in a trace's replay file (offline)"),
    "step": Command("bench.app_step", "whole Step clicks in-process (resume + step + every view redrawn)"),
    "train-head": Command("bench.train_head", "train the embedded-head pair's draft head (assets/draft_head)"),
}


def usage() -> str:
    width = max(map(len, COMMANDS))
    rows = "\n".join(f"  {name:<{width}}  {c.help}" for name, c in COMMANDS.items())
    return f"usage: python -m bench WHICH [flags]   (WHICH --help for its flags)\n\n{rows}"


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0 if argv else 2
    command = COMMANDS.get(argv[0])
    if command is None:
        print(f"error: unknown bench {argv[0]!r}; one of: {', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    return guarded(lambda: importlib.import_module(command.module).main(argv[1:]))
