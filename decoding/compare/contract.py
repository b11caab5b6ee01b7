"""The compare CLI's JSON: a contract read by outside checks (issue 10). Exactly these fields, plus extras."""

from __future__ import annotations

from decoding.run.compare_schema import CompareVerdict
from decoding.run.schema import StepRecord


def verdict_json(v: CompareVerdict) -> dict:
    return {
        "law": v.law,
        "tree": [[parent, token] for parent, token in zip(v.parents, v.tokens, strict=True)],
        "accepted_path": list(v.accepted_path),
        "emitted": list(v.emitted),
        "visits": [
            {"node": x.node, "exact_acceptance": x.exact_acceptance, "optimal_acceptance": x.optimal_acceptance,
             "membership_bound": x.membership_bound, "conditional_acceptance": x.conditional_acceptance}
            for x in v.visits
        ],
        "accepted_length_law": list(v.accepted_length_law),
        "expected_tokens": v.expected_tokens,
        "mc_histogram": list(v.mc_histogram),
        "mc_pvalue": v.mc_pvalue,
    }


def step_json(step: StepRecord) -> dict:
    if step.compare is None:
        raise ValueError(f"step {step.index} was not a compared step")
    return {
        "target_forwards": step.target_forwards,
        "run_verifier": step.compare.run_verifier,
        "verdicts": {v.key: verdict_json(v) for v in step.compare.verdicts},
    }


def steps_json(steps: list[StepRecord] | tuple[StepRecord, ...], runs: dict | None = None) -> dict:
    out: dict = {"steps": [step_json(s) for s in steps]}
    if runs is not None:
        out["runs"] = runs
    return out
