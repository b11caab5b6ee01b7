"""The status line under the buttons, as a Step draws it: the one step line a room reads off a projector (the step,
tokens, verifier, tree, temperature, run state and the models' short names), the machine's details (dtypes, the
product plan, its padding) one click away in a closed <details>. Before, every Step showed them all on a second
line ("dtype float32 · ... · products onednn for 1-64 rows; 3 rows run as 4")."""

from __future__ import annotations

from dataclasses import replace

import app
from ui import controls as ui_controls
from ui.session import Session
from ui.views import status_text

_, VIEWS = app.build_page("toy")
CONTROLS = dict(pair="toy", prompt="the cat", verifier="rrs_wor", branching="3,2", temperature=0.8, seed=1,
                max_new_tokens=10)
EMBEDDED = {"kind": "embedded", "target": "SmolLM2-135M-Instruct",
            "draft": "SmolLM2-135M-Instruct int8 self-draft (down_proj float32)", "device": "cpu",
            "dtype": "float32", "vocab_size": 49152, "draft_dtype": "qint8",
            "products": "onednn for 1-64 rows; 3 rows run as 4"}


def _stepped() -> Session:
    return VIEWS.named(ui_controls.step(VIEWS, VIEWS.inputs(Session(), **CONTROLS), progress=None)).session


def _with_models(session: Session, models: dict) -> Session:
    return replace(session, trace=replace(session.trace, models=models))


def test_a_step_shows_one_step_line_and_the_machine_details_one_click_away():
    status = status_text(_with_models(_stepped(), EMBEDDED), 1)
    line, details = status.split("\n\n")
    assert line.startswith("**Step 1 of 1** · ") and " · rrs\\_wor · tree 3,2 · T = 0.8 · running" in line
    assert line.endswith(" · p: SmolLM2\\-135M\\-Instruct · q: SmolLM2\\-135M\\-Instruct int8 self\\-draft"), line
    for internal in ("dtype", "float32", "products", "onednn", "run as", "vocab", "cpu", "qint8"):
        assert internal not in line, (internal, line)
    assert details.startswith("<details><summary>Machine details</summary>")  # closed: no `open`
    assert details.endswith("</details>") and "\n" not in details  # one HTML block
    for shown in ("kind embedded", "dtype float32", "draft dtype qint8", "vocab size 49152", "device cpu",
                  "products onednn for 1-64 rows; 3 rows run as 4", "(down_proj float32)"):
        assert shown in details, (shown, details)


def test_the_handler_draws_the_step_line_first_and_the_toys_details_under_it():
    status = VIEWS.named(ui_controls.step(VIEWS, VIEWS.inputs(Session(), **CONTROLS), progress=None)).status
    line, details = status.split("\n\n")
    assert line.endswith("running · p: toy target · q: toy draft") and "dtype" not in line, line
    assert "dtype float32" in details and "target toy target (12 words)" in details


def test_user_text_is_escaped_in_the_line_and_in_the_details():
    custom = {"kind": "custom", "target": "org/*big* model", "draft": "/models/<tiny>/", "dtype": "float32"}
    status = status_text(_with_models(_stepped(), custom), 1)
    line, details = status.split("\n\n")
    assert line.endswith("p: \\*big\\* model · q: &lt;tiny&gt;") and "<tiny>" not in status, line
    assert "target org/*big* model · draft /models/&lt;tiny&gt;/" in details


def test_short_names():
    from ui.views import short_name

    assert short_name("HuggingFaceTB/SmolLM2-135M-Instruct") == "SmolLM2-135M-Instruct"
    assert short_name("/tmp/pair/target/") == "target"
    assert short_name("prompt lookup (trailing 3/2-gram, no model)") == "prompt lookup"
    assert short_name("toy draft (perturbed target)") == "toy draft"


def test_an_imported_trace_without_a_model_description_shows_the_step_line_only():
    status = status_text(_with_models(replace(_stepped(), run=None), {}), 1)
    assert "<details>" not in status and status.endswith("imported trace: replay only")

