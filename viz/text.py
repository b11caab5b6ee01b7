"""Generated text coloured by origin: accepted draft token, residual sample, bonus token."""

from __future__ import annotations

import html
from collections.abc import Sequence

from decoding.run.schema import StepRecord
from viz.palette import ORIGIN_COLORS, ORIGIN_NAMES
from viz.tokens import html_text

PROMPT_COLOR = "#EEEEEE"


def origin_spans(steps: Sequence[StepRecord]) -> list[tuple[str, str, int]]:
    """(text, origin kind, step index) for every emitted token, in order."""
    return [(e.text, e.kind, s.index) for s in steps for e in s.emitted]


def highlighted(steps: Sequence[StepRecord], prompt: str | None = None) -> list[tuple[str, str | None]]:
    """gr.HighlightedText value: [(token text, origin name)], the prompt first with no label."""
    spans: list[tuple[str, str | None]] = [(prompt, None)] if prompt else []
    return spans + [(text, ORIGIN_NAMES[kind]) for text, kind, _ in origin_spans(steps)]


def color_map() -> dict[str, str]:
    """Origin name -> colour, for gr.HighlightedText(color_map=...)."""
    return {ORIGIN_NAMES[k]: c for k, c in ORIGIN_COLORS.items()}


def generated_text(steps: Sequence[StepRecord]) -> str:
    return "".join(text for text, _, _ in origin_spans(steps))


def text_html(steps: Sequence[StepRecord], prompt: str = "", legend: bool = True) -> str:
    """Escaped HTML: the prompt in grey, then each token on its origin's colour."""
    parts = [f'<span style="background:{PROMPT_COLOR}" title="prompt">{html_text(prompt)}</span>'] if prompt else []
    for text, kind, index in origin_spans(steps):
        title = html.escape(f"step {index + 1}: {ORIGIN_NAMES[kind]}", quote=True)
        parts.append(f'<span style="background:{ORIGIN_COLORS[kind]}33;border-bottom:2px solid '
                     f'{ORIGIN_COLORS[kind]}" title="{title}">{html_text(text)}</span>')
    body = f'<div class="specscope-text" style="white-space:pre-wrap;line-height:1.7">{"".join(parts)}</div>'
    return (legend_html() + body) if legend else body


def legend_html() -> str:
    items = [f'<span style="border-bottom:3px solid {c};margin-right:1em">{html.escape(ORIGIN_NAMES[k])}</span>'
             for k, c in ORIGIN_COLORS.items()]
    return f'<div class="specscope-legend" style="font-size:0.85em;margin-bottom:0.4em">{"".join(items)}</div>'
