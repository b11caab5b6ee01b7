"""The replay file told in the page's words (ui/replay_file.py): every step's story block is the one the live
page renders for the same records (ui/story.py's render), a compared step's other verifiers' stories too; the
Trace tab's handler as the page calls it (None before any step) and `python -m decoding export-html` with good
and bad input (exit 2, one line)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from decoding.cli.main import main as cli_main
from decoding.compare.session import CompareRun
from decoding.models.pairs import load_pair
from decoding.run import engine
from decoding.run.config import Branching, DecodeConfig
from decoding.run.schema import Trace, trace_to_json
from tests.served import ROOT
from ui import replay_file, story, trace_io
from ui.session import Session


@pytest.fixture(scope="module")
def toy_trace() -> Trace:
    return compared_toy_trace()


def compared_toy_trace() -> Trace:
    """Three steps of the toy pair, the second one compared (rrs, rrs_wor, spectr)."""
    toy = load_pair("toy")
    config = DecodeConfig(verifier="rrs", shape=Branching((3, 2)), seed=4, max_new_tokens=30, chat=False)
    run = engine.start(toy, config, "the cat")
    run.step()
    compared = CompareRun(toy, config, run.state, ["rrs", "rrs_wor", "spectr"], 0)
    compared.step()
    run = engine.start(toy, config, "the cat")  # a plain run whose second step we replace by the compared one
    first = run.step()
    third = run.step()
    steps = (first, replace(compared.state.steps[-1], index=1), replace(third, index=2))
    trace = run.trace()
    return replace(trace, steps=steps)


def blocks(doc: str, cls: str) -> list[tuple[str, str, str]]:
    return re.findall(rf'<template class="{cls}" data-step="(\d+)"(?: data-verifier="([^"]*)")?>(.*?)</template>',
                      doc, flags=re.S)


def test_every_story_in_the_file_is_the_pages_story_for_the_same_records(toy_trace):
    doc = replay_file.document(toy_trace)
    own = blocks(doc, "replay-step")
    assert len(own) == len(toy_trace.steps)
    for (position, _, body), step in zip(own, toy_trace.steps, strict=True):
        assert story.render(step, toy_trace, int(position)) in body
    others = blocks(doc, "replay-story")
    compared = toy_trace.steps[1].compare
    assert {k for _, k, _ in others} == {v.key for v in compared.verdicts} - {toy_trace.steps[1].verifier}
    for position, key, body in others:
        assert body == story.render(toy_trace.steps[int(position) - 1], toy_trace, int(position), key)
    assert 'id="story-verifier"' in own[1][2] and 'id="compare-multiples"' in own[1][2]
    assert 'id="story-verifier"' not in own[0][2]


def test_a_lossy_verifiers_story_says_why_as_the_page_does():
    toy = load_pair("toy")
    config = DecodeConfig(verifier="typical", shape=Branching((2, 2)), seed=1, max_new_tokens=6, chat=False)
    trace = engine.generate(toy, config, "the cat")
    doc = replay_file.document(trace)
    assert story.render(trace.steps[0], trace, 1) in doc
    assert f"typical is lossy: {story.LOSSY_WHY['typical']}" in doc


def test_the_trace_tabs_button_before_any_step_and_after(toy_trace, tmp_path):
    path, status = trace_io.export_html(None)  # what the page sends before a Step: null
    assert path is None and "Nothing to export yet" in status
    path, status = trace_io.export_html(Session(trace=toy_trace))
    assert path.endswith(".html") and "Replay page of 3 steps" in status
    assert Path(path).read_text(encoding="utf-8") == replay_file.document(toy_trace)


def test_export_html_on_the_command_line(toy_trace, tmp_path, capsys):
    trace_path = tmp_path / "trace.json"
    trace_path.write_text(trace_to_json(toy_trace), encoding="utf-8")
    out = tmp_path / "replay.html"
    assert cli_main(["export-html", str(trace_path), "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == replay_file.document(toy_trace)
    assert "replay written to" in capsys.readouterr().err


@pytest.mark.parametrize("make, message", [
    (lambda d: d / "missing.json", "No such file"),
    (lambda d: (d / "x.json").write_text('{"format": "nope"}') and d / "x.json", "not a specscope trace"),
    (lambda d: (d / "y.json").write_text("{not json") and d / "y.json", ""),
])
def test_bad_traces_exit_2_with_one_line(tmp_path, capsys, make, message):
    assert cli_main(["export-html", str(make(tmp_path)), "-o", str(tmp_path / "out.html")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err and message in err and "Traceback" not in err
    assert not (tmp_path / "out.html").exists()


def test_an_inconsistent_trace_or_a_folder_as_output_exit_2(toy_trace, tmp_path, capsys):
    data = json.loads(trace_to_json(toy_trace))
    data["steps"][0]["accepted_path"] = [0, 99]  # a node the tree does not have
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data), encoding="utf-8")
    assert cli_main(["export-html", str(bad), "-o", str(tmp_path / "o.html")]) == 2
    assert "cannot be drawn" in capsys.readouterr().err
    good = tmp_path / "good.json"
    good.write_text(trace_to_json(toy_trace), encoding="utf-8")
    assert cli_main(["export-html", str(good), "-o", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err


def test_the_subcommand_is_listed_and_a_missing_output_is_a_usage_error():
    done = subprocess.run([sys.executable, "-m", "decoding", "export-html", "trace.json"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "-o/--output" in done.stderr and "Traceback" not in done.stderr
    listed = subprocess.run([sys.executable, "-m", "decoding", "--help"], cwd=ROOT, capture_output=True, text=True,
                            timeout=120)
    assert "export-html" in listed.stdout and "lesson" in listed.stdout


@pytest.mark.slow
def test_ten_steps_of_a_3_2_2_tree_on_the_default_pair_fit_in_5_mb(tmp_path):
    pair = load_pair("embedded")
    config = DecodeConfig(verifier="rrs_wor", shape=Branching((3, 2, 2)), seed=0, max_new_tokens=200)
    run = engine.start(pair, config, "Write a short story about a lighthouse keeper.")
    for _ in range(10):
        run.step()
    trace = run.trace()
    assert len(trace.steps) == 10 and all(len(s.nodes) == 22 for s in trace.steps)
    size = len(replay_file.document(trace).encode("utf-8"))
    print(f"replay file of 10 steps of a 3,2,2 tree on the embedded pair: {size / 1e6:.2f} MB")
    assert size <= replay_file.MAX_BYTES
