"""The "How to read this" tab: the README's panel guide, so the docs and the app have one source."""

from __future__ import annotations

from pathlib import Path

import gradio as gr

README = Path(__file__).resolve().parents[1] / "README.md"
HELP_HEADING = "## The app: what each panel shows and how to read it"


def build() -> None:
    with gr.Tab("How to read this", id="help"):
        gr.Markdown(help_text())


def help_text(path: Path = README) -> str:
    """The README's panel guide without its screenshot ("" when the README is not shipped)."""
    body = path.read_text(encoding="utf-8") if path.exists() else ""
    start = body.find(HELP_HEADING)
    if start < 0:
        return ""
    end = body.find("\n## ", start + len(HELP_HEADING))
    section = body[start: end if end > 0 else None]
    return "\n".join(line for line in section.splitlines() if not line.startswith("!["))
