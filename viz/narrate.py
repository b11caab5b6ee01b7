"""The sentences of a step's story (viz/story.py): one function per event kind, numbers formatted as the
node's tests table shows them (rounded to 4 digits; residual rows to 3), token texts with visible whitespace.

Plain text (the HTML view escapes it). Tree-level events are told from their record's own label and note,
with a first sentence per known kind (TREE_OPENINGS) and a generic one for a kind this file does not know,
so a new tree-level verifier's story is told without a change here.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from decoding.run.schema import (
    BONUS,
    RESIDUAL,
    EmittedRecord,
    StepRecord,
    TestRecord,
    TreeEventRecord,
    UpdateRecord,
    VisitRecord,
)
from viz.lookup import token_p
from viz.tokens import shorten, visible


@dataclass(frozen=True)
class About:
    """What a record does not say, supplied by the caller (ui reads the registry and the trace's models)."""

    lossless: bool = True
    lossy_why: str = ""  # one sentence: why this verifier's output law is not p
    draft_kind: str = ""  # the pair kind ("lookup" drafts nothing without an n-gram match)
    untempered: bool = False  # a top-k law at T = 0: q is the draft's untempered law (laws.draft_temperature)
    widths: tuple[int, ...] = ()  # the shape's candidates per level (Branching); () when unknown or sequences
    floor: float = 0.0  # the run's minimum confidence (a node gets children only where its path's q reaches it)
    greedy: bool = False  # the run is at temperature 0 (a floor then multiplies the draft's untempered q)


def num(x: float | None) -> str:
    """A number as the tests table shows it (round(x, 4))."""
    return "—" if x is None else str(round(x, 4))


def tok(text: str) -> str:
    return f"'{shorten(visible(text), 24)}'"


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def draft(step: StepRecord, about: About) -> str:
    drafted = len(step.nodes) - 1
    root = tok(step.nodes[0].text)
    if drafted == 0:
        why = (" The prompt-lookup draft found no earlier occurrence of the last 3 or 2 tokens, so it has "
               "no guess." if about.draft_kind == "lookup" else "")
        return (f"The draft q proposed nothing after {root}.{why} This step is plain decoding: the target "
                "picks the next token.")
    depth = max(n.depth for n in step.nodes)
    root_k = len(step.nodes[0].draws)
    ranked = (" At temperature 0 the draft's tempered law would be one-hot, with no runner-up to rank, so q here "
              "is its untempered law and each node's candidates are its top tokens." if about.untempered else "")
    return (f"The draft q proposed {plural(drafted, 'token')} after {root}: {root_k} at the root, "
            f"a tree {plural(depth, 'level')} deep, drawn with the {step.law} law.{ranked}{_narrowed(step, about)}"
            f"{_stopped(depth, about)}")


def _stopped(depth: int, about: About) -> str:
    """A sentence when the run drafts under a minimum confidence and this tree stopped above its shape's depth."""
    if not about.floor or not about.widths or depth >= len(about.widths):
        return ""
    q = "the draft's untempered q" if about.greedy else "q"
    return (f" It stopped at depth {depth} of {len(about.widths)}: a node gets children only where the draft's "
            f"probability of its path (the product of {q} down it) is at least {about.floor:g}, the run's minimum "
            f"confidence, and no node at depth {depth} had that.")


def _narrowed(step: StepRecord, about: About) -> str:
    """A sentence when a node drew fewer distinct candidates than its level's width: its q allows no more."""
    narrow = [n for n in step.nodes if n.draws and n.depth < len(about.widths) and len(n.draws) < about.widths[n.depth]]
    if not narrow:
        return ""
    first = narrow[0]
    where = tok(first.text) if len(narrow) == 1 else f"{len(narrow)} nodes (the first: {tok(first.text)})"
    drew = "it draws" if len(narrow) == 1 else "they draw"
    return (f" At {where} q gives fewer tokens a positive probability than the {about.widths[first.depth]} "
            "candidates the level asks for (top-k or top-p filtering, or a prompt-lookup guess, which is one "
            f"token), so {drew} only the tokens q allows.")


def score(step: StepRecord) -> str:
    return (f"The target p scored all {plural(len(step.nodes), 'node')} in one forward pass "
            f"({step.target_forwards} target forward): every node now has p and q for its next token.")


def test(step: StepRecord, visit: VisitRecord, t: TestRecord) -> str:
    at = f"At node {visit.node} ({tok(step.nodes[visit.node].text)})"
    who = f"candidate {t.candidate + 1}, {tok(t.text)}" if t.candidate >= 0 else f"the token {tok(t.text)}"
    verdict = "at or below" if t.passed else "above"
    outcome = "accepted" if t.passed else "rejected"
    label, words = told_label(step, visit, t)
    return (f"{at}, {who}: {label} = {num(t.numerator)} / {num(t.denominator)}{words}, so the threshold "
            f"min(1, ·) = {num(t.threshold)}. The uniform draw u = {num(t.uniform)} is {verdict} it, "
            f"so {tok(t.text)} is {outcome}.")


# A rule's test label "a(x)/b(x)" names the laws it divides. Residual-style symbols stand for p or q until
# a rejection at the node changes them: told as p / q while they still are, in words where they first differ.
RATIO = re.compile(r"^(\w+'?)\(x\)/(\w+'?)\(x\)$")
STANDS_FOR = {"r": "p", "d": "q", "q'": "q"}
SYMBOL_WORDS = {
    "r": "r is the residual: the target's mass left after the rejections at this node so far, renormalised",
    "d": "d is the law this candidate was drawn from: q without the candidates drawn before it",
    "q'": "q' is q without the candidates already rejected",
}


def told_label(step: StepRecord, visit: VisitRecord, t: TestRecord) -> tuple[str, str]:
    """(the test's label as the story tells it, words naming a symbol where it first differs from p or q).

    r(x)/d(x) is told p(x)/q(x) while the residual is still p and the drawing law still q (nothing rejected
    at this node yet: the numbers are p(x) and q(x) themselves); from the first test where r or d differs,
    the symbol is kept and named in words once."""
    match = RATIO.match(t.label)
    if match is None:
        return t.label, ""
    parts, differed = [match.group(1), match.group(2)], set()
    for earlier in visit.tests:
        shown = _as_told(step, visit, earlier, parts, differed)
        if earlier is t:
            break
    fresh = [SYMBOL_WORDS[s] for s in shown[2]]
    words = f" ({'; '.join(fresh)}; here p(x) = {num(shown[3])}, q(x) = {num(shown[4])})" if fresh else ""
    return f"{shown[0]}(x)/{shown[1]}(x)", words


def _as_told(step: StepRecord, visit: VisitRecord, t: TestRecord, parts: list[str], differed: set[str]):
    """One test's (numerator symbol, denominator symbol, symbols first differing at it, p(x), q(x));
    `differed` collects the symbols already told as themselves at this node."""
    p, q = _laws_at(step, visit, t)
    told, first = [], []
    for symbol, value, law in ((parts[0], t.numerator, p), (parts[1], t.denominator, q)):
        if symbol in STANDS_FOR and symbol not in differed and law is not None:
            if math.isclose(value, law, rel_tol=1e-9, abs_tol=1e-12):
                told.append(STANDS_FOR[symbol])
                continue
            differed.add(symbol)
            first.append(symbol)
        told.append(symbol)
    return told[0], told[1], first, p, q


def _laws_at(step: StepRecord, visit: VisitRecord, t: TestRecord) -> tuple[float | None, float | None]:
    """p(x) and q(x) of the tested token at the visited node (the drawn child's, else the node's top)."""
    draws = step.nodes[visit.node].draws
    if 0 <= t.candidate < len(draws):
        child = step.nodes[draws[t.candidate]]
        if child.token == t.token and child.p_token is not None and child.q_token is not None:
            return child.p_token, child.q_token
    return token_p(step.nodes[visit.node], t.token)


def update(u: UpdateRecord) -> str:
    top = ", ".join(f"{x.p:.3f} on {tok(x.text)}" for x in u.residual_top[:2])
    note = f" ({u.note})" if u.note else ""
    return f"The residual is renormalised after test {u.after_test + 1}{note}: it now puts {top}."


def final_token(step: StepRecord, e: EmittedRecord) -> str:
    at = step.nodes[e.node]
    p, _ = token_p(at, e.token)
    if e.kind == RESIDUAL:
        visit = next((v for v in step.visits if v.node == e.node), None)
        r = next((x.p for x in visit.updates[-1].residual_top if x.token == e.token), None) \
            if visit is not None and visit.updates else None
        weight = f" (residual probability {r:.3f})" if r is not None else ""
        return (f"Every candidate at node {e.node} ({tok(at.text)}) was rejected, so the token is drawn from "
                f"the residual: {tok(e.text)}{weight}.")
    weight = f" (p = {num(p)})" if p is not None else ""
    return (f"Every drafted token down to node {e.node} ({tok(at.text)}) was accepted, so a bonus token is drawn "
            f"from p there for free: {tok(e.text)}{weight}.")


def emitted(step: StepRecord, about: About) -> str:
    words = ", ".join(f"{tok(e.text)} ({_origin(e)})" for e in step.emitted)
    expected = ("" if step.expected_tokens is None
                else f" For this tree the exact expected number was {step.expected_tokens:.2f}.")
    lossy = f" {step.verifier} is lossy: {about.lossy_why}" if not about.lossless and about.lossy_why else ""
    return f"Emitted {plural(step.n_emitted, 'token')} with one target forward: {words}.{expected}{lossy}"


def _origin(e: EmittedRecord) -> str:
    return {BONUS: "bonus", RESIDUAL: "residual sample"}.get(e.kind, "accepted draft" if e.kind == "draft"
                                                             else "residual sample on a drafted child")


TREE_OPENINGS = {
    "coin": "Position {depth}, {tok}: one coin for this position.",
    "tau": "tau: how much of the chain is kept.",
    "try": "Leaf node {node}, {tok}, is tried with its weight.",
    "delete": "Node {node}, {tok}, is deleted and its parent updated.",
    "typical": "Candidate {tok} at node {node}: is it typical under p?",
    "choose": "Choosing the accepted path.",
    "emit": "The token after the accepted path: {tok}.",
}


def tree_event(e: TreeEventRecord, depth: int | None = None) -> str:
    opening = TREE_OPENINGS.get(e.kind, "{kind} at node {node}, {tok}.")
    first = opening.format(depth=e.node if depth is None else depth, tok=tok(e.text), node=e.node, kind=e.kind)
    numbers = _tree_numbers(e)
    rows = (" Law: " + ", ".join(f"{x.p:.3f} on {tok(x.text)}" for x in e.rows[:2]) + ".") if e.rows else ""
    return f"{first} {numbers}{e.note[:1].upper()}{e.note[1:]}.{rows}".replace("..", ".")


def _tree_numbers(e: TreeEventRecord) -> str:
    parts = []
    if e.numerator is not None and e.denominator is not None:
        parts.append(f"{num(e.numerator)} / {num(e.denominator)}")
    if e.threshold is not None:
        parts.append(f"value {num(e.threshold)}")
    if not parts and e.passed is None:
        return ""
    text = f"{e.label}: {', '.join(parts)}" if parts else e.label
    if e.uniform is not None and e.passed is not None:
        text += f"; the uniform draw u = {num(e.uniform)} {'passes' if e.passed else 'fails'}"
    elif e.passed is not None:
        text += f": {'passed' if e.passed else 'failed'}"
    return text + ". "
