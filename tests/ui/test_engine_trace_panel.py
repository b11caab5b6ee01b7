"""The Trace tab's engine-traces panel (ui/engine_trace.py, drawn by viz/engine_trace.py), fed what the page sends
(None for an empty file box or menu): a PR's example drawn with its numbers, the expectation from a shipped pair or
this run's records, a bad upload's one-line reason, and this run exported in an engine's shape."""

from __future__ import annotations

import json

import pytest

from decoding.run import engine_traces
from tests.ui.live_toy import live_toy_run
from ui import engine_trace


def traces_of(figure) -> dict:
    return {t.name: t for t in figure.data}


def test_the_vllm_example_is_drawn_with_its_numbers():
    figure, words = engine_trace.show(None, "vllm_pr48915_summary.json", None, None)
    drawn = traces_of(figure)
    rates = drawn["engine: accepted / reached"]
    assert list(rates.x) == [1, 2, 3] and list(rates.y) == pytest.approx([4 / 43, 3 / 4, 1.0])
    assert list(rates.error_y.arrayminus) == pytest.approx([4 / 43 - 0.0368, 0.75 - 0.3006, 1 - 0.4385], abs=5e-4)
    assert list(drawn["engine: steps"].y) == pytest.approx([39 / 43, 1 / 43, 0, 3 / 43])
    assert "10 of 129 drafts accepted (0.0775), 43 verification steps, mean acceptance length 1.2326" in words
    assert "| 1 | 43 | 4 | 0.0930 | [0.037, 0.216] |  |" in words and "No cliff" in words


def test_a_shipped_pairs_expectation_is_drawn_beside_it():
    choice = "embedded pair, T = 0.8 (shipped)"
    assert choice in engine_trace.expectation_choices()
    figure, words = engine_trace.show(None, "vllm_pr48915_summary.json", "auto", choice)
    exact = traces_of(figure)["specscope: exact"]
    assert len(exact.y) == 3 and all(0.7 < a < 0.9 for a in exact.y)
    assert sum(traces_of(figure)["specscope: exact P(j)"].y) == pytest.approx(1)
    assert "Expected (exact, embedded pair's shipped chain acceptance at T = 0.8" in words


def test_an_uploaded_file_wins_over_the_example_and_a_bad_one_gets_its_reason(tmp_path):
    good = tmp_path / "r.txt"
    good.write_text("I statistics draft: #gen drafts = 10, #acc drafts = 5, #gen tokens = 20, #acc tokens = 7, "
                    "#mean acc len = 1.70, #acc rate/pos = (0.500, 0.200)")
    figure, words = engine_trace.show(str(good), "vllm_pr48915_summary.json", None, None)
    assert "**llama.cpp record (statistics)**: 7 of 20 drafts accepted" in words
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"timings": {"draft_n": 3, "draft_n_accepted": 4}}))
    assert engine_trace.show(str(bad), None, None, None) == (
        None, "⚠️ llama.cpp record: draft\\_n\\_accepted \\(4\\) exceeds draft\\_n \\(3\\)")
    figure, words = engine_trace.show(str(bad), None, "vllm", None)
    assert figure is None and words.startswith("⚠️ no vLLM record here")


@pytest.mark.parametrize("value", [None, ""])
def test_nothing_picked_draws_nothing(value):
    assert engine_trace.show(value, value, value, value) == (None, "Upload an engine record or pick an example.")


def test_a_record_without_positions_is_drawn_with_its_reason():
    figure, words = engine_trace.show(None, "llamacpp_pr12603_timings.json", None, None)
    assert "holds totals only (65 of 347 drafts accepted)" in words
    assert any("totals only" in a.text for a in figure.layout.annotations)


def test_this_runs_expectation_and_export():
    figure, words = engine_trace.show(None, "vllm_pr48915_summary.json", None, engine_trace.THIS_RUN)
    assert figure is None and words.startswith("⚠️ no run yet")
    _, runs, session = live_toy_run(4)
    figure, words = engine_trace.show(None, "vllm_pr48915_summary.json", None, engine_trace.THIS_RUN, session, runs)
    assert len(traces_of(figure)["specscope: exact"].y) == 3 and "this run's exact per-node acceptance" in words
    assert engine_trace.export(None, None) == (None, "Nothing to export yet: run a few steps first (a chain: tree "
                                                     "1,1,1).")
    for shape in ("vllm", "sglang", "llamacpp"):
        path, line = engine_trace.export(session, shape, runs)
        record = engine_traces.read_file(path)
        assert record.engine == shape and record.steps == len(session.steps) and "4 steps" in line


def test_a_tree_run_is_not_exported():
    _, runs, session = live_toy_run(2, verifier="rrs", branching="2,2")
    assert engine_trace.export(session, "vllm", runs)[0] is None
