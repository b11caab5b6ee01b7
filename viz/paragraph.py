"""The step in one paragraph: what was drafted, what the verifier accepted and rejected, what was emitted
and why, and the exact expected tokens for this tree against what happened (pure: a StepRecord -> text)."""

from __future__ import annotations

from decoding.run.schema import BONUS, REJECTED, RESIDUAL, StepRecord
from viz.narrate import About, plural, tok


def step_paragraph(step: StepRecord, about: About | None = None) -> str:
    about = about or About()
    return " ".join(s for s in (_drafted(step, about), _judged(step), _emitted(step), _expected(step)) if s)


def _drafted(step: StepRecord, about: About) -> str:
    drafted = len(step.nodes) - 1
    if drafted == 0:
        why = (" (prompt lookup: no earlier occurrence of the last 3 or 2 tokens)" if about.draft_kind == "lookup"
               else "")
        return f"Step {step.index + 1}: the draft proposed nothing{why}, so this step is plain decoding."
    return (f"Step {step.index + 1}: the draft proposed {plural(drafted, 'token')} "
            f"({plural(len(step.nodes[0].draws), 'candidate')} at the root).")


def _judged(step: StepRecord) -> str:
    if len(step.nodes) == 1:
        return ""
    accepted = [step.nodes[i] for i in step.accepted_path[1:]]
    rejected = sum(1 for n in step.nodes if n.status == REJECTED)
    kept = ", ".join(tok(n.text) for n in accepted) if accepted else "none of them"
    return f"{step.verifier} accepted {kept} and rejected {plural(rejected, 'candidate')}."


def _emitted(step: StepRecord) -> str:
    last = step.emitted[-1] if step.emitted else None
    if len(step.nodes) == 1 and last is not None:
        return f"It emitted {tok(last.text)}, the target's own next token."
    why = ("" if last is None else
           f" The last one, {tok(last.text)}, is a residual sample: every candidate at node {last.node} was rejected."
           if last.kind == RESIDUAL else
           f" The last one, {tok(last.text)}, is a bonus token from p: the whole accepted path reached a leaf."
           if last.kind == BONUS else "")
    return f"It emitted {plural(step.n_emitted, 'token')}: {''.join(e.text for e in step.emitted)!r}.{why}"


def _expected(step: StepRecord) -> str:
    if step.expected_tokens is None:
        return ""
    return (f"For this tree the exact expected number of tokens is {step.expected_tokens:.2f}; "
            f"this step gave {step.n_emitted}.")
