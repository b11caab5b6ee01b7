"""A step's story as one HTML block: the paragraph, the ◀ ▶ ▶▶ controls, "event i of n", the narration,
and every event kept in the page (hidden), so assets/story.js moves through them with no server round trip.

Element ids are a contract (outside checks use them): #story-prev, #story-next, #story-play, #story-text,
#story-position. Each hidden event carries data-node (the node the inspector follows) and data-focus (the
tree points highlighted); all text is escaped here.
"""

from __future__ import annotations

import html

from viz.story import StoryEvent

PACE_MS = 1500  # default pause between events while playing


def story_html(paragraph: str, events: list[StoryEvent], key: str = "", note: str = "") -> str:
    """The story block; `key` names the story (step and verifier) so the page knows when it changed."""
    first = events[0].text if events else ""
    items = "".join(_event(i, e) for i, e in enumerate(events))
    note_html = f'<p class="story-note">{html.escape(note)}</p>' if note else ""
    return (f'<div id="story" class="specscope-story" data-key="{html.escape(key, quote=True)}" data-at="0" '
            f'data-n="{len(events)}">'
            f'<p id="story-paragraph">{html.escape(paragraph)}</p>{note_html}'
            '<div class="story-bar">'
            '<button id="story-prev" type="button" title="previous event">◀</button>'
            '<button id="story-next" type="button" title="next event">▶</button>'
            '<button id="story-play" type="button" title="play the events">▶▶</button>'
            f'<label class="story-pace">pace <input id="story-pace" type="range" min="300" max="4000" step="100" '
            f'value="{PACE_MS}" title="milliseconds per event"></label>'
            f'<span id="story-position">event {1 if events else 0} of {len(events)}</span></div>'
            f'<div id="story-text" aria-live="polite">{html.escape(first)}</div>'
            f'<ol id="story-events" hidden>{items}</ol></div>')


def empty_html() -> str:
    return story_html("Press Step: the story of the step, event by event, appears here.", [])


def _event(i: int, e: StoryEvent) -> str:
    focus = ",".join(str(n) for n in e.focus)
    return (f'<li data-i="{i}" data-kind="{html.escape(e.kind, quote=True)}" data-node="{e.node}" '
            f'data-focus="{focus}">{html.escape(e.text)}</li>')
