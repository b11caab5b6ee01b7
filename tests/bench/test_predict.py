"""`bench predict`: the shapes it parses, the arithmetic of its report, and a run on the toy pair whose table has
every shape and whose timed steps are the run's own steps after the first. No timing asserts."""

from __future__ import annotations

import json

import pytest

from bench import predict
from decoding.models.pairs import load_pair
from decoding.run import engine


def test_shapes_parse_and_bad_ones_say_what_is_wrong():
    assert predict.parse_shapes("alone; 1;2,1") == [(), (1,), (2, 1)]
    with pytest.raises(ValueError, match="--shapes \\(or 'alone'\\) must be comma-separated positive integers"):
        predict.parse_shapes("1;x")
    with pytest.raises(ValueError, match="positive integers"):
        predict.parse_shapes("0,1")
    with pytest.raises(ValueError, match="1..8"):
        predict.parse_shapes("9,1")
    with pytest.raises(ValueError, match="empty"):
        predict.parse_shapes(" ; ")


def test_the_report_is_predicted_over_measured_tokens_per_second():
    samples = [predict.Sample((1, 1), 2.0, 40.0, 1.5, 30.0, ("a", 0)),  # 50 tok/s predicted, 50 measured: 1.00
               predict.Sample((1, 1), 2.0, 40.0, 1.0, 25.0, ("b", 0)),  # 50 / 40: 1.25
               predict.Sample((), 1.0, 25.0, 1.0, 20.0, ("a", 0)),  # 40 / 50: 0.80
               predict.Sample((), 1.0, 25.0, 1.0, 25.0, ("b", 0))]  # 40 / 40: 1.00
    assert [round(s.ratio, 2) for s in samples] == [1.0, 1.25, 0.8, 1.0]
    assert predict.relative_ratios(samples) == {(1, 1): [pytest.approx(1.25), pytest.approx(1.25)]}
    lines = predict.report(samples, 0.8).splitlines()
    assert lines[2].startswith("| sd 1,1 | 50.0 |") and "| 1.12 [1.00-1.25] | 1.25 [1.25-1.25] |" in lines[2]
    assert lines[3].startswith("| target alone | 40.0 | 44.4 | 0.90 [0.80-1.00] | - |")


def test_the_report_names_each_shape_by_the_verifier_it_ran_with():
    """A tree at T = 0 runs as pointmass on the draft's top-k (config_of): the report says so."""
    samples = [predict.Sample((3,), 1.5, 40.0, 1.5, 40.0, ("a", 0)), predict.Sample((), 1.0, 30.0, 1.0, 30.0, ("a", 0))]
    assert predict.report(samples, 0.0).splitlines()[2].startswith("| pointmass 3 |")
    assert predict.config_of((3,), 0.0, 0, 8).verifier == "pointmass"
    assert predict.report(samples, 0.8).splitlines()[2].startswith("| rrs_wor 3 |")
    assert predict.config_of((3,), 0.8, 0, 8).verifier == "rrs_wor"


@pytest.mark.parametrize("levels", [(), (1, 1), (2, 1)])
def test_timed_steps_are_the_runs_steps_after_the_first(levels):
    pair = load_pair("toy")
    config = predict.config_of(levels, 0.8, 3, 12)
    tokens, ms, steps = predict.timed_steps(pair, config, "the cat")
    run = engine.start(pair, config, "the cat")  # the same seed: the same steps
    records = 0
    while run.step() is not None:
        records += 1
    total = len(run.state.generated_ids)
    assert steps == records - 1 and ms > 0
    first = engine.start(pair, config, "the cat")
    first.step()
    assert tokens == total - len(first.state.generated_ids)
    assert config.drafting is bool(levels) and config.record is False


def test_predict_runs_on_the_toy_pair(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SPECSCOPE_CACHE", str(tmp_path / "cache"))
    prompts = tmp_path / "p.json"
    prompts.write_text(json.dumps({"prompts": [{"kind": "toy", "prompt": "the cat"},
                                               {"kind": "toy", "prompt": "a big dog"}]}))
    assert predict.main(["--pair", "toy", "--prompts-file", str(prompts), "--repeats", "1", "--max-new-tokens", "8",
                         "--temperatures", "0.8", "--shapes", "alone;1;2,1"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| ") and not line.startswith("| shape")]
    assert [r.split(" | ")[0] for r in rows] == ["| target alone", "| sd 1", "| rrs_wor 2,1"]
    assert "2 prompts x 1 seeds" in out
