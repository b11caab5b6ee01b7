"""Token text is data, never markup: every view that draws it escapes it (plotly text and hovers,
HTML text) or hands it to a component that shows plain text (table cells, highlighted text).

Hostile texts (script, img onerror, Markdown emphasis and javascript links) replace every text,
label and note of the hand-made records, then go through every viz function."""

from __future__ import annotations

import html
import re
from dataclasses import fields, is_dataclass, replace

import pytest

from tests import fixtures_records as fx
from viz import hover, node_figure, stats, text, tree_figure
from viz.tokens import html_text, label, shorten, visible

HOSTILE = ("<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "**x**", "[a](javascript:alert(1))",
           '"><svg onload=alert(1)>', "&lt;b&gt;", "it's")
OUR_MARKUP = re.compile(r"</?b>|<br>")  # the only tags the views add themselves (plotly's subset)

# plotly.js's convertEntities (src/lib/svg_text_utils.js), the oracle for what a plotly text SHOWS: numeric
# entities and these eight named ones are decoded, any other "&name;" is drawn as it is written.
PLOTLY_NAMED = {"mu": "\u03bc", "amp": "&", "lt": "<", "gt": ">", "nbsp": "\xa0", "times": "\xd7",
                "plusmn": "\xb1", "deg": "\xb0"}
PLOTLY_ENTITY = re.compile(r"&(#\d+|#x[\da-fA-F]+|[a-z]+);")


def plotly_shows(text: str) -> str:
    """The characters plotly draws for `text` (tags aside)."""
    def one(m: re.Match) -> str:
        name = m.group(1)
        if name.startswith("#"):
            return chr(int(name[2:], 16) if name[1] == "x" else int(name[1:]))
        return PLOTLY_NAMED.get(name, m.group(0))
    return PLOTLY_ENTITY.sub(one, text)


def hostile(obj, text_value: str):
    """A copy of a record tree with every str field that holds text replaced by `text_value`."""
    if isinstance(obj, tuple):
        return tuple(hostile(x, text_value) for x in obj)
    if not is_dataclass(obj):
        return obj
    changes = {f.name: text_value if f.name in ("text", "label", "note", "verifier")
               else hostile(getattr(obj, f.name), text_value) for f in fields(obj)}
    return replace(obj, **changes)


def steps_with(value: str):
    return [hostile(fx.step_residual(), value), hostile(fx.step_bonus(), value)]


def strings(obj) -> list[str]:
    """Every string inside a (plotly JSON) structure."""
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, dict):
        return [s for v in obj.values() for s in strings(v)]
    if isinstance(obj, (list, tuple)):
        return [s for v in obj for s in strings(v)]
    return []


def assert_markup_free(values: list[str], value: str) -> None:
    """No tag but ours survives, and the hostile text shows up in its escaped form."""
    for s in values:
        assert "<" not in OUR_MARKUP.sub("", s), s
    shown = plotly_shows(" ".join(OUR_MARKUP.sub("", v) for v in values))
    assert shorten(visible(value), 12)[:8] in shown  # drawn as the text it is, entities decoded


@pytest.mark.parametrize("value", HOSTILE)
def test_tree_figure_labels_hovers_and_title_are_escaped(value):
    for step in steps_with(value):
        fig = tree_figure.tree_figure(step)
        assert_markup_free(strings(fig.to_plotly_json()), value)


@pytest.mark.parametrize("value", HOSTILE)
def test_node_hovers_are_escaped(value):
    for step in steps_with(value):
        values = [hover.node_hover(step, n) for n in step.nodes]
        values += [hover.emitted_hover(step, e) for e in step.emitted]
        values += [hover.test_line(t) for v in step.visits for t in v.tests]
        assert_markup_free(values, value)


@pytest.mark.parametrize("value", HOSTILE)
def test_node_inspector_figure_is_escaped(value):
    for step in steps_with(value):
        for node in step.nodes:
            assert_markup_free(strings(node_figure.node_figure(step, node.id).to_plotly_json()), value)


@pytest.mark.parametrize("value", HOSTILE)
def test_text_html_escapes_tokens_and_prompt(value):
    out = text.text_html(steps_with(value), prompt=value)
    assert value not in out and html_text(value) in out
    assert "**" not in out and "](" not in out  # no Markdown either: the HTML may sit in gr.Markdown
    assert re.findall(r"<(\w+)", out) and set(re.findall(r"<(\w+)", out)) <= {"span", "div"}


@pytest.mark.parametrize("value", HOSTILE)
def test_plain_text_views_carry_the_text_verbatim(value):
    """Table cells (gr.Dataframe datatype 'str') and gr.HighlightedText show text as text: their values
    are the token's visible text, unescaped (escaping there would show '&lt;' to the reader)."""
    steps = steps_with(value)
    assert [t for t, _ in text.highlighted(steps)] == [value] * sum(len(s.emitted) for s in steps)
    rows = node_figure.tests_table(steps[0], 0)
    assert rows[0][2] == shorten(visible(value), 24) and rows[0][8] == value
    assert rows[1][0] == "residual update" and rows[1][8].startswith(value)


def test_label_is_escaped_after_shortening_so_no_entity_is_cut():
    assert label("<script>", 4) == "&lt;sc…"
    assert label("a&b") == "a&amp;b"


@pytest.mark.parametrize("value", ['"', 'say "hi"', "it's", "&quot;", "<b>", "a&b", "&#34;"])
def test_plotly_draws_a_label_as_the_token_text(value):
    """A token holding a double quote was drawn as '&quot;' in the node figure's bar labels and title (seen on the
    lookup pair): html.escape's named entity is not one plotly decodes."""
    assert plotly_shows(label(value, 40)) == visible(value)
    step = hostile(fx.step_residual(), value)
    spec = node_figure.node_spec(step, 0)
    bars = [plotly_shows(name).lstrip("★▶") for name in spec["data"][0]["x"]]  # every token's text is `value`
    assert bars and all(bar == visible(value) or bar.startswith(visible(value) + " #") for bar in bars), bars
    title = plotly_shows(OUR_MARKUP.sub("", spec["layout"]["title"]["text"]))
    assert f"node 0 {visible(value)} " in title


def test_html_text_reads_the_same_once_decoded():
    for value in HOSTILE:
        assert html.unescape(html_text(value)) == value


def test_stats_views_draw_no_token_text():
    steps = steps_with("<script>x</script>")
    values = strings(stats.run_figure(steps).to_plotly_json()) + [stats.summary_markdown(steps)]
    assert not any("script" in s for s in values)
