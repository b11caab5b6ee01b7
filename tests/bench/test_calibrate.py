"""`bench calibrate`: its report on the toy pair (every section, the cache path), and the line that compares
transformers' own one-token forward with the calibrated one. No timing asserts."""

from __future__ import annotations

import pytest

from bench import calibrate as bench_calibrate
from decoding.models import pairs
from decoding.run.costs import StepCosts


def test_calibrate_reports_every_section_on_the_toy_pair(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SPECSCOPE_CACHE", str(tmp_path))
    assert bench_calibrate.main(["--pair", "toy", "--force", "--top", "2"]) == 0
    out = capsys.readouterr().out
    assert str(tmp_path / "speed") in out and "pair toy" in out
    for section in ("target forward, N rows", "draft, one level", "a row", "transformers' own forward: none",
                    "T = 0.0: acceptance by depth", "T = 0.8: acceptance by depth", "| target alone | 1.00 |"):
        assert section in out, section


@pytest.mark.parametrize("calibrated_ms, verdict", [(1e-6, "is faster"), (1e6, "NOT faster")])
def test_the_generate_line_compares_transformers_forward_with_the_calibrated_one(
        tiny_matching_folders, calibrated_ms, verdict, monkeypatch):
    from decoding.speed import calibrate

    monkeypatch.setattr(calibrate, "CALIBRATION_PROMPTS", ("a b c d",))  # words the tiny vocabulary has
    target, draft = tiny_matching_folders
    pair = pairs.load_pair("custom", target=str(target), draft=str(draft), device="cpu")
    ms = bench_calibrate.generate_forward_ms(pair, "a b c", repeats=3)
    assert ms is not None and ms > 0

    class Cal:
        key = {"pair": "custom"}
        costs = StepCosts(target=((1, calibrated_ms),), draft=((1, 1.0),))

    line = bench_calibrate.generate_line(pair, Cal())
    assert f"{calibrated_ms:.1f} ms" in line and verdict in line


def test_the_padding_line_says_each_trial_as_timed_and_whether_it_was_kept():
    from decoding.speed import machine
    from tests.speed.test_calibration_cache import sample

    line = bench_calibrate.pad_trials_line(sample(machine.machine_key("embedded-head", "cpu")))
    assert line.endswith("1 row as 4: 35.5 -> 32.0 (kept); 3 rows as 6: 33.0 -> 33.5 (not 5 % faster: unpadded)")
