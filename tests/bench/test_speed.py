"""`bench speed --quick` on the smallest real setting (two tiny random llamas as a custom pair): its JSON
holds every field, every method ran on every case, and the numbers agree with the raw runs. No timing
asserts: only structure and the arithmetic that turns runs into ratios and block efficiency."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from bench import speed_report as report
from decoding.run.config import DecodeConfig

ROOT = Path(__file__).resolve().parents[2]
BASELINES = ("generate", "assisted", "prompt_lookup", "target_alone")
CONFIGS = ("sd:1,1,1,1", "rrs_wor:3,2,2")
CONFIG_FIELDS = {"label", "verifier", "tree", "temperature", "block_efficiency", "acceptance_by_depth",
                 "fast_vs_generate", "recorded_vs_generate", "fast_vs_assisted", "fast_vs_target_alone",
                 "recorded_time_over_fast",
                 "lazy_time_over_fast", "eager_time_over_fast", "record_share_of_recorded"}


@pytest.fixture(scope="module")
def quick(tiny_matching_folders, tmp_path_factory) -> dict:
    target, draft = tiny_matching_folders
    out = tmp_path_factory.mktemp("bench") / "speed.json"
    res = subprocess.run([sys.executable, "-m", "bench", "speed", "--quick", "--pair", "custom",
                          "--target", str(target), "--draft", str(draft), "--configs", *CONFIGS,
                          "--json", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    assert "| T | method |" in res.stdout
    return json.loads(out.read_text())


def test_quick_json_has_every_field(quick):
    assert set(quick) == {"settings", "unavailable", "tokens_per_second", "baselines_vs_generate", "configs",
                          "other_pairs", "runs", "chart"}
    assert quick["unavailable"] == {}
    assert quick["settings"]["quick"] is True and quick["settings"]["command"].startswith("python -m bench speed")
    paths = ("fast", "recorded", "recorded-lazy")
    methods = set(BASELINES) | {f"specscope {path} {c}" for c in CONFIGS for path in paths}
    assert set(quick["tokens_per_second"]) == methods
    cases = 2 * 2 * 2  # --quick: 2 prompts x 2 repeats x temperatures 0 and 0.8
    assert len(quick["runs"]) == cases * len(methods)
    assert all(r["tokens"] > 0 and r["seconds"] > 0 for r in quick["runs"])
    assert [(c["label"], c["temperature"]) for c in quick["configs"]] == [(c, t) for t in (0.0, 0.8) for c in CONFIGS]
    for c in quick["configs"]:
        assert set(c) == CONFIG_FIELDS
        timed = {k for k in CONFIG_FIELDS if k.endswith(("generate", "assisted", "alone", "_fast"))}
        assert c["eager_time_over_fast"] is None  # recorded-eager is opt-in (--paths): not timed by default
        assert all(c[k]["n"] == 4 for k in timed - {"eager_time_over_fast"})
        be = c["block_efficiency"]
        assert be["steps"] > 0 and be["exact_expected"] is not None and be["ci95"][0] <= be["mean"] <= be["ci95"][1]
        assert c["acceptance_by_depth"][0]["depth"] == 0 and c["acceptance_by_depth"][0]["alpha_exact"] is not None
    assert Path(quick["chart"]["html"]).is_file()
    assert quick["chart"]["png"] and Path(quick["chart"]["png"]).stat().st_size > 5_000, quick["chart"]["png_note"]


def test_greedy_block_efficiency_equals_its_exact_expectation(quick):
    """At T = 0 every test is deterministic: the measured mean must be the exact expectation itself."""
    for c in quick["configs"]:
        if c["temperature"] == 0.0:
            be = c["block_efficiency"]
            assert be["exact_expected"] == pytest.approx(be["mean"], abs=1e-9) and be["exact_within_ci"]


def test_ratios_pair_runs_of_the_same_case():
    rows = [{"method": m, "case": c, "temperature": 0.0, "tokens_per_second": v}
            for m, c, v in [("a", 0, 10.0), ("b", 0, 5.0), ("a", 1, 30.0), ("b", 1, 10.0), ("a", 2, 99.0)]]
    assert report.ratios(rows, "a", "b", 0.0) == {"median": 2.5, "min": 2.0, "max": 3.0, "n": 2}


def test_fastest_is_a_lossless_pair_config_and_decoding_stays_light():
    from decoding import FASTEST
    from decoding.verify.registry import VERIFIERS

    kind, config = FASTEST
    assert kind in ("embedded", "embedded-head", "lookup")
    assert isinstance(config, DecodeConfig)
    assert VERIFIERS[config.verifier].lossless and not config.record  # a built-in pair, no hub needed
    probe = "import sys, decoding, decoding.run.schema; print('torch' in sys.modules)"
    res = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert res.stdout.strip() == "False", res.stderr


def test_paths_and_other_pairs_name_their_methods():
    from bench import speed as bench_speed
    from decoding.models import pairs

    configs = bench_speed.parse_configs(["sd:1,1"])
    floored = bench_speed.parse_configs(["sd:1,1,1,1:conf=0.3"])["sd:1,1,1,1:conf=0.3"]
    assert floored.min_confidence == 0.3 and floored.branching == (1, 1, 1, 1)
    for bad in ("sd:1,1:conf=x", "sd:1,1:fast"):
        with pytest.raises(ValueError, match="a config is verifier:tree"):
            bench_speed.parse_configs([bad])
    names = set(bench_speed.methods_of(configs, ("fast",), {"toy": pairs.load_pair("toy")}))
    assert names == {*BASELINES, "specscope fast sd:1,1", "specscope fast sd:1,1 [toy]"}
    with pytest.raises(ValueError, match="--paths takes a comma-separated subset"):
        bench_speed.parse_paths("fast,slow")
    rows = [{"method": m, "case": 0, "temperature": 0.0, "tokens_per_second": v}
            for m, v in [("generate", 10.0), ("specscope fast sd:1,1", 8.0), ("specscope fast sd:1,1 [toy]", 12.0)]]
    [other] = report.other_pairs(rows, configs, [0.0], ["toy"])
    assert other["fast_vs_generate"]["median"] == 1.2 and other["fast_vs_main_pair_fast"]["median"] == 1.5


def test_assisted_generation_gets_a_transformers_twin_of_the_lean_draft(tiny_matching_folders):
    """The embedded pairs' draft is a lean forward; transformers' assistant_model needs a transformers model of
    the same draft function (a LeanInt8Llama passed as is raised AttributeError: no generation_config)."""
    from types import SimpleNamespace

    from transformers import AutoModelForCausalLM

    from bench.speed_methods import transformers_draft
    from decoding.models.lean.int8_draft import LeanInt8Llama

    target = AutoModelForCausalLM.from_pretrained(tiny_matching_folders[0]).eval()
    for name in ("tiny-a", "tiny-b"):
        lean = LeanInt8Llama(target)
        pair = SimpleNamespace(kind="embedded", target_name=name, target_model=target, draft_model=lean)
        twin = transformers_draft(pair)
        assert twin is not lean and twin.generation_config is not None
        ids = torch.tensor([[3, 4, 5, 6]])
        with torch.inference_mode():
            want = twin(ids, logits_to_keep=1).logits[0, -1]  # one row: the int8 head quantizes per call
            torch.testing.assert_close(lean(ids, logits_to_keep=1).logits[0, -1], want, rtol=1e-4, atol=1e-4)
            out = target.generate(input_ids=ids, attention_mask=torch.ones_like(ids), assistant_model=twin,
                                  max_new_tokens=3, do_sample=False)
        assert out.shape[1] == ids.shape[1] + 3


def test_recorded_times_what_the_app_runs_and_reports_the_eager_numbers(monkeypatch):
    """'recorded' = a lazy-theory run plus the fill of the step the page shows (its last), inside the timed
    window; the other steps' theory is filled after the clock stops, so every path reports the eager records.
    Oracle: the eager run's records (engine.start without lazy_theory) and the order of clock reads and fills."""
    from dataclasses import fields, replace

    from bench import speed_methods as methods
    from decoding.models import pairs
    from decoding.run import engine

    toy = pairs.load_pair("toy")
    config = DecodeConfig(verifier="rrs_wor", branching=(3, 2), chat=False)
    case = methods.Case("the cat", (), 1.0, 1, 24)
    eager = list(engine.start(toy, config.with_(temperature=1.0, seed=1, max_new_tokens=24), "the cat"))

    def untimed(steps):
        return [replace(s, **{f.name: 0.0 for f in fields(s) if f.name.endswith("_ms")}) for s in steps]

    log, clock, fill = [], methods.time.perf_counter, engine.Run.fill_theory
    def bench_clock():  # only the benchmark's own clock reads (the engine times its step parts too)
        if sys._getframe(1).f_globals["__name__"] == methods.__name__:
            log.append("clock")
        return clock()

    monkeypatch.setattr(methods.time, "perf_counter", bench_clock)
    monkeypatch.setattr(engine.Run, "fill_theory", lambda run, i: log.append(i) or fill(run, i))
    for path in ("recorded", "recorded-lazy", "recorded-eager"):
        log.clear()
        timed = methods.specscope(config, path)(toy, case)
        assert len(eager) > 3 and untimed(timed.steps) == untimed(eager), path
        last = len(eager) - 1
        assert log == {"recorded": ["clock", last, "clock", *range(len(eager))],
                       "recorded-lazy": ["clock", "clock", *range(len(eager))],
                       "recorded-eager": ["clock", "clock"]}[path]
    assert methods.specscope(config, "fast")(toy, case).steps == ()
