"""A calibration cached on this machine puts its product plan on the pair's lean target when the app loads the
pair (ui/decode.load -> calibrate.apply_cached_plan): a user who calibrated once decodes with the faster products
from the first Step. Nothing cached, or a calibration of another machine key: the products stay as they are."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pytest
import torch

from decoding.models import pairs
from decoding.models.lean import few_rows
from decoding.models.lean import target as lean_target
from decoding.models.lean.packed_linear import use_packed_projection
from decoding.speed import calibrate, machine, plan
from tests.conftest import save_tiny_llama
from tests.models.test_lean_draft import WORDS
from tests.speed.test_calibration_cache import sample

PLAN = {1: "split", 2: "split"}


@pytest.fixture
def lean_pair(tmp_path_factory, tiny_matching_folders):
    """A custom pair of tiny folders whose target session scores through a lean float32 target (as the
    embedded pairs' do on a CPU), and that lean target."""
    from transformers import AutoModelForCausalLM

    folder = save_tiny_llama(tmp_path_factory.mktemp("tiny-cached-plan") / "m", WORDS, seed=3)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    use_packed_projection(model)
    lean = lean_target.LeanFloatLlama(model)
    target, draft = tiny_matching_folders
    pair = replace(pairs.load_pair("custom", target=str(target), draft=str(draft), device="cpu"),
                   new_target=lambda: SimpleNamespace(model=lean))
    return pair, lean


def test_the_cached_plan_goes_on_once_and_another_keys_calibration_changes_nothing(lean_pair, tmp_path):
    pair, lean = lean_pair
    assert calibrate.apply_cached_plan(pair, "custom", tmp_path) is None  # nothing cached: stock stays
    assert few_rows.plan_of(lean) == {}
    calibrate.save(replace(sample(machine.machine_key("embedded", "cpu")), plan=PLAN), tmp_path)  # another pair
    assert calibrate.apply_cached_plan(pair, "custom", tmp_path) is None and few_rows.plan_of(lean) == {}
    calibrate.save(replace(sample(machine.machine_key("custom", "cpu")), plan=PLAN), tmp_path)
    assert calibrate.apply_cached_plan(pair, "custom", tmp_path) == PLAN
    head = lean.head
    assert few_rows.plan_of(lean) == PLAN and isinstance(head, few_rows.PlannedProjection)
    assert few_rows.pad_of(lean) == {1: 4, 2: 4}  # its padding too
    assert calibrate.apply_cached_plan(pair, "custom", tmp_path) == PLAN and lean.head is head  # on already
    calibrate.save(replace(sample(machine.machine_key("custom", "cpu")), plan=PLAN, pad={1: 3}), tmp_path)
    assert calibrate.apply_cached_plan(pair, "custom", tmp_path) == PLAN and few_rows.pad_of(lean) == {1: 3}


def test_the_cached_plan_goes_on_the_draft_heads_products_too(lean_pair, tmp_path):
    """A draft head's level makes the same few-row products as a verify (models/lean_head.py)."""
    from decoding.models.head.lean import LeanHead
    from decoding.models.head.weights import DraftHead, HeadConfig

    pair, lean = lean_pair
    rows = lean.head.weight.detach()[:8]  # [8, hidden]: q's lm_head rows
    head = LeanHead(DraftHead(HeadConfig(hidden=rows.shape[1], inner=32, head_size=8)), rows)
    pair = replace(pair, draft_products=head)
    calibrate.save(replace(sample(machine.machine_key("custom", "cpu")), plan=PLAN), tmp_path)
    assert calibrate.apply_cached_plan(pair, "custom", tmp_path) == PLAN
    assert few_rows.plan_of(lean) == few_rows.plan_of(head) == PLAN and few_rows.pad_of(head) == {1: 4, 2: 4}
    assert isinstance(head.lean_layers[0].down, few_rows.PlannedProjection)


def test_the_app_loads_a_pair_with_this_machines_cached_plan(lean_pair, tiny_matching_folders, tmp_path,
                                                            monkeypatch):
    from ui import decode
    from ui.session import Controls

    pair, lean = lean_pair
    monkeypatch.setenv("SPECSCOPE_CACHE", str(tmp_path))  # this test's own calibration cache
    monkeypatch.setattr(pairs, "load_pair", lambda *a, **k: pair)
    target, draft = tiny_matching_folders
    controls = replace(Controls(), pair="custom", target=str(target), draft=str(draft))
    assert decode.load(controls, None) is pair and few_rows.plan_of(lean) == {}
    calibrate.save(replace(sample(machine.machine_key("custom", str(pair.device))), plan=PLAN))
    assert decode.load(controls, None) is pair and few_rows.plan_of(lean) == PLAN
    assert pair.describe()["products"] == (  # what its traces record
        "split for 1-2 rows; stock for 3-64 rows; 1-2 rows run as 4")


def test_the_first_start_on_a_machine_calibrates_the_preloaded_pair_once(lean_pair, tmp_path, monkeypatch):

    pair, lean = lean_pair
    monkeypatch.setenv("SPECSCOPE_CACHE", str(tmp_path))
    measured = []

    def fake_measure(pair_, key, progress, **_):  # what a calibration finds: this machine's plan
        measured.append(key)
        return replace(sample(key), plan=PLAN)

    monkeypatch.setattr(calibrate, "measure", fake_measure)
    plan.calibrate_once(pairs.load_pair("toy"), "toy")  # no lean target: nothing to choose, nothing timed
    assert measured == []
    plan.calibrate_once(pair, "custom")
    assert measured == [machine.machine_key("custom", "cpu")] and few_rows.plan_of(lean) == PLAN
    assert calibrate.load_cached(measured[0]) is not None  # kept for the next start
    few_rows.apply_plan(lean, {})
    plan.calibrate_once(pair, "custom")  # cached: not timed again (load puts the plan on)
    assert len(measured) == 1


def test_a_calibration_made_while_someone_stepped_is_used_but_not_kept(lean_pair, tmp_path, monkeypatch):
    """Steps during the first start's calibration share its cores (in a browser test it kept stock for one row
    where an idle machine keeps onednn): its plan serves this process, but the next start measures again."""
    from ui.run_cache import RunCache

    pair, lean = lean_pair
    monkeypatch.setenv("SPECSCOPE_CACHE", str(tmp_path))
    runs = RunCache()

    def measured_while_a_step_ran(pair_, key, progress, **_):
        runs.take("a-session", None)  # a Step's resume, meanwhile
        return replace(sample(key), plan=PLAN)

    monkeypatch.setattr(calibrate, "measure", measured_while_a_step_ran)
    plan.calibrate_once(pair, "custom", lambda: runs.activity)
    key = machine.machine_key("custom", "cpu")
    assert few_rows.plan_of(lean) == PLAN and calibrate.load_cached(key) is None  # on now, not kept
    monkeypatch.setattr(calibrate, "measure", lambda pair_, key, progress, **_: replace(sample(key), plan=PLAN))
    plan.calibrate_once(pair, "custom", lambda: runs.activity)  # the next start, nobody stepping: kept
    assert calibrate.load_cached(key) is not None


ENTRY_POINTS = ("app.py", "ui", "bench", "decoding/cli", "decoding/lab", "decoding/compare", "decoding/fastest.py")


def test_every_entry_point_loads_pairs_with_this_machines_plan():
    """The app, the CLI, the lab, compare, `fastest()` and the bench load pairs through `speed.plan.load_planned`
    (never `load_pair` directly), so one pair kind runs the same products wherever it is loaded. A module that
    calls load_pair itself (as `python -m decoding generate` and the bench did) fails this."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    files = [p for e in ENTRY_POINTS for p in ((root / e).rglob("*.py") if (root / e).is_dir() else [root / e])]
    direct = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            called = node.func if isinstance(node, ast.Call) else None
            name = getattr(called, "attr", None) or getattr(called, "id", None)
            if name == "load_pair":
                direct.append(f"{path.relative_to(root)}:{node.lineno}")
    assert len(files) > 40 and direct == []


def test_load_planned_puts_this_machines_cached_plan_on(lean_pair, tmp_path, monkeypatch):
    pair, lean = lean_pair
    monkeypatch.setenv("SPECSCOPE_CACHE", str(tmp_path))
    monkeypatch.setattr(pairs, "load_pair", lambda *a, **k: pair)
    assert plan.load_planned("custom") is pair and few_rows.plan_of(lean) == {}  # nothing cached: stock
    calibrate.save(replace(sample(machine.machine_key("custom", str(pair.device))), plan=PLAN))
    assert plan.load_planned("custom") is pair and few_rows.plan_of(lean) == PLAN
