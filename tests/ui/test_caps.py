"""Launch caps (app.py --max-*): a frozen Caps value given to the page and the boundary, shown under the
controls and enforced on every Step with a message that names the cap."""

from __future__ import annotations

from dataclasses import fields, replace

import pytest

import app
from decoding.run import config as run_config
from decoding.run import engine
from ui import compare
from ui import controls as ui_controls
from ui.caps import CEILINGS, COMPARE_MC, Caps
from ui.session import SHAPES, Controls

TIGHT = Caps(max_nodes=10, max_depth=3, max_branch=3, max_new_tokens=20, max_prompt_chars=50, max_compare_mc=100)
_, VIEWS = app.build_page("toy", caps=TIGHT)
OK = dict(pair="toy", target=None, draft=None, prompt="the cat", verifier="rrs", shape=SHAPES[0],
          branching="3,2", sequences=2.0, depth=3.0, temperature=0.8, top_k=0.0, top_p=1.0, seed=2.0,
          max_new_tokens=6.0)


def _step(**raw):
    return VIEWS.named(ui_controls.step(VIEWS, VIEWS.inputs(None, **{**OK, **raw}), progress=None))


def test_default_caps_are_the_library_limits():
    assert Caps() == Caps(run_config.MAX_NODES, run_config.MAX_DEPTH, run_config.MAX_BRANCH,
                          run_config.MAX_NEW_TOKENS, engine.MAX_PROMPT_CHARS, COMPARE_MC)
    assert app.parse_args([]).caps == Caps() and Caps().max_compare_mc == 2000  # the compare view's slider top


def test_launch_flags_build_the_caps_and_bad_ones_exit_2(capsys):
    args = app.parse_args(["--max-nodes", "10", "--max-depth", "3", "--max-branch", "3", "--max-new-tokens", "20",
                           "--max-prompt-chars", "50", "--max-compare-mc", "100"])
    assert args.caps == TIGHT
    for flag, value in (("--max-nodes", "0"), ("--max-depth", str(run_config.MAX_DEPTH + 1))):
        with pytest.raises(SystemExit) as exit_info:
            app.parse_args([flag, value])
        assert exit_info.value.code == 2
        assert f"{flag} " in capsys.readouterr().err


@pytest.mark.parametrize("name", [f.name for f in fields(Caps)])
def test_each_cap_refuses_zero_and_above_its_ceiling(name):
    for value in (0, CEILINGS[name][0] + 1, 2.5):
        with pytest.raises(ValueError, match=f"--{name.replace('_', '-')} "):
            replace(Caps(), **{name: value})


def test_the_caps_are_shown_under_the_controls_and_bound_the_widgets():
    page = VIEWS.controls
    assert page["max_new_tokens"].maximum == 20 and page["depth"].maximum == 3 and page["sequences"].maximum == 3
    assert page["prompt"].max_length == 50
    shown = [b.value for b in app.build_page("toy", caps=TIGHT)[0].blocks.values() if b.elem_id == "caps"]
    assert shown == [TIGHT.text()] and "at most 10 nodes per tree, depth 3" in shown[0]


@pytest.mark.parametrize("change, message", [
    (dict(branching="2,1,1,1"), "the tree is 4 levels deep; this server's limit is 3"),
    (dict(branching="4,1"), "a node would have 4 children; this server's limit is 3 per node"),
    (dict(branching="3,3"), "the tree would have up to 12 nodes; this server's limit is 10"),
    (dict(shape=SHAPES[1], sequences=3, depth=4), "depth must be between 1 and 3, got 4"),
    (dict(shape=SHAPES[1], sequences=4, depth=2), "K sequences must be between 1 and 3, got 4"),
    (dict(max_new_tokens=21), "max new tokens must be between 1 and 20, got 21"),
    (dict(prompt="the cat " * 7), "the prompt has 56 characters; this server's limit is 50"),
])
def test_a_step_beyond_a_cap_gives_a_message_naming_it(change, message):
    out = _step(**change)
    assert out.status.startswith("⚠️") and message in out.status.replace("\\", "")


def test_a_step_at_the_caps_runs():
    out = _step(branching="3,2", max_new_tokens=20, prompt="the cat " * 6)  # 9 nodes, 48 characters
    assert "⚠️" not in out.status and "Step 1 of 1" in out.status
    sequences = _step(shape=SHAPES[1], sequences=3, depth=3, verifier="spectr")  # 9 nodes
    assert "⚠️" not in sequences.status and "Step 1 of 1" in sequences.status


def test_the_boundary_and_config_take_the_caps_explicitly():
    controls = replace(Controls(), pair="toy", branching="3,3")
    assert controls.config().max_tree_nodes == 12  # the library's default caps allow it
    with pytest.raises(ValueError, match="limit is 10"):
        controls.config(TIGHT)
    assert Controls.from_raw(max_new_tokens=500).max_new_tokens == 500
    with pytest.raises(ValueError, match="between 1 and 20"):
        Controls.from_raw(max_new_tokens=500, caps=TIGHT)


def test_the_page_starts_within_its_caps():
    """The starting widget values obey the caps (K sequences was 4 under --max-branch 3: every Step refused)."""
    page = VIEWS.controls
    assert page["sequences"].value == 3 and page["depth"].value == 3 and page["max_new_tokens"].value == 20
    assert _step(sequences=page["sequences"].value, depth=page["depth"].value).status.startswith("**Step 1 of 1**")


def test_select_allowed_refuses_a_shape_over_the_caps_and_keeps_the_selection():
    """The compare view's "select every lossless verifier" reads the controls through the same boundary."""
    from ui import compare

    values = VIEWS.inputs(None, **{**OK, "branching": "3,3"})
    with pytest.warns(UserWarning, match="the tree would have up to 12 nodes; this server's limit is 10"):
        kept = compare.select_allowed(VIEWS, values)
    assert kept == {"__type__": "update"}
    assert compare.select_allowed(VIEWS, VIEWS.inputs(None, **OK))["value"]  # within the caps: a selection


# ---- the compare view's Monte-Carlo walks (--max-compare-mc; the default cap: tests/ui/test_compare_events.py) --
def _compared(walks, keys=("rrs_wor", "spectr")) -> str:
    """The status after a Step with compare on and `walks` as the front end and the API send it (a float)."""
    values = VIEWS.inputs(None, **OK, compare=True, compare_keys=list(keys), compare_mc=walks)
    return VIEWS.named(ui_controls.step(VIEWS, values, progress=None)).status.replace("\\", "")


def test_the_walks_cap_bounds_the_slider_and_refuses_a_step_above_it():
    slider = VIEWS.options["compare_mc"]
    assert slider.maximum == 100 and slider.value == 100  # the page starts within the cap (MC_DRAWS is 200)
    assert "100 Monte-Carlo walks per compared verifier" in TIGHT.text()
    status = _compared(101.0)
    assert status.startswith("⚠️") and "101 Monte-Carlo walks per compared verifier; this server's limit is 100" \
        in status, status


def test_walks_within_the_cap_run_and_a_missing_value_is_the_default_within_it():
    status = _compared(100.0)
    assert "⚠️" not in status and "Step 1 of 1" in status, status
    values = VIEWS.inputs(None, **OK, compare=True, compare_keys=["rrs"], compare_mc=None)
    verdicts = VIEWS.named(ui_controls.step(VIEWS, values, progress=None)).session.steps[-1].compare.verdicts
    assert compare.default_draws(TIGHT) == 100 and {v.mc_draws for v in verdicts} == {100}  # MC_DRAWS is 200
