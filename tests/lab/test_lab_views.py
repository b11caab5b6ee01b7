"""The lab tab's data and figures: exact node laws against the registry's theory, an edited table
redraws, lossy or wrong verifiers are drawn off, bad cells give one line, viz stays torch-free."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from decoding.lab.custom import load_custom, register_files, registry_with
from decoding.lab.node import node_report
from decoding.verify.registry import VERIFIERS
from decoding.verify.theory import routes as theory
from ui import lab as ui_lab
from viz import lab as viz_lab

ROOT = Path(__file__).resolve().parents[2]
P = torch.tensor([0.50, 0.30, 0.15, 0.05], dtype=torch.float64)
Q = torch.tensor([0.20, 0.50, 0.20, 0.10], dtype=torch.float64)


@pytest.mark.parametrize("key", ["rrs", "rrs_wor", "spectr", "spechub", "greedy", "typical"])
def test_node_report_matches_theory(key):
    r = node_report(VERIFIERS[key], P, Q, 2, samples=400)
    assert torch.allclose(torch.tensor(r.output, dtype=torch.float64), theory.output_law(key, P, Q, 2), atol=1e-12)
    assert r.acceptance == pytest.approx(theory.acceptance(key, P, Q, 2).value, abs=1e-9)
    assert (r.tv > 0.05) == (not VERIFIERS[key].lossless)
    assert sum(r.sampled) == pytest.approx(1.0) and r.sampled_tv < 0.1


def test_a_verify_that_disagrees_shows_in_the_samples(tmp_path):
    """A custom verify that always accepts the first draft: the exact law is p, the samples are not."""
    body = (ROOT / "assets" / "examples" / "my_verifier.py").read_text().replace(
        "if float(torch.rand((), generator=generator, dtype=torch.float64)) < a:", "if True:")
    path = tmp_path / "liar.py"
    path.write_text(body)
    r = node_report(load_custom(path), P, Q, 2, samples=400)
    assert r.tv < 1e-12 and r.sampled_tv > 0.2 and r.custom


def test_editing_one_probability_changes_the_bars():
    registry = registry_with(load_custom(ROOT / "assets" / "examples" / "my_verifier.py"), VERIFIERS)
    table = ui_lab.table_of(ui_lab.load_preset("worked_example"))
    fig, acc, rows, md = ui_lab.compute(registry, table, 2, ["rrs", "greedy", "my_rrs"], 300)
    table[0][1] = 0.9  # p(A): .5 -> .9, renormalised with a note
    fig2, _, rows2, md2 = ui_lab.compute(registry, table, 2, ["rrs", "greedy", "my_rrs"], 300)
    assert fig.data[0].y != fig2.data[0].y and "normalised" in md2 and "normalised" not in md
    assert fig2.data[0].y[0] == pytest.approx(0.9 / 1.4)
    assert [r[1] for r in rows2] == ["exact = p", "OFF p", "exact = p"]
    assert rows2[2][0] == "my_rrs [custom]" and rows2[1][0] == "greedy [lossy]"
    colors = [t.marker.color for t in fig2.data if t.name == "exact output law"]
    assert colors == [viz_lab.EXACT_OK, viz_lab.EXACT_OFF, viz_lab.EXACT_OK]


@pytest.mark.parametrize("cell,message", [("x", "must be a number"), (-1, "negative"), (float("nan"), "non-finite")])
def test_bad_cells_give_one_line(cell, message):
    table = ui_lab.table_of(ui_lab.load_preset("context3"))
    table[1][2] = cell
    _, _, rows, md = ui_lab.compute(VERIFIERS, table, 2, ["rrs"], 100)
    assert rows == [] and message in md and md.count("\n") == 0


def test_verifiers_that_cannot_take_k_are_noted():
    table = ui_lab.table_of(ui_lab.load_preset("context3"))
    _, _, rows, md = ui_lab.compute(VERIFIERS, table, 3, ["sd", "spechub", "rrs"], 100)
    assert [r[0] for r in rows] == ["rrs"] and "sd:" in md and "spechub:" in md


def test_sequence_level_certify_in_the_tab():
    table = ui_lab.table_of(ui_lab.load_preset("context3"))
    fig, md = ui_lab.certify_shape(VERIFIERS, "context3", table, "rrs_wor", "2,2")
    assert "certified lossless" in md and fig.data[0].y == pytest.approx(fig.data[1].y, abs=1e-12)
    fig, md = ui_lab.certify_shape(VERIFIERS, "context3", table, "typical", "2,2")
    assert "NOT lossless" in md and "worst case" in md
    _, md = ui_lab.certify_shape(VERIFIERS, "context3", table, "rrs", "2,x")
    assert md.startswith("**Input:**")


def test_bad_files_at_launch_are_reported_and_built_ins_kept(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def verify(:\n")
    registry = dict(VERIFIERS)
    keys, problems = register_files([str(bad), str(ROOT / "assets" / "examples" / "my_verifier.py")], registry)
    assert keys == ["my_rrs"] and len(problems) == 1 and "syntax error" in problems[0]
    assert set(VERIFIERS) < set(registry)


def test_viz_lab_imports_no_torch():
    code = "import sys, viz.lab; assert 'torch' not in sys.modules and 'gradio' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)
