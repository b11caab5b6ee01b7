"""`python -m bench train-head`'s flags: bad input exits 2 with one line, before any model loads; the whole
fused pipeline at a toy scale (slow: the embedded model) writes a candidate head with its card and ships it only
as --ship says."""

from __future__ import annotations

import json

import pytest
import torch

from bench import head_pipeline, train_head
from decoding.models.head import weights as draft_head
from decoding.models.head.ranked_ids import IDS, ranked_ids


@pytest.mark.parametrize("argv, says", [
    (["--data", "a.safetensors"], "--data belong to --kind mlp"),
    (["--epochs", "3"], "--epochs belong to --kind mlp"),
    (["--taps", "16,3"], "--taps are increasing layer numbers"),
    (["--taps", "three"], "comma-separated numbers"),
    (["--steps", "0"], "must be at least 1"),
    (["--eval-prompts", "/nowhere/prompts.json"], "no such file"),
    (["--init", "/nowhere/head"], "--init: no saved head in /nowhere/head"),
    (["--evaluate", "/nowhere/head"], "--evaluate: no saved head in /nowhere/head"),
    (["--train-seconds", "0"], "must be above 0"),
    (["--eval-ids", "-1"], "--eval-ids must be 0"),
    (["--rank-ids", "/nowhere/head"], "--rank-ids: no saved head in /nowhere/head"),
    (["--rank-ids", str(draft_head.HEAD_DIR), "--evaluate", str(draft_head.HEAD_DIR)], "two runs"),
    (["--rank-ids", str(draft_head.HEAD_DIR), "--work", "/nowhere/work"], "no data shards under /nowhere/work"),
])
def test_bad_flags_exit_2_with_one_line(argv, says, capsys) -> None:
    assert train_head.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert says in err and "\n" not in err and err.startswith("error: ")


@pytest.mark.slow
def test_the_fused_pipeline_at_toy_scale_writes_a_candidate_and_its_card(tmp_path, capsys) -> None:
    prompts = tmp_path / "prompts.json"
    prompts.write_text(json.dumps({"prompts": ["Name three colours.", "Write a Python function that adds 1."]}))
    out = tmp_path / "out"
    argv = ["--work", str(tmp_path / "work"), "--out", str(out), "--chat-shards", "1", "--magpie-shards", "0",
            "--docs-shards", "1", "--code-shards", "1", "--batch", "2", "--new-tokens", "8", "--steps", "2",
            "--train-batch", "2", "--eval-prompts", str(prompts), "--eval-tokens", "4", "--ship", "never"]
    assert train_head.main(argv) == 0
    assert not out.exists()  # --ship never: the shipped head stays
    candidate = tmp_path / "work" / "candidate"
    about = json.loads((candidate / draft_head.CONFIG).read_text())
    assert about["kind"] == "fused" and about["about"]["train"]["steps"] == 2
    assert set(about["about"]["data"]) == {"chat", "docs", "code"}
    assert about["about"]["ids"]["sources"] == ["chat"] and about["about"]["ids"]["scored"] == 8192
    assert ranked_ids(candidate, 49152)[:5].tolist() != list(range(5))  # ranked by its answers, not the lowest
    assert set(about["about"]["held_out"]["acceptance"]) == {"shipped", "new"}
    assert "| new | 0.8 |" in (candidate / "README.md").read_text()
    assert type(draft_head.load_head(candidate)).__name__ == "FusedHead"
    capsys.readouterr()
    assert train_head.main(argv + ["--stop-after", "train"]) == 0  # a rerun resumes: shards and checkpoint kept
    err = capsys.readouterr().err
    assert "data:" not in err and "from step 2 of 2" in err
    saved = draft_head.load_head(candidate).state_dict()
    init = ["--seed", "1", "--steps", "1", "--lr", "1e-7", "--init", str(candidate), "--stop-after", "train"]
    assert train_head.main(argv + init) == 0  # another seed: a fresh head would start elsewhere
    about = json.loads((candidate / draft_head.CONFIG).read_text())["about"]
    assert about["train"]["init"]["from"] == str(candidate) and "--steps 2" in about["train"]["init"]["made_by"]
    for name, tensor in draft_head.load_head(candidate).state_dict().items():
        assert torch.allclose(tensor, saved[name], atol=1e-3), name  # it trained on from the saved head
    assert "from the head in " + str(candidate) in head_pipeline.card_text(
        {"made_by": "x", "device": "cpu", "data": {}, "train": about["train"], "wall": {},
         "held_out": {"count": 0, "prompts": "p", "new_tokens": 0}}, [])
    shipped_to = tmp_path / "shipped"
    evaluate = ["--evaluate", str(candidate), "--eval-prompts", str(prompts), "--eval-tokens", "4", "--ship",
                "always", "--out", str(shipped_to)]
    assert train_head.main(evaluate) == 0  # the check alone, of a head trained elsewhere: its card, then shipped
    about = json.loads((shipped_to / draft_head.CONFIG).read_text())["about"]
    assert about["held_out_on"] == "cpu" and about["train"]["steps"] == 1  # the card kept, the check added
    assert set(about["held_out"]["acceptance"]) == {"shipped", "new"} and about["held_out"]["count"] == 2
    assert "on cpu; 2 prompts" in (shipped_to / "README.md").read_text()
    for name, tensor in draft_head.load_head(shipped_to).state_dict().items():
        assert torch.equal(tensor, draft_head.load_head(candidate).state_dict()[name]), name
    assert (shipped_to / IDS).read_bytes() == (candidate / IDS).read_bytes()  # its ids ship with it
    (shipped_to / IDS).write_bytes(b"not a ranking")
    capsys.readouterr()
    assert train_head.main(evaluate[:1] + [str(shipped_to)] + evaluate[2:]) == 2  # a clear line, no traceback
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("error: --evaluate: the draft head's id ranking") and "unreadable" in err
    shipped = {f: f.read_bytes() for f in draft_head.HEAD_DIR.iterdir() if f.is_file()}
    capsys.readouterr()
    assert train_head.main(evaluate[:1] + [str(draft_head.HEAD_DIR)] + evaluate[2:]) == 0  # the shipped head's own
    assert "| new | 0.8 |" in capsys.readouterr().out  # its check printed, its folder (the curated card) untouched
    assert {f: f.read_bytes() for f in draft_head.HEAD_DIR.iterdir() if f.is_file()} == shipped


@pytest.mark.slow
def test_the_held_out_check_scores_the_ids_the_pair_scores_here_or_the_ones_asked_for() -> None:
    """head_pipeline.eval_pairs: on a CPU both heads score the 8192 ids its pair scores (pair.scored_ids); with
    --eval-ids 49152 both score every id (a GPU's q, checked on a CPU), the shipped head's own weights included."""
    from decoding.models.embedded import model as embedded
    from decoding.models.head.pair import CPU_IDS

    model = embedded.load_target("cpu", lambda *a: None)
    head = draft_head.load_head().eval()
    ranked = torch.arange(49152).flip(0)  # the new head's ranking: the highest ids first
    for ids, want in ((0, CPU_IDS), (49152, 49152)):
        pairs = head_pipeline.eval_pairs(model, head, "cpu", ranked, ids)
        assert [pairs[name].draft_products.head_size for name in ("shipped", "new")] == [want, want]
        assert torch.equal(pairs["new"].draft_products.ids, ranked[:want])
        assert torch.equal(pairs["shipped"].draft_products.ids, ranked_ids(draft_head.HEAD_DIR, 49152)[:want])
        assert pairs["shipped"].draft_products.module is not pairs["new"].draft_products.module
