"""The API helper the served-app tests share: Step's arguments follow the endpoint's own parameter list, so
an option widget added to the page (a new parameter, anywhere in the order) gets its default, and every
control its value by label."""

from __future__ import annotations

from tests.ui.app_session import LABELS, arguments

CONTROLS = {"prompt": "the cat", "seed": 3, "pair": "toy"}


def parameter(label: str, default=None) -> dict:
    return {"label": label, "parameter_has_default": default is not None, "parameter_default": default}


def test_controls_go_by_label_and_a_new_option_gets_its_default():
    params = [parameter("a new option", default=7), parameter(LABELS["seed"], 0), parameter(LABELS["prompt"], ""),
              parameter("another new option", default=["x"]), parameter(LABELS["pair"], "embedded")]
    assert arguments(params, CONTROLS) == [7, 3, "the cat", ["x"], "toy"]


def test_a_control_left_out_gets_the_endpoints_default():
    params = [parameter(LABELS["prompt"], ""), parameter(LABELS["top_p"], 1.0)]
    assert arguments(params, {"prompt": "a dog"}) == ["a dog", 1.0]
