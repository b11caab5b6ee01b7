"""A verifier file is an API: the earlier `AcceptTest(candidate, token, numerator, denominator, threshold, uniform,
passed, label)` form (and `ResidualUpdate(residual=...)`) still loads, runs and certifies; a threshold that is not
min(1, numerator/denominator) is refused with one line that says what changed (decoding/verify/legacy_test.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from decoding.cli.main import main
from decoding.lab.certify import certify
from decoding.lab.custom import CustomVerifierError, load_custom, probe_cases
from decoding.lab.language import load, presets
from decoding.verify.sampling import make_generator
from decoding.verify.verdict import AcceptTest, ResidualUpdate

EARLIER = Path(__file__).resolve().parent / "files" / "earlier_readme_verifier.py"


def test_a_file_written_against_the_earlier_readme_loads_and_is_certified() -> None:
    entry = load_custom(EARLIER)
    cert = certify(entry, [load(presets()["context3"])], (2, 2), mc_samples=1500)
    assert cert.lossless and cert.max_tv < 1e-9


def test_its_tests_read_as_the_numbers_it_gave() -> None:
    entry = load_custom(EARLIER)
    p, q = probe_cases()[0]  # [V] each
    found = 0
    for seed in range(20):
        verdict = entry.verify(p, q, [1, 1, 2], make_generator(seed))
        for test in verdict.tests:
            assert test.threshold == pytest.approx(min(1.0, test.numerator / test.denominator))
            assert test.passed == (test.uniform <= test.threshold) and test.label == "r(x)/q(x)"
            found += 1
        for update in verdict.updates:
            assert update.residual.shape == p.shape and float(update.residual.sum()) == pytest.approx(1.0)
    assert found > 20  # rejections happened: the updates were read too


@pytest.mark.parametrize("call", [
    lambda: AcceptTest(2, 7, 0.3, 0.6, 0.5, 0.25, True, "lbl"),  # earlier, positional
    lambda: AcceptTest(2, 7, 0.3, 0.6, 0.5, 0.25, True),  # earlier, no label
    lambda: AcceptTest(candidate=2, token=7, numerator=0.3, denominator=0.6, threshold=0.5, uniform=0.25,
                       passed=True),  # earlier, by keyword
    lambda: AcceptTest(2, 7, 0.3, 0.6, 0.25, True),  # current, no label
    lambda: AcceptTest(2, 7, 0.3, denominator_value=0.6, uniform=0.25, passed=True),  # current, by keyword
    lambda: AcceptTest(candidate=2, token=7, numerator=0.3, denominator=0.6, uniform=0.25, passed=True,
                       label="r(x)/q(x)"),  # the README's form
])
def test_every_form_builds_the_same_test(call) -> None:
    test = call()
    want = AcceptTest(2, 7, 0.3, 0.6, 0.25, True, test.label)
    assert test == want and test.threshold == 0.5 and test.denominator == 0.6


def test_residual_update_reads_the_earlier_keywords() -> None:
    r, d = torch.tensor([0.5, 0.5]), torch.tensor([1.0, 0.0])
    assert ResidualUpdate(after_test=1, residual=r, draft=d, note="n") == ResidualUpdate(1, r, d, "n")
    with pytest.raises(TypeError, match="needs the residual row"):
        ResidualUpdate(0)


def test_a_threshold_that_is_not_the_numbers_ratio_is_refused_in_one_line(tmp_path) -> None:
    with pytest.raises(ValueError, match=r"threshold 0\.7 .* -> 0\.5; the threshold is now derived"):
        AcceptTest(0, 5, 0.3, 0.6, 0.7, 0.4, True, "x")
    wrong = tmp_path / "wrong_threshold.py"
    halved = "threshold = min(1.0, num / den) / 2"
    wrong.write_text(EARLIER.read_text().replace("threshold = min(1.0, num / den)", halved))
    with pytest.raises(CustomVerifierError, match="raised ValueError: AcceptTest was given threshold") as info:
        load_custom(wrong)
    assert "\n" not in str(info.value)


def test_too_many_values_say_what_changed(capsys, tmp_path) -> None:
    with pytest.raises(TypeError, match="no longer takes a threshold"):
        AcceptTest(0, 5, 0.3, 0.6, 0.5, 0.4, True, "x", "extra")
    bad = tmp_path / "too_many.py"
    bad.write_text(EARLIER.read_text().replace('"r(x)/q(x)")', '"r(x)/q(x)", 0)'))
    assert main(["certify", "--verifier-file", str(bad), "--k", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no longer takes a threshold" in err and "Traceback" not in err
