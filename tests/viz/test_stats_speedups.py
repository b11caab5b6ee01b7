"""The one definition of the measured speed-up both tabs show (viz/stats.py), and the line that says why a
measured number is far below the prediction (viz/speed.py), on records whose times are set by hand."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests import fixtures_records as fx
from viz import speed as speed_view
from viz import stats

STEPS = (fx.step_residual(), fx.step_bonus())


def timed(step, ms: float, record_ms: float = 0.0):
    return replace(step, draft_ms=0.0, target_ms=ms, verify_ms=0.0, record_ms=record_ms)


def test_the_speed_up_against_the_target_alone_compares_decoding_time_and_says_so():
    steps = [timed(STEPS[0], 100.0, record_ms=300.0), timed(STEPS[1], 100.0, record_ms=300.0)]
    base = stats.BaselineNumbers(tokens=5, seconds=0.5, forwards=5)  # 10 tokens / s
    got = stats.against_baseline(steps, base)
    tokens = sum(s.n_emitted for s in steps)
    assert got.decoding == pytest.approx(tokens / 0.2 / 10) and got.wall == pytest.approx(tokens / 0.8 / 10)
    assert got.recording_s == pytest.approx(0.6)
    assert got.words().startswith(f"**{got.decoding:.2f}x** against the target alone you ran, decoding time only")
    assert stats.against_baseline(steps, None) is None


def test_a_slow_first_step_and_few_steps_are_named():
    steps = [timed(STEPS[0], 900.0), timed(STEPS[1], 100.0)]
    ratio = stats.first_step_ratio(steps)
    assert ratio == pytest.approx(900 / STEPS[0].n_emitted / (100 / STEPS[1].n_emitted))
    reasons = stats.slow_reasons(steps)
    assert reasons[0].startswith(f"its first step took {ratio:.1f}x as long a token as the later ones")
    assert reasons[-1] == "only 2 steps: Run more for a steadier number"
    assert not any("first step" in r for r in stats.slow_reasons(steps, first_included=False))


def test_far_below_the_prediction_the_speed_tab_says_why():
    steps = [timed(STEPS[0], 900.0), timed(STEPS[1], 100.0)]
    base = stats.BaselineNumbers(tokens=5, seconds=0.5, forwards=5)
    against = stats.against_baseline(steps, base)
    assert speed_view.below_prediction(steps, against.decoding, 100.0, None, against) == ()  # as predicted
    why = speed_view.below_prediction(steps, 4 * against.decoding, 50.0, None, against)
    assert why[0] == "its steps after the first took 100 ms each where 50 were predicted (the machine busier than " \
                     "when it was calibrated)"
    assert any(r.startswith("its first step took") for r in why)
    facts = speed_view.SpeedFacts(
        machine="m", stock=((1, 10.0),), planned=((1, 10.0),), plan="stock", draft=((1, 1.0),), overhead_ms=1.0,
        shapes=(speed_view.ShapeRow("sd 1 (this run)", 1.5, 12.0, 1.2),), chosen="c", run_label="sd 1",
        run_predicted=4 * against.decoding, run_measured=None, measured_how="Step again", run_against=against,
        run_below=why)
    text = speed_view.summary_markdown(facts)
    assert f"- why below the prediction: {'; '.join(why)}." in text
    assert f"- measured {against.words()}" in text
