"""A run as one self-contained HTML file (viz/replay_html.py) told in the page's words: the story's `About`
comes from ui/story_about.py, as the live page's does. Used by the Trace tab's button and the `export_html`
endpoint (ui/trace_io.py) and by `python -m decoding export-html TRACE -o FILE` (ui/teaching_cli.py).
No gradio here: the command line builds the file without loading the page."""

from __future__ import annotations

from pathlib import Path

from decoding.run.schema import Trace, read_trace_file
from ui.story_about import about
from viz import checks
from viz.replay_html import replay_html

MAX_BYTES = 5 * 1024 * 1024  # the budget for 10 steps of a 3,2,2 tree (tests/viz/test_replay_html.py)


def document(trace: Trace, title: str = "") -> str:
    """The replay file's text for `trace` (ValueError: no steps, or records that cannot be drawn)."""
    problems = checks.trace_problems(trace)
    if problems:
        more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
        raise ValueError(f"this trace's records are inconsistent and cannot be drawn: {problems[0]}{more}")
    return replay_html(trace, lambda key: about(key, trace), title)


def export(trace_path: str | Path, out_path: str | Path) -> Path:
    """Read a trace file (the hardened reader: size cap, strict schema) and write its replay file."""
    trace = read_trace_file(str(trace_path))
    out = Path(out_path)
    if out.is_dir():
        raise ValueError(f"{out} is a folder: give the file to write, e.g. {out / 'replay.html'}")
    text = document(trace)
    out.write_text(text, encoding="utf-8")
    return out
