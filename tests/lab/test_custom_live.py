"""A custom verifier registered at launch runs live in the engine (the app's path), on the toy pair."""

from __future__ import annotations

from pathlib import Path

from decoding.lab.custom import load_custom
from decoding.models import pairs as models
from decoding.run import engine
from decoding.run.config import DecodeConfig
from decoding.verify import registry

ROOT = Path(__file__).resolve().parents[2]


def test_custom_verifier_runs_in_the_engine(monkeypatch):
    entry = load_custom(ROOT / "assets" / "examples" / "my_verifier.py")
    monkeypatch.setitem(registry.VERIFIERS, entry.name, entry)  # what the app's launch does, undone after
    config = DecodeConfig(verifier=entry.name, branching=(2, 2), temperature=1.0, seed=3, max_new_tokens=10,
                          chat=False)
    trace = engine.generate(models.load_pair("toy"), config, "the cat")
    assert trace.summary.new_tokens > 0 and trace.steps
    assert all(step.verifier == entry.name for step in trace.steps)
