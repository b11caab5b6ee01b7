"""What the Compare tab shows, read from its figures and table (review 6): tokens written as the main tree writes
them, labels that fit their panel, titles that fit the narrowest column of an 800 px page, candidates numbered from 1
as the inspector does, a zero spread shown sensibly, and no NaN interval from one seed.

Records are real compared steps of the toy pair (the review's 7 verifiers on a 3,2,2 tree); where a case needs a
text the toy language lacks (a newline root, a long token), or a sampled exact acceptance (a large vocabulary's
rrs_wor), only that field of the real record is replaced."""

from __future__ import annotations

import re
from dataclasses import replace
from functools import cache

from decoding.compare import session
from decoding.models.pairs import load_pair
from decoding.run.config import DecodeConfig
from tests.viz.test_escaping import plotly_shows
from viz import compare as vc
from viz.tokens import shorten, visible

REVIEWED = ["rrs_wor", "rrs", "spectr", "khisti_is", "hu_greedy", "pointmass", "traversal"]
# The narrowest column at 800 px: the plot is ~684 px wide there, four columns with 3 % gaps -> ~155 px each.
COLUMN_PX = 150
# A generous mean glyph width (px) of plotly's sans-serif font, by font size.
CHAR_PX = {10: 5.6, 11: 6.2, 12: 6.8, 13: 7.4, 14: 7.9, 16: 9.0, 17: 9.6}


@cache
def reviewed_record():
    cfg = DecodeConfig(verifier="rrs_wor", branching=(3, 2, 2), temperature=0.8, max_new_tokens=8)
    run = session.start(load_pair("toy"), cfg, "the cat", REVIEWED, mc_draws=40)
    return run.step().compare


def _lines(text: str) -> list[str]:
    return [plotly_shows(re.sub(r"</?b>", "", line)) for line in text.split("<br>")]


def _panel_titles(fig) -> list:
    return [a for a in fig.layout.annotations if "E[tokens]" in a.text]


def _font(annotation, fig) -> float:
    return annotation.font.size or fig.layout.annotationdefaults.font.size or 16  # plotly's subplot-title default


# ---- item 3: tokens as the main tree writes them; labels inside their panel --------------------------------
def test_small_multiples_write_tokens_as_the_main_tree() -> None:
    record = reviewed_record()
    newline_root = tuple(replace(v, texts=("\n", *v.texts[1:]), emitted_texts=(" The", " sky"))
                         for v in record.verdicts)
    fig = vc.small_multiples(replace(record, verdicts=newline_root))
    markers = [t for t in fig.data if t.mode == "markers+text"]
    assert [plotly_shows(t.text[0]) for t in markers] == ["⏎"] * len(record.verdicts)
    for trace, v in zip(markers, newline_root, strict=True):  # toy words start with a space: "·cat"
        assert [plotly_shows(s) for s in trace.text[1:]] == [shorten(visible(t), vc.NODE_LABEL) for t in v.texts[1:]]
        assert all(plotly_shows(s).startswith("·") for s, t in zip(trace.text, v.texts, strict=True) if t[0] == " ")
    emits = [a.text for a in fig.layout.annotations if a.text.startswith("emits")]
    assert all("·The" in plotly_shows(e) and "·sky" in plotly_shows(e) for e in emits)


def test_the_table_writes_tokens_as_the_main_tree() -> None:
    record = reviewed_record()
    newline_root = tuple(replace(v, texts=("\n", *v.texts[1:])) for v in record.verdicts)
    rows = vc.node_table(replace(record, verdicts=newline_root))
    token = vc.TABLE_HEADERS.index("token")
    assert {r[token] for r in rows if r[vc.TABLE_HEADERS.index("node")] == 0} == {"⏎"}
    texts = {(v.key, x.node): v.texts[x.node] for v in record.verdicts for x in v.visits}
    assert all(r[token].startswith("·") for r in rows if texts[r[0], r[2]][0] == " " and r[2] != 0)


def test_a_long_deepest_label_fits_inside_its_panel() -> None:
    """'Understan' was cut at the right edge of hu_greedy's panel: labels are shortened the one way (…) and the x
    axis leaves room for the longest at the narrowest column."""
    record = reviewed_record()
    long = tuple(replace(v, texts=tuple("Understanding" for _ in v.texts)) for v in record.verdicts)
    fig = vc.small_multiples(replace(record, verdicts=long))
    markers = [t for t in fig.data if t.mode == "markers+text"]
    font = markers[0].textfont.size
    for i, trace in enumerate(markers):
        axis = fig.layout[f"xaxis{'' if i == 0 else i + 1}"]
        low, high = axis.range
        deepest = max(trace.x)
        room_px = (high - deepest) / (high - low) * COLUMN_PX
        widest = max(len(plotly_shows(s)) for s, x in zip(trace.text, trace.x, strict=True) if x == deepest)
        assert widest * CHAR_PX[font] + 8 <= room_px, (widest, room_px)  # 8 px: the marker and the text's offset
        assert all(plotly_shows(s) == "Underst…" for s in trace.text)


# ---- item 4: titles that fit the narrowest column at 800 px ----------------------------------------------------
def test_small_multiple_titles_fit_their_column_at_800px() -> None:
    fig = vc.small_multiples(reviewed_record())
    titles = _panel_titles(fig)
    assert len(titles) == len(REVIEWED)
    for a in titles:
        font = _font(a, fig)
        for line in _lines(a.text):
            assert len(line) * CHAR_PX[font] <= COLUMN_PX + 10, (line, font)  # 10 px: half of each gap
    shared = [a.text for a in titles if "same tree as" in a.text]
    assert any("traversal" in t for t in shared) and any("pointmass" in t for t in shared)


def test_the_small_multiples_title_clears_the_toolbar_at_800px() -> None:
    """The plot's toolbar takes the right ~260 px of a ~700 px figure: the title keeps to the left ~400 px."""
    fig = vc.small_multiples(reviewed_record())
    font = fig.layout.title.font.size or 17
    assert all(len(line) * CHAR_PX[font] <= 400 for line in _lines(fig.layout.title.text))


def test_law_titles_fit_their_column_at_800px() -> None:
    """Seven laws side by side at 800 px: ~80 px a column; the titles ran into each other."""
    fig = vc.length_law_figure(reviewed_record())
    titles = list(fig.layout.annotations)
    assert [t.text.split("<br>")[0] for t in titles] == REVIEWED
    for a in titles:
        assert all(len(line) * CHAR_PX[_font(a, fig)] <= 90 for line in _lines(a.text)), a.text


# ---- item 2: candidates numbered from 1, in the inspector's words ------------------------------------------------
def test_outcomes_number_candidates_from_one_in_the_inspectors_words() -> None:
    record = reviewed_record()
    outcomes = [r[-1] for r in vc.node_table(record)]
    expected = ["residual sample" if x.accepted is None else f"candidate {x.accepted + 1} accepted"
                for v in record.verdicts for x in v.visits]
    assert outcomes == expected
    greedy = [r[-1] for r in vc.node_table(record) if r[0] == "hu_greedy"]
    assert greedy and "candidate 0" not in " ".join(greedy) and "draw" not in " ".join(outcomes)


# ---- item 5: a zero spread ------------------------------------------------------------------------------------
def test_a_spread_below_the_last_digit_is_not_written_as_zero() -> None:
    record = reviewed_record()
    first = record.verdicts[0]
    cases = {3e-6: "0.9987 ± <0.0001", 0.0: "0.9987", 0.0123: "0.9987 ± 0.0123"}
    for stderr, shown in cases.items():
        visit = replace(first.visits[0], exact_acceptance=0.99871, exact_stderr=stderr)
        one = replace(record, verdicts=(replace(first, visits=(visit,)),))
        assert vc.node_table(one)[0][vc.TABLE_HEADERS.index("exact acceptance")] == shown


# ---- item 1: one seed has no interval ------------------------------------------------------------------------
ONE_SEED = {"rrs": {"block_efficiency": 3.2, "ci95": [float("nan"), float("nan")], "per_seed": [3.2],
                    "acceptance_by_depth": [1.0, 0.8, 0.7], "expected_tokens_per_step": 3.5, "steps": 10}}


def test_one_seed_shows_no_interval_and_says_why() -> None:
    row = vc.runs_table(ONE_SEED)[0]
    assert row[vc.RUNS_HEADERS.index("95% CI")] == "— (one seed)"
    assert "nan" not in " ".join(row)
    fig = vc.runs_figure(ONE_SEED)
    left = fig.layout.annotations[0].text
    assert "95% CI" not in left and "2+ seeds" in left
    assert fig.data[0].error_y.array is None  # no bar to draw: NaN bars drew nothing, silently


def test_two_seeds_show_the_interval() -> None:
    two = {"rrs": {**ONE_SEED["rrs"], "ci95": [2.9, 3.5], "per_seed": [3.0, 3.4]}}
    assert vc.runs_table(two)[0][vc.RUNS_HEADERS.index("95% CI")] == "[2.900, 3.500]"
    fig = vc.runs_figure(two)
    assert "95% CI" in fig.layout.annotations[0].text and list(fig.data[0].error_y.array) == [3.5 - 3.2]
