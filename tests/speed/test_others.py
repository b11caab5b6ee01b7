"""Other processes on the cores while a calibration times the machine: /proc/stat's busy time less this process's
own, over the wall time; a calibration timed on shared cores is used but never cached, and the Speed tab says so."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time

import pytest

from decoding.models import pairs
from decoding.speed import calibrate, machine, others
from tests.speed.test_calibration_cache import sample
from viz import speed as speed_view

REAL_BUSY = others.machine_busy_seconds  # the conftest fixture stubs it for every other test


def stat_file(tmp_path, user: int, system: int, idle: int, iowait: int = 0, cpu1_user: int = 0):
    """A /proc/stat of two CPUs: the machine line, cpu0 with the rest of `user`, cpu1 with `cpu1_user`."""
    path = tmp_path / "stat"
    path.write_text(f"cpu  {user} 0 {system} {idle} {iowait} 0 0 0 0 0\n"
                    f"cpu0 {user - cpu1_user} 0 {system} {idle} {iowait} 0 0 0 0 0\n"
                    f"cpu1 {cpu1_user} 0 0 0 0 0 0 0 0 0\nintr 1\n")
    return path


def test_the_busy_time_is_every_field_but_idle_and_iowait_of_the_cpus_asked_for(tmp_path) -> None:
    hz = os.sysconf("SC_CLK_TCK")
    path = stat_file(tmp_path, user=3 * hz, system=hz, idle=50 * hz, iowait=7 * hz, cpu1_user=2 * hz)
    assert REAL_BUSY(path) == pytest.approx(4.0)  # the machine's line
    assert REAL_BUSY(path, frozenset({0})) == pytest.approx(2.0) and REAL_BUSY(path, frozenset({1})) == 2.0
    assert REAL_BUSY(path, frozenset({0, 1})) == pytest.approx(4.0)
    assert REAL_BUSY(path, frozenset({0, 7})) is None  # a CPU /proc/stat does not list: unknown, not a guess
    (tmp_path / "stat").write_text("not a stat file\n")
    assert REAL_BUSY(tmp_path / "stat") is None
    assert REAL_BUSY(tmp_path / "absent") is None


class Clock:
    def __init__(self) -> None:
        self.wall = self.own = 0.0

    def perf_counter(self) -> float:
        return self.wall

    def process_time(self) -> float:
        return self.own


def test_the_meter_counts_the_others_not_this_process(tmp_path, monkeypatch) -> None:
    """Over 2 s of wall time the machine was busy 3 s, 1 s of it this process's own: the others kept 1 core busy."""
    hz = os.sysconf("SC_CLK_TCK")
    clock = Clock()
    monkeypatch.setattr(others, "time", clock)
    monkeypatch.setattr(others, "machine_busy_seconds", REAL_BUSY)
    path = stat_file(tmp_path, user=10 * hz, system=0, idle=100 * hz)
    meter, cpu1 = others.OthersMeter(path, frozenset({0, 1})), others.OthersMeter(path, frozenset({1}))
    clock.wall, clock.own = 2.0, 1.0
    stat_file(tmp_path, user=13 * hz, system=0, idle=101 * hz)
    assert meter.cores() == pytest.approx(1.0)
    assert cpu1.cores() == 0.0  # cpu1 stayed idle: this process's own second is more than it saw
    assert others.shared(meter.cores(), threads=2, cores=2) and not others.shared(meter.cores(), 2, 8)
    assert not others.shared(0.2, threads=2, cores=2) and not others.shared(None, 2, 2)


@pytest.mark.skipif(not others.PROC_STAT.is_file(), reason="reads Linux's /proc/stat")
def test_a_busy_process_beside_this_one_is_seen(monkeypatch) -> None:
    monkeypatch.setattr(others, "machine_busy_seconds", REAL_BUSY)
    spin = "import time\nend = time.time() + 1.5\nwhile time.time() < end: pass"
    hog = subprocess.Popen([sys.executable, "-c", spin])
    try:
        time.sleep(0.2)  # the child started
        meter = others.OthersMeter()
        time.sleep(1.0)
        cores = meter.cores()
    finally:
        hog.kill()
        hog.wait()
    assert cores is not None and cores >= others.SHARED_AT  # the child kept a core busy, whatever else ran


@pytest.mark.parametrize("shared", [False, True])
def test_a_calibration_timed_on_shared_cores_is_used_but_not_cached(tmp_path, monkeypatch, shared) -> None:
    def fake_measure(pair, key, progress, **_):
        note = others.words(1.2, key["threads"], 2)
        return dataclasses.replace(sample(key), others_cores=1.2 if shared else 0.1, shared=shared,
                                   notes=(note,) if shared else ())

    monkeypatch.setattr(calibrate, "measure", fake_measure)
    cal = calibrate.calibrated(pairs.load_pair("toy"), "toy", root=tmp_path)
    assert cal.shared == shared
    assert (calibrate.load_cached(cal.key, tmp_path) is None) == shared
    assert machine.cache_file(cal.key, tmp_path).is_file() != shared


def test_the_speed_summary_says_first_that_the_cores_were_shared(monkeypatch) -> None:
    key = machine.machine_key("toy", "cpu", threads=2)
    note = others.words(1.2, 2, 2)
    cal = dataclasses.replace(sample(key), others_cores=1.2, shared=True, notes=("acceptance: shipped", note, "x"))
    assert cal.shared_note() == note
    assert dataclasses.replace(cal, shared=False).shared_note() == ""
    facts = speed_view.SpeedFacts(machine="m", stock=((1, 2.0),), planned=((1, 2.0),), plan="stock", draft=((1, 1.0),),
                                  overhead_ms=0.5, shapes=(speed_view.ShapeRow("target alone", 1.0, 2.0, 1.0),),
                                  chosen="decoding without a draft", warning=note)
    text = speed_view.summary_markdown(facts)
    assert text.startswith("⚠️ other processes kept 1.2 of 2 cores busy") and "not cached" in text.splitlines()[0]
    assert not speed_view.summary_markdown(dataclasses.replace(facts, warning="")).startswith("⚠️")
