"""The node inspector's tests table names each test in its note column with the rule's own symbols ("r/q",
"r(x)/d(x)", "p/q'"); a line under the table says what p, q, r, d and q' are, so a newcomer can read them, and
where a paper's own symbols are explained."""

from __future__ import annotations

import re

import torch

import app
from decoding.verify.registry import VERIFIERS
from ui import inspector

P = torch.tensor([0.5, 0.3, 0.15, 0.05], dtype=torch.float64)
Q = torch.tensor([0.05, 0.15, 0.3, 0.5], dtype=torch.float64)  # q's favourites are p's least likely: rejections


def shipped_labels() -> set[str]:
    """The note of every test each node-level verifier made on a few draws at a rejecting node."""
    labels = set()
    for entry in VERIFIERS.values():
        if entry.level != "node":
            continue
        k = 1 if entry.max_candidates == 1 else 2
        for seed in range(6):
            generator = torch.Generator().manual_seed(seed)
            verdict = entry.verify(P, Q, entry.sample(Q, k, generator), generator)
            labels |= {t.label for t in verdict.tests}
    return labels


def test_every_symbol_in_the_shipped_tests_notes_is_explained_under_the_table():
    labels = shipped_labels()
    symbols = {s for label in labels for s in re.findall(r"\b([a-z])\b('?)", label)}
    assert {("r", ""), ("d", ""), ("q", "'")} <= symbols, labels  # the labels this legend is about are shipped
    for letter, prime in symbols & {("p", ""), ("q", ""), ("r", ""), ("d", ""), ("q", "'")}:  # the common ones
        assert f"**{letter}{prime}**" in inspector.SYMBOLS or f" {letter}{prime} = " in inspector.SYMBOLS, letter
    assert "the verifier's paper" in inspector.SYMBOLS  # the rest (R_ia, rho, JS, ...): where they are explained


def test_the_legend_sits_under_the_tests_table():
    demo, _ = app.build_page("toy")
    ids = [getattr(b, "elem_id", None) for b in demo.blocks.values()]
    assert ids.index("tests-legend") == ids.index("tests-table") + 1
