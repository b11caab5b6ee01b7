"""The "How to read this" tab: the README's panel guide, so the docs and the app have one source."""

from __future__ import annotations

import re
from pathlib import Path

import gradio as gr

README = Path(__file__).resolve().parents[1] / "README.md"
HELP_HEADING = "## The app: what each panel shows and how to read it"
RELATIVE_LINK = re.compile(r"\[([^\]]+)\]\((?![a-z]+:|#)([^)\s]+)\)")  # [text](path): a file of the repository


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
    text = "\n".join(line for line in section.splitlines() if not line.startswith("!["))
    return RELATIVE_LINK.sub(_repository_file, text)


def _repository_file(link: re.Match) -> str:
    """A README link to a repository file, as words: the app does not serve the repository's files (the link
    would open a 404 page)."""
    text, path = link.group(1), link.group(2)
    where = "in specscope's repository"
    return f"{path} ({where})" if text.strip("`") == path else f"{text} ({path} {where})"
