"""The calibration cache: a JSON a user can read, round-tripped exactly, kept per machine key, invalidated by
any change of key or format, redone by force; and a real (tiny) pair calibrated end to end."""

from __future__ import annotations

import dataclasses
import json

import pytest

from decoding.models import pairs
from decoding.models.head import weights as draft_head
from decoding.run.costs import StepCosts
from decoding.speed import calibrate, machine
from decoding.speed.chooser import AcceptanceTable

COSTS = StepCosts(target=((1, 30.0), (3, 60.0), (8, 90.0)), draft=((1, 3.0), (4, 5.0)), overhead=1.5)


def sample(key: dict) -> calibrate.Calibration:
    return calibrate.Calibration(
        key=key, costs=COSTS, stock_costs=StepCosts(((1, 40.0), (3, 80.0)), ((1, 3.0),), 1.5),
        plan={1: "numpy", 3: "split"}, products={1: {"stock": 12.5, "numpy": 4.5, "split": 11.0}},
        acceptance={0.0: AcceptanceTable({1: (0.6, 0.5)}, 12), 0.8: AcceptanceTable({1: (0.5,), 2: (0.66,)}, 9)},
        seconds=4.2, when="2026-11-25 21:00:00", notes=("a note",), pad={1: 4, 2: 4},
        pad_trials={1: calibrate.PadTrial(4, 35.5, 32.0, True), 3: calibrate.PadTrial(6, 33.0, 33.5, False)})


def test_the_json_round_trips_and_is_readable(tmp_path):
    key = machine.machine_key("embedded-head", "cpu", threads=2)
    cal = sample(key)
    path = calibrate.save(cal, tmp_path)
    assert path.parent == tmp_path / "speed" and path.suffix == ".json"
    plain = json.loads(path.read_text())
    assert plain["key"]["model"] == machine.cpu_model() and plain["plan"] == {"1": "numpy", "3": "split"}
    assert plain["costs"]["target"] == [[1, 30.0], [3, 60.0], [8, 90.0]] and plain["pad"] == {"1": 4, "2": 4}
    assert calibrate.load_cached(key, tmp_path) == cal


@pytest.mark.parametrize("change", [{"threads": 3}, {"torch": "0.0.0"}, {"model": "another CPU"}, {"pair": "embedded"},
                                    {"device": "cuda"}])
def test_another_machine_key_does_not_see_the_cache(tmp_path, change):
    key = machine.machine_key("embedded-head", "cpu", threads=2)
    calibrate.save(sample(key), tmp_path)
    assert calibrate.load_cached({**key, **change}, tmp_path) is None


def test_a_file_of_another_format_or_key_is_ignored(tmp_path):
    key = machine.machine_key("embedded-head", "cpu", threads=2)
    path = calibrate.save(sample(key), tmp_path)
    plain = json.loads(path.read_text())
    path.write_text(json.dumps({**plain, "version": 999}))
    assert calibrate.load_cached(key, tmp_path) is None
    path.write_text(json.dumps({**plain, "key": {**key, "threads": 7}}))  # a file under this name, another key
    assert calibrate.load_cached(key, tmp_path) is None
    path.write_text("{not json")
    assert calibrate.load_cached(key, tmp_path) is None


def test_a_cached_plan_naming_a_method_that_no_longer_runs_here_is_measured_again(tmp_path, monkeypatch):
    """The native product needs a C compiler: a calibration that chose it is stale once the compiler is gone."""
    key = machine.machine_key("embedded-head", "cpu", threads=2)
    cal = dataclasses.replace(sample(key), plan={1: "native", 2: "onednn"})
    calibrate.save(cal, tmp_path)
    monkeypatch.setattr(calibrate, "available_products", lambda: ("stock", "onednn", "native"))
    assert calibrate.load_cached(key, tmp_path) == cal
    monkeypatch.setattr(calibrate, "available_products", lambda: ("stock", "onednn"))
    assert calibrate.load_cached(key, tmp_path) is None


def test_calibrated_measures_once_then_reads_the_cache_and_force_measures_again(tmp_path, monkeypatch):
    measured = []

    def fake_measure(pair, key, progress, **_):
        measured.append(key)
        return sample(key)

    monkeypatch.setattr(calibrate, "measure", fake_measure)
    pair = pairs.load_pair("toy")
    first = calibrate.calibrated(pair, "toy", root=tmp_path)
    again = calibrate.calibrated(pair, "toy", root=tmp_path)
    assert len(measured) == 1 and again == first
    calibrate.calibrated(pair, "toy", root=tmp_path, force=True)
    assert len(measured) == 2
    monkeypatch.setattr(machine.torch, "get_num_threads", lambda: 97)  # another thread count: another key
    calibrate.calibrated(pair, "toy", root=tmp_path)
    assert len(measured) == 3 and measured[-1]["threads"] == 97


def test_a_tiny_pair_calibrates_end_to_end(tiny_matching_folders, tmp_path, monkeypatch):
    monkeypatch.setattr(calibrate, "ROWS", (1, 2, 4))
    target, draft = tiny_matching_folders
    pair = pairs.load_pair("custom", target=str(target), draft=str(draft), device="cpu")
    monkeypatch.setattr(calibrate, "CALIBRATION_PROMPTS", ("a b c d", "e f a b"))
    cal = calibrate.calibrated(pair, "custom", root=tmp_path, force=True)
    assert [n for n, _ in cal.costs.target] == [1, 2, 4] and all(ms > 0 for _, ms in cal.costs.target)
    assert [n for n, _ in cal.costs.draft] == [1, 2, 4] and cal.costs.overhead >= 0  # every level size timed
    assert set(cal.acceptance) == {0.0, 0.8} and set(cal.acceptance[0.8].rates) == {1, 2, 3, 4}
    assert all(0 <= a <= 1 for t in cal.acceptance.values() for v in t.rates.values() for a in v)
    assert calibrate.load_cached(cal.key, tmp_path) == cal


def fake_forwards(monkeypatch, ms) -> list:
    """Put synthetic timed forwards in place of calibrate._Forwards: `ms(n, plan, calls)` gives a forward's
    ms; the list returned holds each call's (rows, plan), in order."""
    calls: list = []

    class Fake:
        def __init__(self, pair, prompt_ids):
            pass

        def __call__(self, n, plan, pad=None):
            calls.append((n, plan))
            return ms(n, plan, calls)

    monkeypatch.setattr(calibrate, "_Forwards", Fake)
    return calls


def test_a_hopeless_method_is_timed_no_further_and_stock_always_is(monkeypatch):
    """method_table on synthetic forward times: numpy 10x the fastest in the untimed first round is dropped
    then (one call), split 3x is dropped after its first timed call (two calls), both for every larger size;
    stock, the baseline, is never dropped however slow; a method within 2x stays."""
    cost = {"stock": 50.0, "onednn": 20.0, "numpy": 200.0, "split": 60.0, "mkl2": 35.0}
    timed = fake_forwards(monkeypatch, lambda n, plan, _: cost[plan[n]] * (1 + n / 10))
    table = calibrate.method_table(None, [1], tuple(cost), rows=(1, 2, 4), repeats=2)
    calls = [(n, plan[n]) for n, plan in timed]
    assert set(table[1]) == {"stock", "onednn", "split", "mkl2"}  # numpy: no timed call
    assert set(table[2]) == set(table[4]) == {"stock", "onednn", "mkl2"}
    assert calls.count((1, "numpy")) == 1 and calls.count((1, "split")) == 2 and calls.count((4, "stock")) == 3
    assert table[4]["onednn"] == pytest.approx(20.0 * 1.4)
    assert calibrate.products.expand(calibrate.products.choose(table), (1, 2, 4), up_to=6) == {
        n: "onednn" for n in range(1, 7)}


def test_the_curve_times_only_the_sizes_the_method_stage_did_not(monkeypatch):
    """target_curve with `known` (the method stage's times with the chosen plan): those sizes are taken as they
    are, the others timed after one untimed call each, and the curve comes out sorted by rows."""
    timed = fake_forwards(monkeypatch, lambda n, _, calls: 10.0 * n + len(calls) % 2)  # repeats differ by 1 ms
    curve = calibrate.target_curve(None, [1], {}, rows=(1, 2, 3, 4, 6), repeats=3, known={1: 7.0, 4: 33.0})
    calls = [n for n, _ in timed]
    assert [n for n, _ in curve] == [1, 2, 3, 4, 6]
    assert dict(curve)[1] == 7.0 and dict(curve)[4] == 33.0
    assert sorted(set(calls)) == [2, 3, 6] and len(calls) == 3 * 4
    assert dict(curve)[2] == 20.0 and dict(curve)[3] == 30.0  # medians of (n0, n1, n0): the first call untimed


@pytest.mark.parametrize("sixteen, timed_above", [(21.0, [24, 32]), (60.0, [])])
def test_sizes_above_sixteen_rows_are_timed_only_on_a_flat_curve(monkeypatch, sixteen, timed_above):
    """A GPU-like curve (16 rows at 1.05x one) is timed to 32 rows, where deep trees may win; a CPU's steep one
    (3x) stops at 16, and the chooser extends its last slope."""
    timed = fake_forwards(monkeypatch, lambda n, _, calls: 20.0 + n)
    curve = calibrate.target_curve(None, [1], {}, rows=(1, 8, 16, 24, 32), known={8: 21.0, 16: sixteen})
    calls = [n for n, _ in timed]
    assert sorted(set(calls)) == [1, *timed_above]
    assert [n for n, _ in curve] == [1, 8, 16, *timed_above]


def test_a_cold_accelerators_first_forwards_stay_out_of_the_curve(monkeypatch):
    """A GPU's first forwards in a process are slow (clock ramp, first kernel loads): here the first 25 calls
    cost 3x. warm_up spends them untimed (every size, at least once each), so the curve is the warm one;
    without it the small sizes, timed first, would carry the cold cost."""
    warm = lambda n: 20.0 + 0.1 * n  # noqa: E731
    timed = fake_forwards(monkeypatch, lambda n, _, calls: warm(n) * (3.0 if len(calls) <= 25 else 1.0))
    forward = calibrate._Forwards(None, [1])
    assert calibrate.warm_up(forward, (1, 2, 4, 8), seconds=0.0) == 4  # one sweep at least, in order
    assert [n for n, _ in timed] == [1, 2, 4, 8]
    made = calibrate.warm_up(forward, (1, 2, 4, 8), seconds=0.05)  # these fake forwards cost no time
    assert made > 25 and made % 4 == 0
    curve = calibrate.target_curve(None, [1], None, rows=(1, 2, 4, 8), forward=forward)
    assert curve == tuple((n, pytest.approx(warm(n))) for n in (1, 2, 4, 8))


def test_the_calibration_keeps_the_padding_its_padded_forwards_confirm(monkeypatch):
    """padded_curve on synthetic forwards (ms by rows and the padding on): 2 and 4 rows run as 6 cost 2 ms less
    than 6 rows (attention and the norms see the real rows only), so they are kept and the curve reads the
    padded times; 3 rows run as 6 are timed slower than 3 rows (a kernel's choice seen once), so 3 rows stay
    unpadded; 1 row (numpy's, the cheapest by far) is not tried. Each trial alternates the unpadded and the
    padded forward, so a drift of the machine hits both alike: here every call costs 0.1 ms more than the last."""
    from tests.models.test_few_rows import ONE_THREAD

    unpadded, calls = dict(ONE_THREAD), []

    class Fake:
        def __call__(self, n, plan, pad=None):
            calls.append((n, dict(pad or {})))
            run_as = (pad or {}).get(n, n)
            extra = 0.0 if run_as == n else (8.0 if n == 3 else -2.0)
            return unpadded[run_as] + extra + 0.1 * len(calls)

    curve, pad, trials = calibrate.padded_curve({}, ONE_THREAD, Fake(), lambda _: None, repeats=3)
    assert [n for n, _ in calls] == [2] * 8 + [3] * 8 + [4] * 8
    assert [p for _, p in calls[:4]] == [{}, {2: 6}, {}, {2: 6}]  # alternately
    assert dict(curve)[2] == pytest.approx(48.7 - 2.0 + 0.6) and dict(curve)[4] == pytest.approx(48.7 - 2.0 + 2.2)
    assert dict(curve)[3] == 53.0 and dict(curve)[1] == 39.1  # not padded: the times before
    assert pad == {2: 6, 4: 6, 5: 6}
    assert {n: (t.run_as, t.kept) for n, t in trials.items()} == {2: (6, True), 3: (6, False), 4: (6, True)}
    assert trials[3].padded_ms > trials[3].unpadded_ms  # what the bench prints, as timed


def test_a_retrained_head_does_not_see_the_old_heads_calibration(tmp_path, monkeypatch):
    key = machine.machine_key("embedded-head", "cpu", threads=2)
    assert key["head"] == machine.head_digest() and "head" not in machine.machine_key("embedded", "cpu")
    calibrate.save(sample(key), tmp_path)
    monkeypatch.setattr(machine, "head_digest", lambda: "another head")  # new weights in assets/draft_head
    assert calibrate.load_cached(machine.machine_key("embedded-head", "cpu", threads=2), tmp_path) is None
    assert calibrate.load_cached(key, tmp_path) is not None


def test_the_head_digest_follows_the_file_it_hashes(tmp_path):
    weights = tmp_path / draft_head.WEIGHTS
    weights.write_bytes(b"one head")
    first = machine.head_digest(tmp_path)
    assert machine.head_digest(tmp_path) == first  # hashed once per file version
    weights.write_bytes(b"another head, retrained")  # another size (and time): hashed again
    assert machine.head_digest(tmp_path) != first


def test_the_head_digest_follows_the_ids_the_head_scores(tmp_path):
    """ranked_ids.py: the same weights scoring other ids are another draft; without a ranking, the old key."""
    import hashlib

    from decoding.models.head.ranked_ids import IDS

    weights = tmp_path / draft_head.WEIGHTS
    weights.write_bytes(b"one head")
    alone = machine.head_digest(tmp_path)
    assert alone == hashlib.sha256(b"one head").hexdigest()[:16]  # the key heads without a ranking always had
    (tmp_path / IDS).write_bytes(b"the commonest ids")
    ranked = machine.head_digest(tmp_path)
    (tmp_path / IDS).write_bytes(b"other commonest ids")
    assert len({alone, ranked, machine.head_digest(tmp_path)}) == 3
