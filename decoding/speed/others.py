"""Whether other processes shared the cores while a calibration timed this machine.

Why: a calibration is cached until the user asks for another, and the chooser reads every later run's costs
from it. One timed while something else ran (a test suite, another model loading) had a one-row forward at
420 ms where the quiet machine takes 16, and a plan picked on those numbers; nothing said so (docs/speed.md,
"The head trained on again").

How: Linux's /proc/stat counts each CPU's busy time; over the CPUs this process may run on, its own CPU time
(`time.process_time`, all its threads, the BLAS and OpenMP pools included) is taken out, and what is left over
the wall time is the cores other processes kept busy there (in a container /proc/stat is the host's: the other
CPUs' work stays out). Counting our own threads' share instead would not do:
a one-thread torch calls numpy's OpenBLAS with its own threads, so a quiet one-thread forward can use two cores.
The cores were shared when the others' cores and the threads torch uses need more than the cores this process
may run on. Where /proc/stat cannot be read (macOS, Windows), nothing is said.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

PROC_STAT = Path("/proc/stat")
IDLE_FIELDS = (3, 4)  # idle and iowait in the "cpu" line's fields (user nice system idle iowait irq ...)


def machine_busy_seconds(stat: Path = PROC_STAT, cpus: frozenset[int] | None = None) -> float | None:
    """The busy CPU seconds since boot (every field but idle and iowait) of the CPUs `cpus` (their "cpuN" lines;
    None: the machine's "cpu" line), or None where /proc/stat cannot be read. In a container /proc/stat is the
    host's: counting only the CPUs this process may run on keeps other containers' work on other CPUs out."""
    try:
        lines = stat.read_text(encoding="ascii").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    wanted = {"cpu"} if cpus is None else {f"cpu{c}" for c in cpus}
    busy, found = 0, set()
    for line in lines:
        fields = line.split()
        if not fields or fields[0] not in wanted:
            continue
        try:
            ticks = [int(v) for v in fields[1:9]]  # guest time is inside user already
        except ValueError:
            return None
        if len(ticks) <= max(IDLE_FIELDS):
            return None
        busy += sum(t for i, t in enumerate(ticks) if i not in IDLE_FIELDS)
        found.add(fields[0])
    return busy / os.sysconf("SC_CLK_TCK") if found == wanted else None


@dataclass
class OthersMeter:
    """Started before the timings, read after: the cores other processes kept busy meanwhile (None: unknown)."""

    stat: Path = PROC_STAT
    cpus: frozenset[int] | None = None  # the CPUs counted (None: this process's, where the OS says)

    def __post_init__(self) -> None:
        if self.cpus is None:
            self.cpus = affinity()
        self._wall, self._own = time.perf_counter(), time.process_time()
        self._busy = machine_busy_seconds(self.stat, self.cpus)

    def cores(self) -> float | None:
        busy = machine_busy_seconds(self.stat, self.cpus)
        wall = time.perf_counter() - self._wall
        if busy is None or self._busy is None or wall <= 0:
            return None
        others = (busy - self._busy) - (time.process_time() - self._own)
        return max(0.0, others / wall)


def affinity() -> frozenset[int] | None:
    """The CPUs this process may run on, where the OS says (Linux); else None."""
    try:
        return frozenset(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None


def usable_cores() -> int:
    """The cores this process may run on (its affinity where the OS says, else the machine's)."""
    cpus = affinity()
    return len(cpus) if cpus else os.cpu_count() or 1


SHARED_AT = 0.5  # others keeping half a core busy or more, on average, where the cores were all asked for


def shared(others_cores: float | None, threads: int, cores: int) -> bool:
    """Whether the cores were shared: others kept at least SHARED_AT of a core busy and, with the threads torch
    uses, needed more cores than there are."""
    return others_cores is not None and others_cores >= SHARED_AT and others_cores + threads > cores


SAID = "other processes kept"  # how the calibration's note begins (the Speed tab finds it by it)


def words(others_cores: float, threads: int, cores: int) -> str:
    return (f"{SAID} {others_cores:.1f} of {cores} cores busy while this calibration timed the "
            f"machine with {threads} threads: its times may be high, so it is not cached; calibrate again on a quiet "
            f"machine (`python -m bench calibrate --force`, or the Speed tab's button)")
