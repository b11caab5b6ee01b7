"""`python -m decoding saguaro` (decoding/cli/saguaro.py; docs/verifiers.md §23): its numbers are the lab's, computed
here on their own (lab/saguaro.chain_hit, certify on every shipped tiny language); SD against q' certified lossless
(exit 0), the same drafts against the raw q lossy at C != 1 and lossless at C = 1; bad flags exit 2 with one line;
--json read back; the `specscope` script passes the subcommand on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from decoding.cli.main import main
from decoding.lab import saguaro as lab_saguaro
from decoding.lab.certify import certify
from decoding.lab.language import load, presets
from decoding.verify import saguaro

ROOT = Path(__file__).resolve().parents[2]
LANGUAGES = [load(path) for path in presets().values()]


def expected(fan_out: int, scale: float, depth: int) -> dict:
    """What the command must report for one C, from the lab directly."""
    shape = (1,) * depth
    good = certify(saguaro.entry(fan_out, scale), LANGUAGES, shape)
    raw = certify(saguaro.entry(fan_out, scale, verified_against_q_prime=False), LANGUAGES, shape, mc_trees=0)
    return {"hits": {x.name: lab_saguaro.chain_hit(x, depth, fan_out, scale) for x in LANGUAGES},
            "lossless": good.lossless, "max_tv": good.max_tv, "raw_tv": {c.language: c.tv for c in raw.cases}}


def run_json(tmp_path, capsys, *flags: str) -> tuple[int, dict, str]:
    out = tmp_path / "saguaro.json"
    code = main(["saguaro", *flags, "--json", str(out)])
    return code, json.loads(out.read_text(encoding="utf-8")), capsys.readouterr().out


def test_the_defaults_are_the_labs_numbers(tmp_path, capsys):
    code, saved, text = run_json(tmp_path, capsys)
    assert code == 0 and saved["lossless"] is True
    assert (saved["fan_out"], saved["scale"], saved["depth"]) == (1, 0.5, 2)
    assert saved["languages"] == [x.name for x in LANGUAGES]
    assert [law["scale"] for law in saved["laws"]] == [0.5, 1.0]
    for law in saved["laws"]:
        want = expected(1, law["scale"], 2)
        assert law["cache_hit"] == pytest.approx(want["hits"], abs=1e-12)
        assert law["certificate"]["lossless"] is True and law["certificate"]["max_tv"] < 1e-12
        assert law["certificate"]["max_tv"] == pytest.approx(want["max_tv"], abs=1e-15)
        assert law["raw_q"]["tv"] == pytest.approx(want["raw_tv"], abs=1e-12)
    bent, sd = saved["laws"]
    assert bent["raw_q"]["max_tv"] > 0.1  # the mistake: drafts from q', verified against q
    assert sd["raw_q"]["max_tv"] < 1e-12  # C = 1: q' = q, nothing to forget
    assert bent["cache_hit"]["context3"] == pytest.approx(0.3518671328671329, abs=1e-12)  # pinned: a change shows
    row = next(line for line in text.splitlines() if line.strip().startswith("context3"))
    assert f"{bent['cache_hit']['context3']:.4f}" in row and f"{sd['cache_hit']['context3']:.4f}" in row
    assert "C=0.5: SD against q' LOSSLESS (certified)" in text and "C=1: SD against q' LOSSLESS" in text
    assert "note: F + 1 >= V on binary_toy" in text


def test_other_settings_and_c_1_alone(tmp_path, capsys):
    code, saved, _ = run_json(tmp_path, capsys, "--fan-out", "2", "--scale", "0.3", "--depth", "1")
    assert code == 0 and [law["scale"] for law in saved["laws"]] == [0.3, 1.0]
    want = expected(2, 0.3, 1)
    assert saved["laws"][0]["cache_hit"] == pytest.approx(want["hits"], abs=1e-12)
    assert saved["laws"][0]["raw_q"]["tv"] == pytest.approx(want["raw_tv"], abs=1e-12)
    code, saved, text = run_json(tmp_path, capsys, "--scale", "1", "--depth", "1")
    assert code == 0 and [law["scale"] for law in saved["laws"]] == [1.0]
    assert saved["laws"][0]["cache_hit"] == pytest.approx(expected(1, 1.0, 1)["hits"], abs=1e-12)
    assert "C=1 (plain SD)" in text.splitlines()[0]


@pytest.mark.parametrize("flags, says", [
    (["--fan-out", "0"], "fan-out F"), (["--fan-out", "1.5"], "fan-out F"), (["--fan-out", "many"], "fan-out F"),
    (["--scale", "0"], "scale C"), (["--scale", "-1"], "scale C"), (["--scale", "inf"], "scale C"),
    (["--scale", "nan"], "scale C"), (["--scale", "half"], "scale C"),
    (["--depth", "0"], "--depth"), (["--depth", "5"], "--depth"), (["--depth", "two"], "--depth")])
def test_bad_flags_exit_2_with_one_line(flags, says, tmp_path, capsys):
    out = tmp_path / "never.json"
    assert main(["saguaro", *flags, "--json", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and not out.exists()
    assert captured.err.startswith("error: ") and captured.err.count("\n") == 1 and says in captured.err


def test_the_script_passes_saguaro_on():
    script = (ROOT / "specscope").read_text()
    assert "generate|compare|certify|museum|saguaro|engine-trace) setup;" in script
