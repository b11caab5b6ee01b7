"""The pair's acceptance, kept apart from the machine's costs: the shipped entry is read only for its exact key,
a measured one is kept per pair and read back for any machine key, `fresh_acceptance` measures again, and the
shipped acceptance of every built-in pair is current (its key is the loaded pair's; the head pair's T = 0
table is what a measurement gives now)."""

from __future__ import annotations

import json

import pytest

from decoding.models import pairs
from decoding.speed import calibrate, machine, pair_acceptance
from decoding.speed.chooser import AcceptanceTable

TABLES = {0.0: AcceptanceTable({1: (0.6, 0.5)}, 12), 0.8: AcceptanceTable({1: (0.5,), 2: (0.66,)}, 9)}
KEY = {"version": 1, "pair": "embedded-head", "target": "T", "draft": "D", "draft_dtype": "float32",
       "prompts": ["a", "b"], "new_tokens": 32, "depth": 4, "temperatures": [0.0, 0.8], "source": "wheel:x",
       "head": "abc"}


@pytest.mark.parametrize("change", [{"head": "retrained"}, {"prompts": ["a"]}, {"version": 0}, {"source": "hub:y"},
                                    {"new_tokens": 16}, {"draft": "another draft"}])
def test_the_shipped_acceptance_is_read_only_for_its_exact_key(tmp_path, change):
    path = tmp_path / "acceptance.json"
    pair_acceptance.ship(KEY, TABLES, path)
    pair_acceptance.ship({**KEY, "pair": "embedded"}, {0.0: TABLES[0.0]}, path)  # a second pair's entry
    assert pair_acceptance.shipped(KEY, path) == TABLES  # the first entry kept beside the second
    assert pair_acceptance.shipped({**KEY, "pair": "embedded"}, path) == {0.0: TABLES[0.0]}
    assert pair_acceptance.shipped({**KEY, **change}, path) is None
    assert json.loads(path.read_text())["pairs"]["embedded-head"]["key"] == KEY  # readable, with its key


def test_a_measured_acceptance_is_kept_for_the_pair_and_read_back_for_another_machine_key(
        tiny_matching_folders, tmp_path, monkeypatch):
    monkeypatch.setattr(calibrate, "ROWS", (1, 2))
    monkeypatch.setattr(calibrate, "CALIBRATION_PROMPTS", ("a b c d", "e f a b"))
    target, draft = tiny_matching_folders
    pair = pairs.load_pair("custom", target=str(target), draft=str(draft), device="cpu")
    first = calibrate.calibrated(pair, "custom", root=tmp_path, force=True)
    assert any(n.startswith("acceptance: measured now") for n in first.notes)
    measured = []
    real_measure = pair_acceptance.measure
    monkeypatch.setattr(pair_acceptance, "measure", lambda *a: measured.append(a) or real_measure(*a))
    monkeypatch.setattr(machine.torch, "get_num_threads", lambda: 97)  # another machine key: costs timed again
    again = calibrate.calibrated(pair, "custom", root=tmp_path)
    assert again.key["threads"] == 97 and again.key != first.key and not measured
    assert again.acceptance == first.acceptance and any("cached" in n for n in again.notes)
    fresh = calibrate.calibrated(pair, "custom", root=tmp_path, fresh_acceptance=True)
    assert len(measured) == 1 and any(n.startswith("acceptance: measured now") for n in fresh.notes)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["embedded-head", "embedded", "lookup"])
def test_every_built_in_pair_ships_an_acceptance_for_its_current_key(kind):
    pair = pairs.load_pair(kind, device="cpu")
    key, _ = pair_acceptance.key_and_prompts(pair, kind, calibrate.prompts_for(kind))
    tables = pair_acceptance.shipped(key)
    assert tables is not None, f"assets/speed/acceptance.json has no entry for {kind} under its current key: " \
                               f"python -m bench calibrate --pair {kind} --ship-acceptance"
    assert set(tables) == set(pair_acceptance.TEMPERATURES)
    assert set(tables[0.8].rates) == set(pair_acceptance.WIDTHS) == {1, 2, 3, 4}
    assert set(tables[0.0].rates) == set(pair_acceptance.WIDTHS) == {1, 2, 3, 4}


@pytest.mark.slow
def test_the_shipped_head_pair_acceptance_is_what_a_measurement_gives_now(monkeypatch):
    """The runs are seeded and exact: measured again (T = 0 only, to keep it short) the table is the shipped one."""
    pair = pairs.load_pair("embedded-head", device="cpu")
    key, prompts = pair_acceptance.key_and_prompts(pair, "embedded-head", calibrate.prompts_for("embedded-head"))
    shipped = pair_acceptance.shipped(key)
    monkeypatch.setattr(pair_acceptance, "TEMPERATURES", (0.0,))
    tables, runs = pair_acceptance.measure(pair, prompts)
    assert len(runs) == len(prompts) and tables[0.0].nodes == shipped[0.0].nodes
    for k in pair_acceptance.WIDTHS:  # the top-k rates of T = 0's trees
        assert tables[0.0].rates[k] == pytest.approx(shipped[0.0].rates[k], abs=1e-6)
