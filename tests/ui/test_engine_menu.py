"""The app's engine-preset menu (ui/controls.engine_chosen): picking a preset sets the verifier and tree-shape
controls so that the boundary (ui.session.configure) builds that preset's verifier and shape; None / "" (the
page's null, the "none" item) and an unknown name change nothing."""

from __future__ import annotations

import pytest

from decoding.run.engine_presets import PRESETS
from ui.caps import Caps
from ui.controls import engine_choices, engine_chosen
from ui.session import Controls, configure

FIELDS = ("verifier", "shape", "branching", "sequences", "depth")


def _applied(updates) -> dict:
    """The control values after the page applies the handler's updates to the defaults."""
    values = {name: getattr(Controls(), name) for name in FIELDS}
    for name, update in zip(FIELDS, updates, strict=True):
        if "value" in update:
            values[name] = update["value"]
    return values


@pytest.mark.parametrize("key", list(PRESETS))
def test_a_preset_sets_the_controls_to_its_verifier_and_shape(key):
    *updates, info = engine_chosen(key)
    configured = configure(Caps(), {**_applied(updates), "pair": "toy", "prompt": "the cat"})
    preset = PRESETS[key]
    assert configured.config.verifier == preset.verifier and configured.config.shape == preset.shape
    assert f"]({preset.source})" in info  # a link to what was read


@pytest.mark.parametrize("value", [None, ""])
def test_no_preset_changes_nothing(value):
    *updates, info = engine_chosen(value)
    assert all("value" not in u for u in updates) and info == ""


def test_an_unknown_preset_says_so_in_one_line():
    *updates, info = engine_chosen("vllm-nonsense")
    assert all("value" not in u for u in updates)
    assert info.startswith("⚠️ unknown engine preset") and "\n" not in info


def test_the_menu_lists_none_then_every_preset():
    values = [v for _, v in engine_choices()]
    assert values == ["", *PRESETS]
