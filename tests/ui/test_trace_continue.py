"""An imported trace is continued by Step (ui/trace_run.py): export after k Steps, import into a fresh session
through the handler, then n Steps with the values the page's widgets then send, emit exactly the tokens of an
uninterrupted run of k + n Steps (same seed, same config, the recorded costs / drafting included). A trace this
server cannot continue still draws, and the status says why Step starts a new run.

Oracle: the same run stepped without interruption (through the same handler, or the engine for a trace the CLI
wrote). The front end sends null for a hidden textbox (the custom pair's model boxes), so these tests do too."""

from __future__ import annotations

import json
from dataclasses import fields, replace
from pathlib import Path

import pytest

import app
from decoding.models import pairs as models
from decoding.models.hub.load import ModelLoadError
from decoding.run import engine
from decoding.run.config import DecodeConfig
from decoding.run.costs import StepCosts
from decoding.run.schema import trace_from_json, trace_to_json
from ui import controls as ui_controls
from ui import trace_io
from ui.caps import Caps
from ui.run_cache import RunCache
from ui.session import SHAPES, Controls, Session

_, VIEWS = app.build_page("toy")
BRANCHING = replace(Controls(), pair="toy", prompt="the cat", verifier="rrs_wor", branching="3,2",
                    temperature=1.0, seed=2, max_new_tokens=40)
SEQUENCES = replace(BRANCHING, verifier="spectr", shape=SHAPES[1], sequences=3, depth=2, seed=4, top_k=8)
HIDDEN_TEXT = ("target", "draft")  # hidden textboxes: the front end sends null


def raw(controls: Controls) -> dict:
    return {f.name: getattr(controls, f.name) for f in fields(Controls)}


def step(views, session: Session | None, values: dict, runs: RunCache) -> Session:
    return views.named(ui_controls.step(views, views.inputs(session, **values), progress=None, runs=runs)).session


def page_values(views, out: dict) -> dict:
    """What the page sends on its next Step after `out`: each control widget's value as `out` set it."""
    values = {}
    for name, widget in views.controls.items():
        value = out[widget]
        values[name] = value["value"] if isinstance(value, dict) else value
    return {**values, **dict.fromkeys(HIDDEN_TEXT)} if values["pair"] != "custom" else values


def exported(session: Session, runs: RunCache) -> str:
    path, status = trace_io.export(session, runs)
    assert path is not None, status
    return path


def imported(views, path: str, runs: RunCache, before: Session | None = None) -> tuple[Session, dict, str]:
    out = trace_io.import_trace(views, before or Session(), path, runs=runs)
    named = views.named(out)
    return named.session, out, named.status


@pytest.mark.parametrize("controls", [BRANCHING, SEQUENCES], ids=["branching", "sequences"])
def test_steps_after_an_import_emit_the_uninterrupted_runs_tokens(controls) -> None:
    k, n = 3, 3
    whole, own = None, RunCache()
    for _ in range(k + n):
        whole = step(VIEWS, whole, raw(controls), own)
    assert len(whole.steps) == k + n and whole.run.stop_reason is None  # the oracle ran every step

    first, runs = None, RunCache()
    for _ in range(k):
        first = step(VIEWS, first, raw(controls), runs)
    path = exported(first, runs)

    _, views = app.build_page("toy")  # another page (and server) with an empty run cache
    fresh = RunCache()
    session, out, status = imported(views, path, fresh)
    assert session.run is not None and "Step** continues its run" in status
    values = page_values(views, out)
    for _ in range(n):
        session = step(views, session, values, fresh)
    assert session.run.generated_ids == whole.run.generated_ids
    assert session.run.rng_state == whole.run.rng_state
    assert len(session.steps) == k + n
    assert session.steps[:k] == trace_from_json(Path(path).read_text(encoding="utf-8")).steps  # the imported records


def test_the_widgets_an_import_sets_read_back_as_the_imported_controls() -> None:
    first, runs = None, RunCache()
    for _ in range(2):
        first = step(VIEWS, first, raw(SEQUENCES), runs)
    session, out, _ = imported(VIEWS, exported(first, runs), RunCache())
    assert session.controls == replace(SEQUENCES, branching=Controls().branching)  # the unused shape: the page's
    assert out[VIEWS.controls["sequences"]]["visible"] and not out[VIEWS.controls["branching"]]["visible"]
    assert not out[VIEWS.controls["target"]]["visible"]


CHAIN = DecodeConfig(verifier="sd", branching=(1,) * 4, adaptive=True, chat=False, temperature=1.0,
                     max_new_tokens=40, seed=3)
DEAR_DRAFT = StepCosts(target=((1, 20.0), (2, 40.0), (9, 180.0)), draft=((1, 15.0),), overhead=0.2)


@pytest.mark.parametrize("config", [CHAIN.with_(costs=DEAR_DRAFT),
                                    DecodeConfig(verifier="sd", branching=(1,), drafting=False, chat=False,
                                                 temperature=1.0, max_new_tokens=40, seed=8),
                                    CHAIN.with_(adaptive=False, min_confidence=0.2, seed=5)],
                         ids=["adaptive-with-costs", "not-drafting", "min-confidence"])
def test_a_cli_trace_continues_with_its_recorded_costs_and_drafting(config, tmp_path) -> None:
    """What the page's controls do not hold (costs, drafting, adaptive, min_confidence, chat) is taken from the
    trace."""
    k, n = 3, 4
    pair = models.load_pair("toy")
    whole = engine.start(pair, config, "the cat", lazy_theory=True)
    cut = engine.start(pair, config, "the cat", lazy_theory=True)
    for _ in range(k):
        whole.step()
        cut.step()
    for _ in range(n):
        whole.step()
    assert len(whole.state.steps) == k + n and not whole.done
    for i in range(k):
        cut.fill_theory(i)  # as `generate --json` writes it
    path = tmp_path / "cli.json"
    path.write_text(trace_to_json(cut.trace()), encoding="utf-8")

    runs = RunCache()
    session, out, _ = imported(VIEWS, str(path), runs)
    assert session.run is not None and DecodeConfig.from_dict(session.run.config) == config
    values = page_values(VIEWS, out)
    for _ in range(n):
        session = step(VIEWS, session, values, runs)
    assert session.run.generated_ids == whole.state.generated_ids
    assert session.run.rng_state == whole.state.rng_state


# ---- a trace that cannot be continued: its steps draw, the status says why, Step starts a new run ----------------
@pytest.fixture(scope="module")
def trace_body() -> dict:
    first, runs = None, RunCache()
    for _ in range(2):
        first = step(VIEWS, first, raw(BRANCHING), runs)
    return json.loads(Path(exported(first, runs)).read_text(encoding="utf-8"))


def _config(**changes):
    def change(body: dict) -> None:
        body["config"].update(changes)
    return change


def _drop_config(key: str):
    def change(body: dict) -> None:
        del body["config"][key]
    return change


def _models(**changes):
    def change(body: dict) -> None:
        body["models"].update(changes)
    return change


@pytest.mark.parametrize("change, why", [
    (_config(verifier="my_verifier"), "unknown verifier 'my_verifier'"),  # a custom verifier not loaded here
    (_drop_config("seed"), "does not record seed"),  # an older trace
    (_models(kind="embedded-fast"), "cannot load its model pair 'embedded-fast'"),
    (_models(kind="custom", target="/nowhere/target", draft="/nowhere/draft"), "/nowhere/target"),
    (_models(vocab_size=13), "vocab_size: 12 here, 13 in the trace"),
    (_config(seed=3), "did not reproduce it"),  # its steps were not drawn with this seed
    (_config(temperature=5.0), "temperature must be between 0 and 2"),  # the library takes it, the page does not
    (_config(costs=[1, 2]), "costs: expected an object"),
], ids=["custom-verifier", "old-trace", "unlisted-pair", "custom-pair-missing", "other-pair", "other-seed",
        "out-of-range", "bad-costs"])
def test_a_trace_that_cannot_be_continued_still_shows_and_says_why(trace_body, tmp_path, change, why) -> None:
    body = json.loads(json.dumps(trace_body))
    change(body)
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(body), encoding="utf-8")
    runs = RunCache()
    session, out, status = imported(VIEWS, str(path), runs)
    assert session.run is None and len(session.steps) == 2 and len(runs) == 0
    assert "Step** starts a new run" in status and why in status.replace("\\", "")
    assert "⚠️" not in status and not any(w in out for w in VIEWS.controls.values())  # the widgets stay
    after = step(VIEWS, session, raw(BRANCHING), runs)
    assert len(after.steps) == 1  # a new run, not the trace's


def test_a_trace_over_this_servers_caps_is_not_continued(trace_body, tmp_path) -> None:
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(trace_body), encoding="utf-8")
    _, capped = app.build_page("toy", caps=Caps(max_nodes=5))
    session, _, status = imported(capped, str(path), RunCache())
    assert session.run is None and "this server's limit is 5" in status


def test_a_pair_that_fails_to_load_leaves_the_replay(trace_body, tmp_path, monkeypatch) -> None:
    def unavailable(*args, **kwargs):
        raise ModelLoadError("the hub is unreachable")

    monkeypatch.setattr(models, "load_pair", unavailable)
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(trace_body), encoding="utf-8")
    session, _, status = imported(VIEWS, str(path), RunCache())
    assert session.run is None and "the hub is unreachable" in status and len(session.steps) == 2


def test_a_trace_made_on_another_machine_continues(trace_body, tmp_path) -> None:
    """A trace's models also say what the machine computed p with (device, the product plan of its
    calibration): another machine's are no reason to refuse, where another pair is (the vocab_size case)."""
    body = json.loads(json.dumps(trace_body))
    body["models"] |= {"products": "onednn for 1-64 rows", "device": "cuda"}
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(body), encoding="utf-8")
    runs = RunCache()
    session, _, status = imported(VIEWS, str(path), runs)
    assert session.run is not None and len(runs) == 1, status
    after = step(VIEWS, session, raw(BRANCHING), runs)
    assert len(after.steps) == 3  # the trace's two steps, then one more of the same run


def test_an_import_replaces_the_pages_run(trace_body, tmp_path) -> None:
    runs = RunCache()
    mine = step(VIEWS, None, raw(replace(BRANCHING, seed=9)), runs)
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(trace_body), encoding="utf-8")
    session, _, _ = imported(VIEWS, str(path), runs, before=mine)
    assert mine.key not in runs and session.key in runs and len(runs) == 1


@pytest.mark.slow
def test_an_embedded_trace_continues_with_the_uninterrupted_tokens() -> None:
    """The int8 self-draft is where a re-prefilled run drifts (decoding/run/replay.py): 2 Steps, export,
    import in a fresh page, 2 Steps == 4 uninterrupted Steps."""
    controls = replace(Controls(), pair="embedded", prompt="Write a short poem about the sea.", verifier="rrs_wor",
                       branching="2,1", temperature=1.0, seed=4, max_new_tokens=24)
    _, views = app.build_page("embedded")
    whole, own = None, RunCache()
    for _ in range(4):
        whole = step(views, whole, raw(controls), own)
    first, runs = None, RunCache()
    for _ in range(2):
        first = step(views, first, raw(controls), runs)
    fresh = RunCache()
    session, out, status = imported(views, exported(first, runs), fresh)
    assert session.run is not None, status
    values = page_values(views, out)
    for _ in range(2):
        session = step(views, session, values, fresh)
    assert session.run.generated_ids == whole.run.generated_ids
