"""`python -m decoding bench ...` and `python -m decoding train-head ...` (and `app.py --bench-step N`) are
contracts that outlived their code: the benchmarks and the head's training moved to the top-level `bench`
package (`python -m bench ...`). This hands those commands over at run time, by the module's name.

Why not an import: bench sits above app, ui, viz and decoding (its benchmarks drive all of them) and
nothing imports it; a static import here would put decoding below its own benchmarks and make a cycle.
tests/test_layout.py allows the name BENCH_ENTRY in this module only.

`python -m decoding export-html|lesson ...` are handed the same way to ui/teaching_cli.py (TEACHING_ENTRY): the
replay file and the lesson are drawn by viz and told in the page's words (ui/story_about.py), both above
decoding, which imports neither; `python -m decoding` stays the one command line a user learns.
"""

from __future__ import annotations

import importlib
import sys

BENCH_ENTRY = "bench.main"
TEACHING_ENTRY = "ui.teaching_cli"
TEACHING = ("export-html", "lesson")  # the subcommands handed to TEACHING_ENTRY


def hand_to_bench(argv: list[str]) -> int:
    """`python -m bench ARGV`, in this process; exit 2 with one line where the bench package is missing."""
    try:
        entry = importlib.import_module(BENCH_ENTRY)
    except ModuleNotFoundError as err:
        if not (err.name or "").startswith("bench"):
            raise
        print("error: the benchmarks and train-head moved to the top-level `bench` package (python -m bench ...), "
              "which is not importable here: run from the repository's root", file=sys.stderr)
        return 2
    return int(entry.main(argv) or 0)


def hand_to_teaching(argv: list[str]) -> int:
    """`export-html ...` / `lesson ...` run by ui/teaching_cli.py, in this process."""
    return int(importlib.import_module(TEACHING_ENTRY).main(argv) or 0)
