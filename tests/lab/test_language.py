"""Tiny language files: the longest-listed-prefix rule, validation with one clear line, normalisation notes."""

from __future__ import annotations

import json

import pytest
import torch

from decoding.lab import language as lang


def _lang(target=None, draft=None, vocab=("a", "b", "c")):
    return {"vocab": list(vocab), "target": target or {"": [0.5, 0.3, 0.2]}, "draft": draft or {"": [0.2, 0.3, 0.5]}}


def test_longest_listed_prefix_is_used():
    L = lang.from_dict(_lang(target={"": [1, 0, 0], "0": [0, 1, 0], "0,1": [0, 0, 1]}))
    assert L.p(()).tolist() == [1, 0, 0]
    assert L.p((0,)).tolist() == [0, 1, 0]
    assert L.p((0, 1)).tolist() == [0, 0, 1]
    assert L.p((0, 1, 2, 0)).tolist() == [0, 0, 1]  # deeper: its longest listed prefix "0,1"
    assert L.p((0, 2)).tolist() == [0, 1, 0]  # "0,2" unlisted: falls back to "0"
    assert L.p((2, 1)).tolist() == [1, 0, 0]  # nothing listed below "": the root row
    assert L.q((1,)).tolist() == pytest.approx([0.2, 0.3, 0.5])


def test_rows_off_by_a_factor_are_normalised_with_a_note():
    L = lang.from_dict(_lang(target={"": [1, 1, 2]}))
    assert L.p(()).tolist() == [0.25, 0.25, 0.5]
    assert L.notes == ("target[''] summed to 4; normalised",)
    assert lang.from_dict(_lang()).notes == ()


@pytest.mark.parametrize("data,message", [
    (_lang(target={"": [0.5, -0.1, 0.6]}), "negative probability"),
    (_lang(target={"": [0.5, float("nan"), 0.5]}), "non-finite"),
    (_lang(draft={"": [0, 0, 0]}), "no mass"),
    (_lang(target={"": [0.5, 0.5]}), "list of 3 probabilities"),
    (_lang(target={"0": [0.5, 0.3, 0.2]}), "root row"),
    (_lang(target={"": [1, 0, 0], "0,x": [1, 0, 0]}), "comma-joined token ids"),
    (_lang(target={"": [1, 0, 0], "3": [1, 0, 0]}), "outside 0..2"),
    (_lang(target={"": [1, "a", 0]}), "numbers only"),
    ({"vocab": ["a"], "target": {}, "draft": {}}, "at least 2"),
    ([1, 2], "JSON object"),
])
def test_bad_rows_give_one_clear_line(data, message):
    with pytest.raises(ValueError, match=message) as err:
        lang.from_dict(data)
    assert "\n" not in str(err.value)


def test_load_reports_missing_and_malformed_files(tmp_path):
    with pytest.raises(ValueError, match="not found"):
        lang.load(tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        lang.load(bad)


def test_file_round_trip(tmp_path):
    L = lang.random_language(4, 3, 2)
    path = tmp_path / "l.json"
    path.write_text(json.dumps(L.to_dict()))
    again = lang.load(path)
    assert again.vocab == L.vocab and again.target.keys() == L.target.keys()
    assert all(torch.allclose(again.p(k), L.p(k), atol=1e-15) for k in L.target)


def test_random_languages_are_seeded_and_context_dependent():
    a, b = lang.random_language(1, 3, 2), lang.random_language(1, 3, 2)
    assert all(torch.equal(a.p(k), b.p(k)) and torch.equal(a.q(k), b.q(k)) for k in a.target)
    assert len(a.target) == 1 + 3 + 9
    assert not torch.allclose(a.p((0,)), a.p((1,)))  # the context matters
    assert not torch.equal(lang.random_language(2, 3, 2).p(()), a.p(()))


def test_presets_load_cleanly():
    names = set(lang.presets())
    assert {"worked_example", "uniform_draft", "context3", "near_deterministic", "disjoint"} <= names
    worked = lang.load(lang.presets()["worked_example"])
    assert worked.p(()).tolist() == pytest.approx([0.50, 0.30, 0.15, 0.05], abs=1e-15)
    assert worked.q(()).tolist() == pytest.approx([0.20, 0.50, 0.20, 0.10], abs=1e-15)
    disjoint = lang.load(lang.presets()["disjoint"])
    assert float((disjoint.p(()) * disjoint.q(())).sum()) == 0.0
