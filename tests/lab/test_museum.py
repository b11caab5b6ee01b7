"""The museum (decoding/lab/museum.py, docs/verifiers.md §20): every exhibit reproduces its published number
exactly (or says why it cannot), its buggy rule is certified NOT lossless (the mlx-swift-lm exhibit, whose claimed
bias is refuted, excepted), and its fix is certified lossless; an exhibit whose fix is dropped fails, and so does
one whose buggy rule is replaced by its fix."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest
import torch

from decoding.cli.main import main as cli_main
from decoding.lab import museum
from decoding.lab.custom import load_custom

REPORTS = {rep.key: rep for rep in museum.reports()}


def test_every_exhibit_holds():
    assert len(REPORTS) >= 6
    for rep in REPORTS.values():
        assert museum.check(rep) == [], rep.key
        assert rep.fix_lossless and rep.fix_max_tv <= 1e-9
        assert all(url.startswith("https://github.com/") for _, url in rep.links)
        assert (museum.MUSEUM_DIR / rep.file.split("/")[-1]).is_file()


def test_the_published_numbers():
    """The numbers themselves: SSD's P(argmax) 0.46 and TV 0.06; #32867's [0.75, 0.25] and TV 0.15; #47932's 1/Z at
    the issue's median Z; #459's sum p q (0.285) with TV 0; #28508's acceptance 1 ("all the time") with TV 1 - q(8);
    the argmax-draft bugs' TV 0.30 on docs §12's toy."""
    assert REPORTS["ssd-sync-greedy"].reproduced_value == pytest.approx((0.46,), abs=1e-12)
    assert REPORTS["ssd-sync-greedy"].tv == pytest.approx(0.06, abs=1e-12)
    assert REPORTS["hf-32867-greedy-assistant"].emitted == pytest.approx((0.75, 0.25), abs=1e-12)
    assert REPORTS["hf-32867-greedy-assistant"].tv == pytest.approx(0.15, abs=1e-12)
    assert REPORTS["hf-47932-raw-q"].reproduced_value == pytest.approx((1 / 0.8815,), abs=1e-12)
    assert REPORTS["mlx-swift-459-strict"].acceptance == pytest.approx(0.285, abs=1e-12)
    assert REPORTS["mlx-swift-459-strict"].tv == pytest.approx(0.0, abs=1e-12)
    assert REPORTS["hf-28508-always-accept"].reproduced_value == pytest.approx((1.0,), abs=1e-12)
    assert REPORTS["hf-28508-always-accept"].emitted == pytest.approx(museum.get("hf-28508-always-accept").q, abs=1e-15)
    assert REPORTS["hf-28508-always-accept"].tv == pytest.approx(1.0 - 1.0 / (math.exp(20.0) + 9.0), abs=1e-15)
    for key in ("jaymody-3-argmax-draft", "ds4-482-dspark-b2"):
        assert REPORTS[key].reproduces is None and REPORTS[key].why_not
        assert REPORTS[key].tv == pytest.approx(0.30, abs=1e-12)
    assert REPORTS["vllm-27077-greedy-sentinel"].tv is None
    assert "non-finite" in REPORTS["vllm-27077-greedy-sentinel"].refusal


def test_hf_28508_against_its_regression_test():
    """transformers' test_speculative_sampling at its third position (draft 5, target one-hot at 8) expects 5 rejected
    and 8 emitted (n_matches == 2): the fix does exactly that; the bug keeps 5 with probability 1 (n_matches 3, as
    PR #28508 says: "all the time"). Its softmax residual, masked, would emit 8 with e^(1-q8) / (e^(1-q8) + 9)."""
    exhibit = museum.get("hf-28508-always-accept")
    p, q = (torch.tensor(v, dtype=torch.float64) for v in (exhibit.p, exhibit.q))
    bug, fix = load_custom(exhibit.path), museum.fix_entry(exhibit)
    accept, _ = bug.conditional(p, q, [5])
    assert float(accept[0]) == 1.0
    accept, residual = fix.conditional(p, q, [5])
    assert float(accept[0]) == 0.0 and residual.tolist() == pytest.approx([0.0] * 8 + [1.0, 0.0], abs=1e-15)
    masked = bug.conditional(p, q, [5])[1]
    e = math.exp(1.0 - float(q[8]))
    assert float(masked[8]) == pytest.approx(e / (e + 9.0), abs=1e-12)  # 0.2320, not 1
    assert float(masked[5]) == pytest.approx(1.0 / (e + 9.0), abs=1e-12)  # mass on tokens the target gives 0


def test_an_exhibit_whose_buggy_rule_is_the_fix_fails(monkeypatch):
    """Broken variant: #28508's buggy file replaced by its fix (sd): acceptance at the test's node is q(8), about
    2e-9, not the published 1, so the exhibit no longer reproduces and check fails."""
    exhibit = museum.get("hf-28508-always-accept")
    monkeypatch.setattr(museum, "load_custom", lambda path: museum.fix_entry(exhibit))
    rep = museum.report(exhibit)
    assert rep.reproduces is False and rep.acceptance == pytest.approx(exhibit.q[8], abs=1e-15)
    assert museum.check(rep) and "not reproduced" in museum.check(rep)[0]


def test_each_buggy_rule_is_certified_not_lossless_except_the_refuted_claim():
    for key, rep in REPORTS.items():
        if key == "vllm-27077-greedy-sentinel":
            assert rep.bug_certified_lossless is None  # refused before certify: no law
        else:
            assert rep.bug_certified_lossless is (key == "mlx-swift-459-strict"), key


def test_an_exhibit_whose_fix_is_dropped_fails(monkeypatch):
    """Broken variant: the 'fix' is the buggy rule itself (the fix dropped): certify flags it, so check fails."""
    exhibit = museum.get("ssd-sync-greedy")
    monkeypatch.setattr(museum, "fix_entry", lambda e: load_custom(e.path))
    problems = museum.check(museum.report(exhibit))
    assert problems and "not certified lossless" in problems[0]


def test_a_wrong_published_number_fails():
    """Broken variant: a mis-quoted number (SSD's 0.40, the law before the bug) is not reproduced."""
    rep = museum.report(replace(museum.get("ssd-sync-greedy"), value=(0.40,)))
    assert rep.reproduces is False and museum.check(rep)


def test_the_cli_lists_and_writes_json(tmp_path, capsys):
    out = tmp_path / "museum.json"
    assert cli_main(["museum", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "[ssd-sync-greedy]" in text and "every fix certified lossless" in text
    body = json.loads(out.read_text())
    assert [e["key"] for e in body["exhibits"]] == [e.key for e in museum.EXHIBITS]
    assert body["exhibits"][0]["links"][0]["url"].startswith("https://github.com/tanishqkumar/ssd")
    assert cli_main(["museum", "--only", "nope"]) == 2
    assert capsys.readouterr().err.startswith("error: unknown museum exhibit 'nope'")
