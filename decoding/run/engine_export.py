"""A specscope run in the engines' shapes, and the exact acceptance its records hold (docs/verifiers.md §22).

An engine record counts, per verification step, the drafts proposed and the drafts accepted. A specscope step
on one draft chain is exactly that: its chain's nodes are the drafts, its accepted path (root aside) the accepted
ones. So a run exports as vLLM's `metrics.speculative_decoding` (detailed: per-step lists), SGLang's
`meta_info.speculative_decoding_stats` (detailed: lengths counting the root/bonus token) and llama.cpp's
`statistics` line (its per-position rates), and reading one back (engine_traces) gives the run's own per-position
counts. A step that drafted nothing is no verification step (an engine counts none) and is left out. Trees are
refused: an engine's per-step counts describe one chain, and a tree's nodes are not positions.

`depth_alphas` is the exact side: the run's per-node exact acceptance (`VisitRecord.alpha_exact`, one candidate per
visit) averaged per depth, P(accept at depth d | reached) over the nodes this run reached there.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence

from decoding.run.engine_traces import EngineRecord, histogram_of
from decoding.run.schema import StepRecord, Trace

SHAPES = ("vllm", "sglang", "llamacpp")


def chain_step(step: StepRecord) -> tuple[int, int]:
    """(drafted, accepted) of one step on a chain; a ValueError when the step drafted a tree."""
    children: dict[int, int] = defaultdict(int)
    for node in step.nodes:
        if node.parent >= 0:
            children[node.parent] += 1
    if any(n > 1 for n in children.values()):
        widest = max(children.values())
        raise ValueError(f"step {step.index} drafted a tree ({widest} children at a node): an engine record counts "
                         "one draft chain per step; export a chain run (--tree 1,1,1 or --sequences 1)")
    return len(step.nodes) - 1, len(step.accepted_path) - 1


def record_of_trace(trace: Trace) -> EngineRecord:
    """The run's verification steps as an engine-neutral record (engine 'specscope', detailed)."""
    per_step = tuple(pair for pair in (chain_step(s) for s in trace.steps) if pair[0] > 0)
    if not per_step:
        raise ValueError("this run verified no drafts (no step drafted a token): nothing to export")
    k = max(d for d, _ in per_step)
    return EngineRecord("specscope", "detailed", sum(d for d, _ in per_step), sum(a for _, a in per_step),
                        len(per_step), k, histogram_of(tuple(a for _, a in per_step), k + 1), per_step)


def to_vllm(record: EngineRecord) -> dict:
    """vLLM's response `metrics` in detailed mode (PR #48915's fields)."""
    return {"metrics": {"speculative_decoding": {
        "mean_acceptance_length": record.mean_acceptance_length,
        "draft_acceptance_rate": record.acceptance_rate,
        "acceptance_histogram": list(record.histogram),
        "num_spec_steps": record.steps,
        "num_accepted_draft_tokens": record.accepted,
        "num_draft_tokens": record.drafted,
        "num_spec_tokens": record.max_draft,
        "per_step_accepted": [a for _, a in record.per_step],
        "per_step_drafted": [d for d, _ in record.per_step]}}}


def to_sglang(record: EngineRecord) -> dict:
    """SGLang's native meta_info in detailed mode (PR #34814's fields; lengths count the root/bonus token)."""
    return {"meta_info": {"speculative_decoding_stats": {
        "num_verification_steps": record.steps,
        "num_verified_draft_tokens": record.drafted,
        "num_accepted_draft_tokens": record.accepted,
        "draft_acceptance_rate": record.acceptance_rate,
        "mean_accept_length": record.mean_acceptance_length,
        "verify_lengths": [d + 1 for d, _ in record.per_step],
        "accept_lengths": [a + 1 for _, a in record.per_step]}}}


def to_llamacpp(record: EngineRecord) -> str:
    """llama.cpp's `statistics` line (PR #24536's words): #gen drafts = steps, #acc drafts = steps accepting
    position 1, rate/pos[i] = accepted at i + 1 / steps. llama.cpp prints 3 decimals, which pins a count only
    below 1000 steps; a longer run gets as many decimals as its step count has digits."""
    steps = record.steps
    at = [sum(1 for _, a in record.per_step if a >= i) for i in range(1, record.max_draft + 1)]
    decimals = max(3, len(str(steps)))
    rates = ", ".join(f"{c / steps:.{decimals}f}" for c in at)
    return (f"statistics specscope: #gen drafts = {steps}, #acc drafts = {at[0]}, #gen tokens = {record.drafted}, "
            f"#acc tokens = {record.accepted}, #mean acc len = {record.mean_acceptance_length:.2f}, "
            f"#acc rate/pos = ({rates})\n")


def export_text(trace: Trace, shape: str) -> str:
    """The run in one engine's shape, as the text of its file (JSON for vLLM and SGLang, a log line for
    llama.cpp)."""
    if shape not in SHAPES:
        raise ValueError(f"unknown engine shape {shape!r}; one of {', '.join(SHAPES)}")
    record = record_of_trace(trace)
    if shape == "llamacpp":
        return to_llamacpp(record)
    return json.dumps(to_vllm(record) if shape == "vllm" else to_sglang(record), indent=1) + "\n"


def depth_alphas(steps: Sequence[StepRecord]) -> tuple[float, ...] | str:
    """P(accept at depth d | reached), d = 1.., each the mean exact acceptance of the run's one-candidate visits whose
    candidate sits at depth d; or the one-line reason the records hold none. Stops at the first depth no visit
    reached (a deeper one would be a guess)."""
    by_depth: dict[int, list[float]] = defaultdict(list)
    for step in steps:
        for visit in step.visits:
            if len(visit.candidates) == 1 and visit.alpha_exact is not None and not visit.alpha_stderr:
                by_depth[step.nodes[visit.node].depth + 1].append(visit.alpha_exact)
    alphas = []
    for depth in range(1, max(by_depth, default=0) + 1):
        if not by_depth.get(depth):
            break
        alphas.append(sum(by_depth[depth]) / len(by_depth[depth]))
    if not alphas:
        return ("this run's records hold no exact per-node acceptance of one candidate (a tree-level verifier, trees "
                "of several candidates, or its theory not computed)")
    return tuple(alphas)
