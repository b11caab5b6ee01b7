"""Custom verifier files: the shipped examples, the Monte-Carlo check of verify against conditional,
bad files refused with exit 2 and one line, and registration that never touches VERIFIERS silently."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from decoding.cli.main import main
from decoding.lab.certify import certify
from decoding.lab.custom import CustomVerifierError, is_custom, load_custom, register_custom, registry_with
from decoding.lab.language import load, presets, random_language
from decoding.verify.registry import VERIFIERS

ROOT = Path(__file__).resolve().parents[2]
MY = ROOT / "assets" / "examples" / "my_verifier.py"
WRONG = ROOT / "assets" / "examples" / "wrong_verifier.py"
CONTEXT3 = load(presets()["context3"])

HEADER = "import torch\nfrom decoding.verify.verdict import NodeVerdict\nLAW = 'iid'\n"
SD_CONDITIONAL = """
def conditional(p, q, candidates):
    x = candidates[0]
    a = torch.zeros(len(candidates), dtype=torch.float64)
    a[0] = min(1.0, float(p[x] / q[x])) if q[x] > 0 else 0.0
    r = torch.clamp(p - q, min=0.0)
    return a, (r / r.sum() if float(r.sum()) > 0 else p.clone())
"""
SD_VERIFY = """
def verify(p, q, candidates, generator):
    a, r = conditional(p, q, candidates)
    if float(torch.rand((), generator=generator, dtype=torch.float64)) < float(a[0]):
        return NodeVerdict(accepted=0, token=int(candidates[0]))
    return NodeVerdict(accepted=None, token=int(torch.multinomial(r, 1, generator=generator)))
"""


def _file(tmp_path: Path, body: str, name: str = "v.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


def test_my_verifier_is_certified_and_marked_custom():
    entry = load_custom(MY)
    assert is_custom(entry) and entry.name == "my_rrs" and entry.level == "node"
    assert not is_custom(VERIFIERS["rrs"])
    cert = certify(entry, [CONTEXT3], (2, 2), mc_samples=1500)
    assert cert.lossless and cert.max_tv < 1e-9
    assert cert.monte_carlo and not any(m.flagged for m in cert.monte_carlo)


def test_wrong_verifier_is_flagged_by_the_exact_check():
    cert = certify(load_custom(WRONG), [CONTEXT3, random_language(3, 3, 3)], (2, 2), mc_trees=0)
    assert not cert.lossless and cert.max_tv > 0.05  # measured 0.069 (random language), 0.006 on context3
    assert cert.worst_case["kind"] == "exact" and cert.worst_case["tree"]
    # the bug needs a repeated draw: the tree that shows it has one
    assert any(len(set(c)) < len(c) for c in cert.worst_case["tree"].values())


def test_a_verify_that_disagrees_with_its_conditional_is_flagged(tmp_path):
    """conditional is exact SD on the first draft, but verify accepts it whenever p(x) >= q(x)/2."""
    liar = HEADER + SD_CONDITIONAL + """
def verify(p, q, candidates, generator):
    x = int(candidates[0])
    if float(p[x]) >= 0.5 * float(q[x]):
        return NodeVerdict(accepted=0, token=x)
    a, r = conditional(p, q, candidates)
    return NodeVerdict(accepted=None, token=int(torch.multinomial(r, 1, generator=generator)))
"""
    cert = certify(load_custom(_file(tmp_path, liar)), [CONTEXT3], (1, 1), mc_samples=1500)
    assert cert.max_tv < 1e-9  # the exact law is fine: only the real verify is wrong
    assert not cert.lossless and any(m.flagged for m in cert.monte_carlo)
    assert cert.worst_case["kind"] == "monte_carlo" and cert.worst_case["p_value"] < 1e-6


def test_an_honest_verify_passes_the_monte_carlo_check(tmp_path):
    honest = _file(tmp_path, HEADER + SD_CONDITIONAL + SD_VERIFY)
    cert = certify(load_custom(honest), [CONTEXT3], (1, 1), mc_samples=1500)
    assert cert.lossless and not any(m.flagged for m in cert.monte_carlo)


BAD = {
    "syntax error": ("LAW = 'iid'\ndef verify(:\n", "syntax error at line 2"),
    "missing function": (HEADER + SD_CONDITIONAL, "missing function verify"),
    "unknown law": (HEADER.replace("'iid'", "'magic'") + SD_CONDITIONAL + SD_VERIFY, "LAW must be one of"),
    "raises": (HEADER + SD_VERIFY + "\ndef conditional(p, q, candidates):\n    raise RuntimeError('boom')\n",
               r"conditional\(p, q, candidates=\[[0-9, ]*\]\) raised RuntimeError: boom"),
    "NaN": (HEADER + SD_VERIFY + "\ndef conditional(p, q, candidates):\n"
            "    return torch.full((len(candidates),), float('nan')), p\n", "conditional.*non-finite"),
    "wrong shapes": (HEADER + SD_VERIFY + "\ndef conditional(p, q, candidates):\n"
                     "    return torch.zeros(5), p\n", r"conditional.*shapes \(5,\)"),
    "verify garbage": (HEADER + SD_CONDITIONAL + "\ndef verify(p, q, candidates, generator):\n    return 3\n",
                       "verify.*returned int, expected"),
    "import raises": ("raise ImportError('no such thing')\n", "importing it raised ImportError"),
}


@pytest.mark.parametrize("label", sorted(BAD))
def test_bad_files_exit_2_with_one_line(tmp_path, capsys, label):
    body, pattern = BAD[label]
    path = _file(tmp_path, body)
    with pytest.raises(CustomVerifierError, match=pattern):
        load_custom(path)
    assert main(["certify", "--verifier-file", str(path), "--k", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err


def test_cli_exit_codes_and_json_contract(tmp_path, capsys):
    out = tmp_path / "c.json"
    assert main(["certify", "--verifier", "rrs_wor", "--tree", "2,2", "--language",
                 str(presets()["context3"]), "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert list(data) == ["verifier", "lossless", "max_tv", "cases", "worst_case", "expected_tokens",
                          "expected_accepted"]
    assert data["verifier"] == "rrs_wor" and data["lossless"] is True and data["max_tv"] < 1e-9
    assert data["cases"] > 1 and data["expected_tokens"] == pytest.approx(data["expected_accepted"] + 1)
    assert main(["certify", "--verifier-file", str(WRONG), "--random", "2", "--k", "2", "--json", str(out)]) == 3
    assert json.loads(out.read_text())["lossless"] is False
    assert main(["certify", "--verifier", "sd", "--k", "2"]) == 2
    assert main(["certify", "--verifier", "nope"]) == 2
    assert main(["certify", "--verifier", "rrs", "--language", str(tmp_path / "missing.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(line.startswith("error: ") for line in err)


def test_registration_is_explicit():
    entry = load_custom(MY)
    before = dict(VERIFIERS)
    view = registry_with(entry, VERIFIERS)
    assert "my_rrs" in view and "my_rrs" not in VERIFIERS and VERIFIERS == before
    mine = dict(VERIFIERS)
    assert register_custom(MY, mine) == "my_rrs" and is_custom(mine["my_rrs"]) and VERIFIERS == before
    with pytest.raises(CustomVerifierError, match="taken"):
        register_custom(MY, mine)
