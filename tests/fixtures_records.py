"""Hand-made StepRecords and a Trace for the viz tests (no model, no engine).

step_residual(): a 3,2 tree verified by RRS; the second root candidate is accepted, both of its
children are rejected and a residual token is emitted. Token texts carry whitespace, a newline,
HTML and an ampersand so the views' escaping is exercised.
step_bonus(): a chain of 2, both accepted, then a bonus token.
"""

from __future__ import annotations

from decoding.run.schema import (
    ACCEPTED,
    BONUS,
    DRAFT,
    REJECTED,
    RESIDUAL,
    ROOT,
    UNREACHED,
    EmittedRecord,
    NodeRecord,
    RunSummary,
    StepRecord,
    TestRecord,
    TokenProb,
    Trace,
    UpdateRecord,
    VisitRecord,
)

TEXTS = {10: "Hello", 11: " world", 12: "\n", 13: "<b>", 14: " &", 15: "\tx", 16: "é", 17: "!",
         18: " the", 19: "cat", 20: " sat", 21: "."}


def tp(token: int, p: float, q: float) -> TokenProb:
    return TokenProb(token, TEXTS[token], p, q)


def node(i: int, parent: int, token: int, depth: int, status: str, draws=(), p=None, q=None, top=()) -> NodeRecord:
    return NodeRecord(i, parent, token, TEXTS[token], depth, status, p, q, tuple(top), tuple(draws))


def test(candidate: int, token: int, num: float, den: float, u: float) -> TestRecord:
    threshold = min(1.0, num / den)
    return TestRecord(candidate, token, TEXTS[token], num, den, threshold, u, u <= threshold, "r(x)/q(x)")


def _root_visit() -> VisitRecord:
    tests = (test(0, 11, 0.1, 0.5, 0.7), test(1, 12, 0.45, 0.3, 0.2))
    update = UpdateRecord(0, "residual after rejecting '·world'", (tp(12, 0.6, 0.3), tp(13, 0.4, 0.2)))
    return VisitRecord(0, (11, 12, 13), 1, False, 12, tests, (update,), 0.62, 0.0, 0.71)


def _second_visit() -> VisitRecord:
    tests = (test(0, 14, 0.05, 0.4, 0.9), test(1, 15, 0.1, 0.35, 0.8))
    updates = (UpdateRecord(0, "after test 1", (tp(16, 0.7, 0.0), tp(15, 0.3, 0.0))),
               UpdateRecord(1, "after test 2", (tp(16, 1.0, 0.0),)))
    return VisitRecord(2, (14, 15), None, False, 16, tests, updates, 0.3, 0.0, 0.4)


def step_residual(index: int = 0) -> StepRecord:
    root_top = (tp(12, 0.45, 0.3), tp(11, 0.1, 0.5), tp(13, 0.05, 0.2), tp(17, 0.4, 0.0))
    nl_top = (tp(16, 0.6, 0.1), tp(14, 0.05, 0.4), tp(15, 0.1, 0.35), tp(17, 0.25, 0.15))
    nodes = (
        node(0, -1, 10, 0, ROOT, draws=(1, 2, 3), top=root_top),
        node(1, 0, 11, 1, REJECTED, draws=(4, 5), p=0.1, q=0.5),
        node(2, 0, 12, 1, ACCEPTED, draws=(6, 7), p=0.45, q=0.3, top=nl_top),
        node(3, 0, 13, 1, UNREACHED, draws=(8, 9), p=0.05, q=0.2),
        node(4, 1, 18, 2, UNREACHED, p=0.3, q=0.3),
        node(5, 1, 19, 2, UNREACHED, p=0.2, q=0.1),
        node(6, 2, 14, 2, REJECTED, p=0.05, q=0.4),
        node(7, 2, 15, 2, REJECTED, p=0.1, q=0.35),
        node(8, 3, 20, 2, UNREACHED, p=0.5, q=0.5),
        node(9, 3, 21, 2, UNREACHED, p=0.1, q=0.2),
    )
    emitted = (EmittedRecord(12, "\n", DRAFT, 2), EmittedRecord(16, "é", RESIDUAL, 2))
    return StepRecord(index, "rrs", "iid", nodes, (_root_visit(), _second_visit()), (0, 2), emitted,
                      1.9, 1, 2, 3.0, 10.0, 0.5)


def step_bonus(index: int = 1) -> StepRecord:
    top = (tp(17, 0.8, 0.7), tp(21, 0.2, 0.3))
    nodes = (
        node(0, -1, 16, 0, ROOT, draws=(1,), top=(tp(18, 0.9, 0.6),)),
        node(1, 0, 18, 1, ACCEPTED, draws=(2,), p=0.9, q=0.6, top=(tp(19, 0.7, 0.9),)),
        node(2, 1, 19, 2, ACCEPTED, p=0.7, q=0.9, top=top),
    )
    visits = (
        VisitRecord(0, (18,), 0, False, 18, (test(0, 18, 0.9, 0.6, 0.5),), (), 0.7, 0.0, 0.7),
        VisitRecord(1, (19,), 0, False, 19, (test(0, 19, 0.7, 0.9, 0.3),), (), 0.8, 0.0, 0.8),
    )
    emitted = (EmittedRecord(18, " the", DRAFT, 1), EmittedRecord(19, "cat", DRAFT, 2),
               EmittedRecord(17, "!", BONUS, 2))
    return StepRecord(index, "sd", "iid", nodes, visits, (0, 1, 2), emitted, 2.4, 1, 2, 2.0, 9.0, 0.3)


def trace() -> Trace:
    steps = (step_residual(0), step_bonus(1))
    text = "".join(e.text for s in steps for e in s.emitted)
    summary = RunSummary(2, 5, 2, 4, 2.5, 2.15, 0.03, "max_new_tokens")
    return Trace({"kind": "hand-made"}, {"verifier": "rrs", "branching": [3, 2]}, "Hello", (10,),
                 tuple(e.token for s in steps for e in s.emitted), text, steps, summary)
