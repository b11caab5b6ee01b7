"""ZeroGPU done right (decoding/models/hub/space.gpu, ui/zero_gpu.py), with a stand-in `spaces` module that
records what was decorated and the duration asked for each call: only model work is decorated (a Step, the
baseline; never the loading nor the lazy theory), and each call asks for a duration computed from its own work:
a bigger tree, a compared Step with Monte-Carlo walks or a longer baseline asks for more, within the bounds."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types

import pytest

from decoding.compare.session import CompareRun
from decoding.models.pairs import load_pair
from decoding.run import engine
from decoding.run.config import Branching, DecodeConfig
from ui import zero_gpu


class StandIn:
    """A `spaces` module as ZeroGPU's: GPU(duration=...) decorates; each call evaluates the duration with the
    call's own arguments (the dynamic duration of ZeroGPU's docs) and records it."""

    def __init__(self):
        self.decorated: dict[str, object] = {}
        self.calls: list[tuple[str, float]] = []

    def module(self) -> types.ModuleType:
        fake = types.ModuleType("spaces")

        def GPU(duration=60):  # noqa: N802 - the real name
            def wrap(fn):
                self.decorated[fn.__name__] = duration

                def held(*args, **kwargs):
                    seconds = duration(*args, **kwargs) if callable(duration) else duration
                    self.calls.append((fn.__name__, seconds))
                    return fn(*args, **kwargs)
                return held
            return wrap
        fake.GPU = GPU
        return fake


@pytest.fixture
def zero(monkeypatch):
    """ui.decode imported again under the stand-in (its decorators run at import), restored after."""
    stand_in = StandIn()
    real_find = importlib.util.find_spec
    monkeypatch.setitem(sys.modules, "spaces", stand_in.module())
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a, **k: object() if name == "spaces" else real_find(name, *a, **k))
    import ui.decode

    decode = importlib.reload(ui.decode)
    yield stand_in, decode
    monkeypatch.undo()
    importlib.reload(ui.decode)


def config(tree=(1,), **kw) -> DecodeConfig:
    return DecodeConfig(verifier="rrs", shape=Branching(tree), seed=1, max_new_tokens=8, chat=False, **kw)


def test_only_model_work_is_decorated_and_each_call_asks_for_its_own_duration(zero):
    stand_in, decode = zero
    assert set(stand_in.decorated) == {"advance", "baseline"}  # no load, no theory, no drawing
    assert all(callable(d) for d in stand_in.decorated.values())  # computed per call, not a fixed 60 s
    toy = load_pair("toy")
    small = engine.start(toy, config((1,)), "the cat")
    big = engine.start(toy, config((3, 2, 2)), "the cat")
    assert decode.advance(small) is not None and decode.advance(big) is not None  # the work still runs
    (name_a, small_s), (name_b, big_s) = stand_in.calls
    assert name_a == name_b == "advance"
    assert small_s == zero_gpu.step_seconds(small) and big_s == zero_gpu.step_seconds(big)
    assert zero_gpu.FLOOR_S <= small_s < big_s <= zero_gpu.CEILING_S


def test_a_compared_step_with_walks_asks_for_more_than_a_plain_one(zero):
    stand_in, decode = zero
    toy = load_pair("toy")
    plain = engine.start(toy, config((2, 2)), "the cat")
    compared = CompareRun(toy, config((2, 2)), engine.start(toy, config((2, 2)), "the cat").state,
                          ["rrs", "rrs_wor", "spectr"], 2000)
    decode.advance(plain)
    decode.advance(compared)
    plain_s, compared_s = (s for _, s in stand_in.calls)
    assert compared_s > plain_s
    assert compared_s == zero_gpu.step_seconds(compared)


def test_the_baseline_asks_for_its_tokens(zero):
    stand_in, decode = zero
    toy = load_pair("toy")
    run = engine.start(toy, config((1,)), "the cat")
    ids = list(run.state.prompt_ids)
    decode.baseline(toy, ids, 2, run.config)
    decode.baseline(toy, ids, 400, run.config)
    (_, few), (_, many) = stand_in.calls
    assert few < many <= zero_gpu.CEILING_S and few == zero_gpu.baseline_seconds(toy, ids, 2, run.config)


def test_without_spaces_the_functions_are_the_plain_ones():
    import ui.decode

    assert not hasattr(ui.decode.advance, "__wrapped__") and ui.decode.advance.__name__ == "advance"
