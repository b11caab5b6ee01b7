"""The CLI: a trace written by `generate` loads back equal to the run's records; user errors exit non-zero
with one readable line and no traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from decoding.models import pairs as models
from decoding.run import engine
from decoding.run.config import DecodeConfig
from decoding.run.schema import trace_from_json

ROOT = Path(__file__).resolve().parents[2]


def run_cli(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "decoding", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


def test_trace_round_trip_through_the_cli(tmp_path):
    out = tmp_path / "trace.json"
    res = run_cli("generate", "--pair", "toy", "--prompt", "the cat", "--verifier", "rrs", "--tree", "2,2",
                  "--temperature", "1", "--seed", "7", "--max-new-tokens", "12", "--no-chat", "--json", str(out))
    assert res.returncode == 0, res.stderr
    loaded = trace_from_json(out.read_text())
    # the same seed and settings in-process give the same records, so the file holds exactly them
    pair = models.load_pair("toy")
    config = DecodeConfig(verifier="rrs", branching=(2, 2), temperature=1.0, seed=7, max_new_tokens=12, chat=False)
    again = engine.generate(pair, config, "the cat")
    assert loaded.generated_ids == again.generated_ids
    assert _without_times(loaded.steps) == _without_times(again.steps)
    assert loaded.text == again.text and loaded.text.strip() in res.stdout
    assert loaded.summary.new_tokens == len(loaded.generated_ids) > 0
    assert json.loads(out.read_text())["format"] == "specscope-trace"


def _without_times(steps):
    from dataclasses import replace

    return [replace(s, draft_ms=0.0, target_ms=0.0, verify_ms=0.0, record_ms=0.0) for s in steps]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--verifier", "nope"], "unknown verifier 'nope'"),
        (["--verifier", "spechub", "--tree", "3,2"], "at most 2 candidates"),
        (["--tree", "3,x"], "--tree must be comma-separated positive integers"),
        (["--min-confidence", "2"], "the minimum confidence is a probability in [0, 1]"),
    ],
)
def test_bad_settings_give_a_clear_error(args, message):
    res = run_cli("generate", "--pair", "toy", "--prompt", "the cat", "--no-chat", *args)
    assert res.returncode == 2
    assert message in res.stderr
    assert "Traceback" not in res.stderr


def test_empty_prompt_is_refused():
    res = run_cli("generate", "--pair", "toy", "--prompt", "   ", "--no-chat")
    assert res.returncode == 2 and "prompt is empty" in res.stderr and "Traceback" not in res.stderr


def test_prompt_longer_than_the_context_is_refused():
    pair = models.load_pair("toy")
    words = " ".join(["the cat sat on the mat"] * (pair.max_context // 4))
    res = run_cli("generate", "--pair", "toy", "--prompt", words, "--no-chat")
    assert res.returncode == 2 and "context" in res.stderr and "Traceback" not in res.stderr


def test_missing_model_folder_is_named(tmp_path):
    missing = tmp_path / "no-such-model"
    res = run_cli("generate", "--target", str(missing), "--draft", str(missing), "--prompt", "hi")
    assert res.returncode == 2 and str(missing) in res.stderr and "Traceback" not in res.stderr


def test_vocabulary_mismatch_is_refused(tiny_model_folders):
    target, draft = tiny_model_folders
    res = run_cli("generate", "--target", str(target), "--draft", str(draft), "--prompt", "a b", "--no-chat")
    assert res.returncode == 2, res.stderr
    assert str(target) in res.stderr and str(draft) in res.stderr and "Traceback" not in res.stderr


def test_also_pair_runs_the_same_config_again_and_says_whether_the_texts_match():
    res = run_cli("generate", "--pair", "toy", "--also-pair", "toy", "--prompt", "the cat", "--verifier", "gls",
                  "--tree", "1", "--temperature", "1", "--seed", "7", "--max-new-tokens", "12", "--no-chat")
    assert res.returncode == 0, res.stderr
    first, second = res.stdout.split("--- toy (same config, same seed) ---\n")
    assert first == second and first.strip()
    assert "the two pairs emitted the same text" in res.stderr and res.stderr.count("[toy | gls | 1 |") == 2


def test_a_minimum_confidence_reaches_the_trace(tmp_path):
    out = tmp_path / "trace.json"
    res = run_cli("generate", "--pair", "toy", "--prompt", "the cat", "--verifier", "sd", "--tree", "1,1,1,1",
                  "--min-confidence", "0.2", "--seed", "5", "--max-new-tokens", "12", "--no-chat", "--json", str(out))
    assert res.returncode == 0, res.stderr
    assert "| 1,1,1,1, min confidence 0.2 |" in res.stderr  # the summary line names the floor
    loaded = trace_from_json(out.read_text())
    assert loaded.config["min_confidence"] == 0.2
    config = DecodeConfig(verifier="sd", branching=(1, 1, 1, 1), seed=5, max_new_tokens=12, chat=False,
                          min_confidence=0.2)
    assert loaded.generated_ids == engine.generate(models.load_pair("toy"), config, "the cat").generated_ids
