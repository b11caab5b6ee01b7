"""The Verifier lab tab driven through its real wiring: each event's handler is found by the component's elem_id
and fed what the front end sends (gr.Number: a float, or None for an empty box; a textbox: a string; the table:
its DataframeData), through each input component's own preprocess. The outcomes are the user's: the notes
line, the plots' messages, titles and legends, the certify and trade-off lines (review 6, items 1-7)."""

from __future__ import annotations

import re
import signal
import time
from contextlib import contextmanager

import gradio as gr
import pytest
from gradio.components.dataframe import DataframeData

from decoding.verify.registry import VERIFIERS
from ui import api_tools
from ui import lab as ui_lab

BLOCKS = ui_lab.demo(VERIFIERS)
TABLE = ui_lab.table_of(ui_lab.load_preset(ui_lab.DEFAULT_PRESET))
PAGE = {"lab-preset": ui_lab.DEFAULT_PRESET, "lab-table": TABLE, "lab-k": 2.0, "lab-samples": 1000.0,
        "lab-verifiers": list(ui_lab.DEFAULT_KEYS), "lab-seq-verifier": "rrs", "lab-shape": "2,2"}


def _component(elem_id: str):
    return next(b for b in BLOCKS.blocks.values() if getattr(b, "elem_id", None) == elem_id)


def _handler(elem_id: str, event: str):
    target = _component(elem_id)._id
    return next(f for f in BLOCKS.fns.values() if (target, event) in f.targets)


def _sent(component, value):
    """What the browser sends for a value the page shows (the table goes as its DataframeData)."""
    if isinstance(component, gr.Dataframe):
        shown = component.postprocess(value)
        return DataframeData(headers=shown.headers, data=shown.data)
    return value


def fire(elem_id: str, event: str, **changed):
    """Run the handler of `event` on `elem_id` with the page's values, `changed` ones (by elem_id, '-' as '_')
    replaced; each input goes through its component's preprocess, as the server does."""
    fn = _handler(elem_id, event)
    values = {**PAGE, **{k.replace("_", "-"): v for k, v in changed.items()}}
    args = []
    for comp in fn.inputs:
        if isinstance(comp, gr.State):
            args.append(None)
        else:
            args.append(comp.preprocess(_sent(comp, values[comp.elem_id])))
    return fn.fn(*args)


@contextmanager
def deadline(seconds: float):
    """TimeoutError when the body runs longer (a pure-Python enumeration is interrupted by the alarm)."""
    def expired(*_):
        raise TimeoutError(f"still running after {seconds} s")

    old = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _messages(fig) -> list[str]:
    return [a.text for a in fig.layout.annotations]


# 1. One Certify may not take the lab from every user: a huge shape is refused at once, with the limit.

def test_a_huge_tree_shape_is_refused_at_once_with_the_limit_and_what_to_do():
    start = time.perf_counter()
    with deadline(20):
        fig, md = fire("lab-certify-btn", "click", lab_shape="4,4,4,4")
    assert time.perf_counter() - start < 5
    assert md.startswith("**Input:** tree shape 4,4,4,4 is too large to certify here")
    assert f"{ui_lab.MAX_CERTIFY_WORK:,} tree nodes" in md and "smaller shape such as 2,2" in md
    assert "`./specscope certify --verifier rrs --language assets/languages/worked_example.json --tree 4,4,4,4`" in md
    assert md.count("\n") == 0 and not fig.data


def test_the_trade_off_of_a_huge_shape_is_refused_at_once():
    with deadline(20):
        fig, md = fire("lab-tradeoff-btn", "click", lab_shape="4,4,4,4")
    assert md.startswith("**Input:** tree shape 4,4,4,4 is too large for the trade-off here")
    assert f"{ui_lab.MAX_TRADEOFF_WORK:,} tree nodes" in md and "Uncheck some verifiers" in md and not fig.data


def test_the_api_certify_tool_shares_the_cap():
    with deadline(20), pytest.raises(gr.Error, match="tree shape 3,3,3 is too large to certify here"):
        api_tools.certify("rrs", "worked_example", "3,3,3")


@pytest.mark.parametrize("shape, message", [("abc", "shape must be comma-separated positive integers"),
                                            ("0", "shape must be comma-separated positive integers"),
                                            ("4", "at most 3 levels of at most 3 candidates")])
def test_the_api_certify_tool_refuses_a_bad_shape_with_its_message(shape, message):
    with pytest.raises(gr.Error, match=message):
        api_tools.certify("rrs", "worked_example", shape)


def test_the_default_shape_still_certifies_and_draws_every_verifier():
    _, md = fire("lab-certify-btn", "click")
    assert md == "**rrs** on *worked_example*, tree 2,2: certified lossless"
    _, md = fire("lab-tradeoff-btn", "click", lab_verifiers=list(VERIFIERS))
    assert md.startswith("Drawn: fuzzy") and "too large" not in md


# 2. Changing "Monte-Carlo runs" redraws.

def test_changing_the_monte_carlo_runs_redraws_with_the_new_count():
    node_fig, _, _, md, _ = fire("lab-samples", "change", lab_samples=500.0)
    legend = {t.name for t in node_fig.data}
    assert "verify, 500 runs" in legend and "verify, 1000 runs" not in legend and md == "All inputs valid."


def test_a_redraw_over_the_draw_limit_is_refused_at_once_with_what_to_do(monkeypatch):
    every = list(VERIFIERS)
    with deadline(10):
        node_fig, _, rows, md, _ = fire("lab-samples", "change", lab_samples=20000.0, lab_verifiers=every)
    draws = 20000 * len(every)
    assert md == (f"**Input:** 20,000 Monte-Carlo runs for each of {len(every)} verifiers is {draws:,} draws; this "
                  f"server draws at most {ui_lab.MAX_NODE_DRAWS:,} per redraw (about 6 s). Lower the runs to "
                  f"{ui_lab.MAX_NODE_DRAWS // len(every):,} or uncheck some verifiers")
    assert rows == [] and not any("runs" in (t.name or "") for t in node_fig.data)
    monkeypatch.setattr(ui_lab, "MAX_NODE_DRAWS", 40)  # the default 4 verifiers x 10 runs: at the limit, drawn
    node_fig, *_ = fire("lab-samples", "change", lab_samples=10.0)
    assert any("verify, 10 runs" in (t.name or "") for t in node_fig.data)
    *_, md, _ = fire("lab-samples", "change", lab_samples=11.0)
    assert md.startswith("**Input:** 11 Monte-Carlo runs for each of 4 verifiers is 44 draws")


# 3. A refused input empties the plots with its own reason.

def test_negative_runs_give_the_real_reason_in_the_plots_and_the_notes():
    node_fig, acc_fig, rows, md, _ = fire("lab-samples", "change", lab_samples=-5.0)
    reason = "Monte-Carlo runs must be a whole number from 10 to 20000, got -5"
    assert md == f"**Input:** {reason}" and rows == []
    for fig in (node_fig, acc_fig):
        assert _messages(fig) == [f"Input: {reason}"]


def test_verifiers_that_cannot_take_k_do_not_make_the_plots_ask_for_a_verifier():
    node_fig, acc_fig, _, md, _ = fire("lab-k", "change", lab_k=3.0, lab_verifiers=["sd", "spechub"])
    assert md.startswith("- sd:") and "spechub:" in md
    for fig in (node_fig, acc_fig):
        assert _messages(fig) == ["none of the chosen verifiers can run with k = 3: see the notes"]


# 4. A bad k is the lab's own message, never gradio's toast, never "All inputs valid.".

@pytest.mark.parametrize("sent, reason", [
    (0.0, "k (candidates) must be a whole number from 1 to 4, got 0"),
    (9.0, "k (candidates) must be a whole number from 1 to 4, got 9"),
    (None, "k (candidates) is empty: type a whole number from 1 to 4"),
])
def test_a_bad_k_is_refused_by_the_lab_with_one_line(sent, reason):
    node_fig, acc_fig, rows, md, _ = fire("lab-k", "change", lab_k=sent)  # gr.Error here before the fix
    assert md == f"**Input:** {reason}" and "All inputs valid" not in md and rows == []
    assert _messages(node_fig) == [f"Input: {reason}"] == _messages(acc_fig)


def test_an_empty_runs_box_is_refused_by_the_lab():
    *_, md, _ = fire("lab-samples", "change", lab_samples=None)
    assert md == "**Input:** Monte-Carlo runs is empty: type a whole number from 10 to 20000"


# 5. The shape's refusal names the field the user typed in.

def test_a_bad_shape_names_the_tree_shape_field_not_a_flag():
    _, md = fire("lab-certify-btn", "click", lab_shape="abc")
    assert md == "**Input:** tree shape must be comma-separated positive integers like 3,2,2 or 1,1,1; got 'abc'"
    _, md = fire("lab-tradeoff-btn", "click", lab_shape="2,0")
    assert md == "**Input:** tree shape must be comma-separated positive integers like 3,2,2 or 1,1,1; got '2,0'"


# 6. Float rounding shows as < 1e-12, and every number has the same digits.

def test_rounding_level_tv_reads_as_below_1e_12_and_the_numbers_have_four_decimals():
    node_fig, _, rows, _, _ = fire("lab-k", "change")
    titles = [a.text for a in node_fig.layout.annotations]
    for title in titles[:3]:  # rrs, rrs_wor, spectr: lossless, TV at float rounding
        assert "output = p, TV < 1e-12 |" in title
    assert not any(re.search(r"\de-\d", t.replace("1e-12", "")) for t in titles)
    assert "output OFF p, TV 0.5000" in titles[3]
    numbers = [cell for row in rows for cell in row[2:] if cell != "< 1e-12"]
    assert numbers and all(re.fullmatch(r"\d\.\d{4}", cell) for cell in numbers), rows
    assert [row[2] for row in rows] == ["< 1e-12", "< 1e-12", "< 1e-12", "0.5000"]
    fig, _ = fire("lab-certify-btn", "click")
    assert "lossless (certified), TV < 1e-12 |" in fig.layout.title.text


# 7. The trade-off's words match what is drawn.

def test_the_trade_off_text_and_note_describe_the_markers_drawn():
    fig, md = fire("lab-tradeoff-btn", "click")
    fuzzy = fig.data[0]
    assert list(fuzzy.text) == ["T = 0", "T from 0.05188 to 0.6931"] and len(fuzzy.x) == 2
    assert md == "Drawn: fuzzy (2 distinct points as T moves), rrs, rrs_wor, spectr, greedy, typical."
    described = [b.value for b in BLOCKS.blocks.values() if isinstance(b, gr.Markdown) and "trade-off" in str(b.value)]
    assert len(described) == 1 and "staircase" not in described[0]
    assert "one marker per distinct result, joined in order of T" in described[0]
