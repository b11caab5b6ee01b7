"""Engine records in (decoding/run/engine_traces.py, engine_shape.py; docs/verifiers.md §22): each fixture built
from a PR's own example (assets/engine_traces/, each file says where it came from) gives the numbers that PR shows;
a bad record is refused with its one-line reason; two broken imports (a rejected position counted as accepted, and
SGLang's lengths read without taking off the root/bonus token) fail."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from decoding.run import engine_shape, engine_traces

EXAMPLES = Path(__file__).resolve().parents[2] / "assets" / "engine_traces"


def fixture(name: str) -> engine_traces.EngineRecord:
    return engine_traces.read_file(EXAMPLES / name)


def counts(record: engine_traces.EngineRecord) -> tuple[tuple[int, ...], tuple[int, ...]]:
    got = engine_shape.positions(record)
    assert not isinstance(got, str), got
    return got.reached, got.accepted


# ---- each fixture gives its PR's numbers ---------------------------------------------------------------------


def test_vllm_summary_gives_pr_48915s_numbers():
    r = fixture("vllm_pr48915_summary.json")
    assert (r.engine, r.mode, r.steps, r.drafted, r.accepted, r.max_draft) == ("vllm", "summary", 43, 129, 10, 3)
    assert r.histogram == (39, 1, 0, 3)
    assert r.mean_acceptance_length == 1.2325581395348837  # the PR's number, to the last digit
    assert r.acceptance_rate == 0.07751937984496124
    # every step drafted k = 3 (129 = 43 x 3): position i reached by the steps accepting >= i - 1
    assert counts(r) == ((43, 4, 3), (4, 3, 3))


def test_vllm_detailed_gives_the_same_numbers_from_its_steps():
    r = fixture("vllm_pr48915_detailed.json")
    assert r.mode == "detailed" and len(r.per_step) == 43 and all(d == 3 for d, _ in r.per_step)
    assert (r.steps, r.drafted, r.accepted, r.histogram) == (43, 129, 10, (39, 1, 0, 3))
    assert r.mean_acceptance_length == 1.2325581395348837
    assert counts(r) == ((43, 4, 3), (4, 3, 3))
    rates = engine_shape.analyse(r).rates
    assert [round(x.rate, 4) for x in rates] == [0.093, 0.75, 1.0]


def test_sglang_gives_pr_34814s_numbers():
    r = fixture("sglang_pr34814_detailed.json")
    assert (r.engine, r.mode, r.steps, r.drafted, r.accepted) == ("sglang", "detailed", 2, 9, 5)
    assert r.acceptance_rate == pytest.approx(5 / 9) and r.mean_acceptance_length == 3.5  # the PR's test's numbers
    assert r.per_step == ((5, 3), (4, 2))  # verify lengths [6, 5], accept lengths [4, 3], root/bonus counted
    assert r.histogram == (0, 0, 1, 1, 0, 0)
    assert counts(r) == ((2, 2, 2, 1, 0), (2, 2, 1, 0, 0))


def test_llamacpp_timings_give_pr_12603s_totals_and_no_positions():
    r = fixture("llamacpp_pr12603_timings.json")
    assert (r.engine, r.drafted, r.accepted, r.steps) == ("llamacpp", 347, 65, None)
    assert r.acceptance_rate == pytest.approx(65 / 347)
    assert "totals only" in engine_shape.positions(r)


@pytest.mark.parametrize("name", ["llamacpp_pr24536_statistics.txt", "llamacpp_pr24536_request.txt"])
def test_llamacpp_log_lines_give_pr_24536s_numbers(name):
    r = fixture(name)
    assert (r.steps, r.drafted, r.accepted) == (87, 259, 167)
    assert round(r.mean_acceptance_length, 2) == 2.92 and round(r.acceptance_rate, 5) == 0.64479
    got = engine_shape.positions(r)
    assert got.accepted == (70, 55, 42)  # 0.805, 0.632, 0.483 of 87 steps: summing to the 167 accepted
    assert got.reached == (87, 70, 55) and not got.exact  # 259 < 87 x 3: some steps drafted fewer (upper bounds)


def test_wilson_interval_and_the_cliff():
    assert engine_shape.wilson(4, 43) == pytest.approx((0.0368, 0.2160), abs=5e-4)
    lo, hi = engine_shape.wilson(0, 10)
    assert lo == 0 and hi == pytest.approx(0.2775, abs=5e-4)
    steady = engine_traces.parse({"num_spec_steps": 100, "num_draft_tokens": 300, "num_accepted_draft_tokens": 0,
                                  "num_spec_tokens": 3, "acceptance_histogram": [100, 0, 0, 0]})
    assert engine_shape.analyse(steady).cliff is None
    # 100 steps of 4: 90 % accept positions 1-2, then only 1 in 9 of those accepts position 3
    per_step = [2] * 80 + [4] * 10 + [0] * 10
    cliffy = engine_traces.parse({"num_spec_steps": 100, "num_draft_tokens": 400,
                                  "num_accepted_draft_tokens": sum(per_step), "num_spec_tokens": 4,
                                  "acceptance_histogram": [per_step.count(j) for j in range(5)],
                                  "per_step_accepted": per_step, "per_step_drafted": [4] * 100})
    analysis = engine_shape.analyse(cliffy)
    assert [r.rate for r in analysis.rates] == [0.9, 1.0, pytest.approx(1 / 9), 1.0]
    assert analysis.cliff == 3 and "cliff at position 3" in analysis.cliff_note


def test_the_expected_shape_of_a_chain():
    exp = engine_shape.expected((0.8, 0.5, 0.9, 0.7), 3, "test")
    assert exp.alphas == (0.8, 0.5, 0.9)
    assert exp.histogram == pytest.approx((0.2, 0.4, 0.04, 0.36))
    assert sum(exp.histogram) == pytest.approx(1) and exp.mean_length == pytest.approx(1 + 0.8 + 0.4 + 0.36)


# ---- bad records: one line each ------------------------------------------------------------------------------


def _vllm() -> dict:
    return json.loads((EXAMPLES / "vllm_pr48915_detailed.json").read_text())["metrics"]["speculative_decoding"]


def _sglang() -> dict:
    return json.loads((EXAMPLES / "sglang_pr34814_detailed.json").read_text())["meta_info"][
        "speculative_decoding_stats"]


def _without(d: dict, key: str) -> dict:
    d = copy.deepcopy(d)
    del d[key]
    return d


def _with(d: dict, **values) -> dict:
    d = copy.deepcopy(d)
    d.update(values)
    return d


BAD = [
    (_without(_vllm(), "num_accepted_draft_tokens"), "missing field 'num_accepted_draft_tokens'"),
    (_without(_vllm(), "acceptance_histogram"), "missing field 'acceptance_histogram'"),
    (_with(_vllm(), num_draft_tokens=-1), "num_draft_tokens is negative (-1)"),
    (_with(_vllm(), num_spec_steps=43.0), "num_spec_steps must be a whole number"),
    (_with(_vllm(), acceptance_histogram=[38, 1, 0, 3]), "sums to 42 steps, but the record counts 43"),
    (_with(_vllm(), acceptance_histogram=[39, 2, 0, 2]), "holds 8 accepted drafts, but the record counts 10"),
    (_with(_vllm(), acceptance_histogram=[39, 1, 3]), "has 3 entries; num_spec_tokens = 3 needs 4"),
    (_with(_vllm(), num_accepted_draft_tokens=130, acceptance_histogram=[0, 0, 0, 43]),
     "num_accepted_draft_tokens (130) exceeds num_draft_tokens (129)"),
    (_with(_vllm(), mean_acceptance_length=1.5), "mean_acceptance_length is 1.5 but"),
    (_with(_vllm(), per_step_accepted=[0] * 42), "per_step_drafted has 43 entries, per_step_accepted 42"),
    (_with(_vllm(), per_step_accepted=[4] + [0] * 42), "step 0 accepted 4 drafts of 3 drafted"),
    (_without(_vllm(), "per_step_drafted"), "missing field 'per_step_drafted'"),
    (_with(_sglang(), num_accepted_draft_tokens=10), "num_accepted_draft_tokens (10) exceeds"),
    (_with(_sglang(), accept_lengths=[4, 0]), "is below 1"),
    (_with(_sglang(), accept_lengths=[4, 4]), "the steps accepted 6 in all, but the record counts 5"),
    (_with(_sglang(), mean_accept_length=4.5), "mean_accept_length is 4.5"),
    ({"timings": {"draft_n": 10, "draft_n_accepted": 12}}, "draft_n_accepted (12) exceeds draft_n (10)"),
    ({"timings": {"draft_n_accepted": 2}}, "no engine record found"),
    ({"choices": []}, "no engine record found"),
]


@pytest.mark.parametrize("data, reason", BAD, ids=[reason[:40] for _, reason in BAD])
def test_a_bad_record_gets_its_one_line_reason(data, reason):
    with pytest.raises(ValueError) as err:
        engine_traces.parse(data)
    assert reason in str(err.value) and "\n" not in str(err.value)


BAD_TEXT = [
    ("{ not json", None, "not valid JSON"),
    ("hello", None, "no llama.cpp record here"),
    ("{}", "vllm", "no vLLM record here"),
    (json.dumps({"metrics": {"speculative_decoding": _vllm()}}), "sglang", "no SGLang record here"),
    ("#gen drafts = 87, #acc drafts = 70, #gen tokens = 259, #acc tokens = 167, #mean acc len = 2.92, "
     "#acc rate/pos = (0.805, 0.632, 0.494)", None, "give 168 accepted drafts"),
    ("#gen drafts = 87, #acc drafts = 71, #gen tokens = 259, #acc tokens = 167, #mean acc len = 2.92, "
     "#acc rate/pos = (0.805, 0.632, 0.483)", None, "#acc drafts is 71"),
    ("#gen drafts = 87, #acc drafts = 70, #gen tokens = 159, #acc tokens = 167", None, "exceeds #gen tokens (159)"),
    ("draft acceptance = 0.64479 (  167 accepted /   259 generated), mean acceptance length =  1.00", None,
     "mean acceptance length 1.0"),
    ("x", "zzz", "unknown engine format 'zzz'"),
]


@pytest.mark.parametrize("text, fmt, reason", BAD_TEXT, ids=[r[:40] for _, _, r in BAD_TEXT])
def test_a_bad_file_gets_its_one_line_reason(text, fmt, reason):
    with pytest.raises(ValueError) as err:
        engine_traces.parse_text(text, fmt)
    assert reason in str(err.value) and "\n" not in str(err.value)


def test_wrappers_the_engines_use_are_found():
    summary = _without(_without(_vllm(), "per_step_accepted"), "per_step_drafted")
    for wrapped in (summary, {"metrics": {"speculative_decoding": summary}},
                    {"data": {"choices": [], "metrics": {"speculative_decoding": summary}}},
                    {"choices": [{"speculative_decoding_stats": dict(summary, acceptance_histogram={"0": 39, "1": 1,
                                                                                                     "3": 3})}]}):
        assert engine_traces.parse(wrapped).histogram == (39, 1, 0, 3)
    stats = _sglang()
    for wrapped in (stats, {"meta_info": {"speculative_decoding_stats": stats}},
                    {"sglext": {"speculative_decoding_stats": [dict(stats, index=0)]}}):
        assert engine_traces.parse(wrapped).per_step == ((5, 3), (4, 2))
    with pytest.raises(ValueError, match="holds 2 choices"):
        engine_traces.parse({"sglext": {"speculative_decoding_stats": [stats, stats]}})


def test_a_summary_with_ragged_drafts_says_why_it_has_no_positions():
    r = engine_traces.parse({"num_spec_steps": 3, "num_draft_tokens": 7, "num_accepted_draft_tokens": 2,
                             "num_spec_tokens": 3, "acceptance_histogram": [1, 2, 0, 0]})
    assert "need the per-step lists" in engine_shape.positions(r)
    sglang_summary = _without(_without(_sglang(), "verify_lengths"), "accept_lengths")
    assert "detailed" in engine_shape.positions(engine_traces.parse(sglang_summary))


def test_an_oversized_file_is_refused_unread(tmp_path, monkeypatch):
    path = tmp_path / "big.json"
    path.write_text("{}" + " " * 100)
    monkeypatch.setattr(engine_traces, "MAX_RECORD_BYTES", 50)
    with pytest.raises(ValueError, match="an engine record is a few kB"):
        engine_traces.read_file(path)


# ---- broken imports fail -------------------------------------------------------------------------------------


def prs_positions_hold() -> bool:
    """The per-step fixtures' per-position counts are the PRs' (what the tests above assert), as one check."""
    try:
        return (counts(fixture("vllm_pr48915_detailed.json")) == ((43, 4, 3), (4, 3, 3))
                and counts(fixture("sglang_pr34814_detailed.json")) == ((2, 2, 2, 1, 0), (2, 2, 1, 0, 0)))
    except ValueError:
        return False


def test_the_real_import_holds():
    assert prs_positions_hold()


def test_an_import_counting_rejected_positions_as_accepted_fails(monkeypatch):
    def counting_rejected(per_step):  # a reached position is counted accepted whether or not it passed
        depth = max(d for d, _ in per_step)
        reached = tuple(sum(1 for d, a in per_step if d >= i and a >= i - 1) for i in range(1, depth + 1))
        return engine_shape.Positions(reached, reached)

    monkeypatch.setattr(engine_shape, "positions_from_steps", counting_rejected)
    assert not prs_positions_hold()


def test_sglang_lengths_read_with_the_bonus_token_as_a_draft_fail(monkeypatch):
    real = engine_traces.paired_steps

    def with_bonus(obj, drafted_key, accepted_key, who, minus=0):  # forgets that each length counts the bonus
        return real(obj, drafted_key, accepted_key, who, 0)

    monkeypatch.setattr(engine_traces, "paired_steps", with_bonus)
    assert not prs_positions_hold()
