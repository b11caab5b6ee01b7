"""`python -m bench WHICH ...` and the old forms that hand over to it (`python -m decoding bench|train-head`,
`app.py --bench-step N`): CLI contracts kept after the benchmarks moved out of decoding/cli and ui/."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench import main as bench_main
from decoding.cli import handoff

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_every_command_names_a_module_with_main():
    import importlib.util

    for name, command in bench_main.COMMANDS.items():
        assert importlib.util.find_spec(command.module) is not None, name


@pytest.mark.parametrize("entry", [("-m", "bench", "train-head"), ("-m", "decoding", "train-head")])
def test_train_head_help_through_either_entry(entry):
    done = run(*entry, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: python -m bench train-head") and "--prompts" in done.stdout


@pytest.mark.parametrize("entry", [("-m", "bench"), ("-m", "decoding", "bench")])
def test_an_unknown_bench_is_one_line(entry):
    done = run(*entry, "no-such-bench")
    assert done.returncode == 2
    assert done.stderr.strip() == ("error: unknown bench 'no-such-bench'; one of: " + ", ".join(bench_main.COMMANDS))


def test_bench_without_a_command_prints_the_commands():
    assert bench_main.main([]) == 2
    done = run("-m", "bench", "--help")
    assert done.returncode == 0 and all(name in done.stdout for name in bench_main.COMMANDS)


def test_the_app_bench_step_flag_hands_over_to_bench_step(monkeypatch):
    import app
    from bench import app_step

    calls = []
    monkeypatch.setattr(app_step, "bench_step", lambda kind, clicks, repeats: calls.append((kind, clicks, repeats)))
    with pytest.raises(SystemExit) as done:
        app.main(["--pair", "toy", "--bench-step", "5"])
    assert done.value.code == 0
    assert calls == [("toy", 5, 3)]


def test_a_missing_bench_package_is_one_line(monkeypatch, capsys):
    monkeypatch.setattr(handoff, "BENCH_ENTRY", "bench.not_here")
    assert handoff.hand_to_bench(["speed"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "moved to the top-level `bench` package" in err
