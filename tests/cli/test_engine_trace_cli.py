"""`python -m decoding engine-trace` (decoding/cli/engine_trace.py): a PR's record analysed with its numbers and
the expectation beside it; a bad record exits 2 with its one-line reason; a run exported and read back; the
`specscope` script passes the subcommand on."""

from __future__ import annotations

import json
from pathlib import Path

from decoding.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "assets" / "engine_traces"


def test_a_vllm_record_with_the_pairs_expectation(tmp_path, capsys):
    out = tmp_path / "analysis.json"
    code = main(["engine-trace", str(EXAMPLES / "vllm_pr48915_summary.json"), "--expect-pair", "embedded",
                 "--temperature", "0.8", "--json", str(out)])
    text = capsys.readouterr().out
    assert code == 0
    assert "vLLM record (summary): 10 of 129 drafts accepted (0.0775), 43 verification steps, mean acceptance " \
           "length 1.2326" in text
    assert "       1       43        4  0.0930  [0.037, 0.216]" in text
    assert "accepted drafts per step (steps): 0: 39, 1: 1, 2: 0, 3: 3" in text
    assert "expected (exact, embedded pair's shipped chain acceptance at T = 0.8" in text
    saved = json.loads(out.read_text())
    assert [r["accepted"] for r in saved["rates"]] == [4, 3, 3] and len(saved["expected"]["alphas"]) == 3


def test_a_bad_record_exits_2_with_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"metrics": {"speculative_decoding": {
        "num_spec_steps": 43, "num_draft_tokens": 129, "num_accepted_draft_tokens": 10, "num_spec_tokens": 3,
        "acceptance_histogram": [38, 1, 0, 3]}}}))
    assert main(["engine-trace", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err == "error: vLLM record: the acceptance histogram sums to 42 steps, but the record counts 43\n"
    assert main(["engine-trace", str(EXAMPLES / "vllm_pr48915_summary.json"), "--expect-pair", "nope"]) == 2
    assert capsys.readouterr().err.startswith("error: no shipped acceptance for pair 'nope'")
    assert main(["engine-trace", str(tmp_path / "missing.json")]) == 2


def test_a_run_exported_then_read_back(tmp_path, capsys):
    trace = tmp_path / "trace.json"
    assert main(["generate", "--pair", "toy", "--prompt", "the cat", "--verifier", "sd", "--tree", "1,1,1",
                 "--temperature", "1", "--seed", "4", "--max-new-tokens", "24", "--no-chat", "--json", str(trace)]) == 0
    capsys.readouterr()
    record = tmp_path / "run.sglang.json"
    assert main(["engine-trace", str(trace), "--export", "sglang", "-o", str(record)]) == 0
    stats = json.loads(record.read_text())["meta_info"]["speculative_decoding_stats"]
    assert len(stats["verify_lengths"]) == stats["num_verification_steps"] and set(stats["verify_lengths"]) == {4}
    assert main(["engine-trace", str(record), "--expect-trace", str(trace)]) == 0
    text = capsys.readouterr().out
    assert text.startswith("SGLang record (detailed)") and "specscope exact" in text
    tree = tmp_path / "tree.json"
    main(["generate", "--pair", "toy", "--prompt", "the cat", "--verifier", "rrs", "--tree", "2,2", "--no-chat",
          "--max-new-tokens", "8", "--json", str(tree)])
    capsys.readouterr()
    assert main(["engine-trace", str(tree), "--export", "vllm"]) == 2
    assert "drafted a tree" in capsys.readouterr().err


def test_the_script_passes_engine_trace_on():
    script = (ROOT / "specscope").read_text()
    assert "generate|compare|certify|museum|saguaro|engine-trace) setup;" in script
