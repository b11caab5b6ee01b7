"""`python -m bench theory`: new visit_theory against the pre-change revision's code, same numbers."""

from __future__ import annotations

import subprocess
import sys

from bench import theory as bench_theory


def run_bench(*flags: str, entry: tuple[str, ...] = ("bench",)) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *entry, "theory", *flags],
                          capture_output=True, text=True, cwd=bench_theory.ROOT, timeout=600)


def test_bench_theory_runs_against_a_baseline_revision():
    """Against HEAD (present in any checkout, shallow clones too): the bench loads a revision's theory code
    and reports both timings and the differences. That the fast code equals the old one is proved by the
    unit tests (tests/verify/test_theory_fast.py: pruned = full scan, bounds and quadrature vs enumeration);
    the bench's default baseline (66ef243) shows it on real-size laws."""
    done = run_bench("--baseline", "HEAD", "--vocab", "3000", "--nodes", "2", "--repeats", "1", "--ks", "2,3")
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines() if line.split() and line.split()[0] in ("2", "3")]
    assert [r[0] for r in rows] == ["2", "3"]
    for row in rows:
        old_ms, new_ms, d_acc, d_opt = float(row[1]), float(row[2]), float(row[4]), float(row[5])
        assert old_ms > 0 and new_ms > 0
        assert d_acc == 0.0  # same exact sums, same seeded draws
        assert d_opt <= 1e-12  # the same quadrature


def test_bench_theory_bad_baseline_is_one_line():
    """Through the old form too (`python -m decoding bench ...` hands over to bench: a CLI contract)."""
    done = run_bench("--baseline", "no-such-revision", "--nodes", "1", entry=("decoding", "bench"))
    assert done.returncode == 2
    assert done.stderr.strip().startswith("error:") and "no-such-revision" in done.stderr
    assert "Traceback" not in done.stderr
