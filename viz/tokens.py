"""How a token's text is shown: whitespace and control characters made visible, HTML escaped."""

from __future__ import annotations

import html
import re
import unicodedata

# Visible stand-ins for characters that would otherwise vanish in a label.
WHITESPACE = {" ": "·", "\n": "⏎", "\t": "→", "\r": "␍", "\u00a0": "⍽"}
EMPTY = "∅"
MAX_LABEL = 16


def visible(text: str) -> str:
    """' world\\n' -> '·world⏎': every whitespace or control character gets a visible mark."""
    if text == "":
        return EMPTY
    return "".join(_visible_char(ch) for ch in text)


def _visible_char(ch: str) -> str:
    if ch in WHITESPACE:
        return WHITESPACE[ch]
    category = unicodedata.category(ch)
    if category in ("Cc", "Cf", "Zl", "Zp") or (category == "Zs"):
        return f"\\u{ord(ch):04x}"
    return ch


def shorten(text: str, limit: int = MAX_LABEL) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def label(text: str, limit: int = MAX_LABEL) -> str:
    """Visible, shortened and escaped for plotly text and hover labels (`plotly_escape`)."""
    return plotly_escape(shorten(visible(text), limit))


# Quotes as numeric entities: plotly's text renderer decodes numeric entities and only eight named ones
# (mu, amp, lt, gt, nbsp, times, plusmn, deg), so html.escape's "&quot;" was drawn as "&quot;" literally.
QUOTES = str.maketrans({'"': "&#34;", "'": "&#39;"})


def plotly_escape(text: str) -> str:
    """HTML-escaped with entities plotly decodes: & < > named, quotes numeric. Inert as plotly's pseudo-HTML
    and inside an HTML attribute alike, and plotly draws the text as it is."""
    return html.escape(text, quote=False).translate(QUOTES)


HTML_OR_MARKDOWN = re.compile(r"[&<>\"'\\`*_{}\[\]()#+!|~-]")


def html_text(text: str) -> str:
    """HTML special characters and Markdown punctuation as numeric entities, in ONE pass: inert in an HTML
    container and in a Markdown one that passes HTML through (gr.Markdown), and it reads the same. (Two passes,
    html.escape then the Markdown one, escaped the '#' of the apostrophe's "&#x27;": the page showed it.)"""
    return HTML_OR_MARKDOWN.sub(lambda m: f"&#{ord(m.group())};", text)


def unique_labels(labels: list[str], keys: list[int]) -> list[str]:
    """Make labels unique (plotly merges equal category names) by appending the key to repeats."""
    seen: dict[str, int] = {}
    for lab in labels:
        seen[lab] = seen.get(lab, 0) + 1
    return [f"{lab} #{key}" if seen[lab] > 1 else lab for lab, key in zip(labels, keys, strict=True)]
