"""Plain records of a compared step: several verifiers judging one step (decoding/compare).

Kept apart from schema.py (which only gains one optional StepRecord field) so the compare view's
types sit in one place. Plain data only: ints, floats, strs, tuples, None (JSON round-trippable).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CompareVisit:
    """One node visited by a verifier's walk, with its exact numbers."""

    node: int  # node id in that verifier's tree
    k: int  # candidates drawn at the node
    exact_acceptance: float | None  # theory.acceptance under the verifier's own law (as VisitRecord.alpha_exact)
    exact_stderr: float  # 0 unless theory had to sample (rrs_wor, k >= 3, large support)
    conditional_acceptance: float  # P(accept | these very candidates), from the entry's conditional
    optimal_acceptance: float | None  # alpha* for the verifier's law and k
    membership_bound: float | None  # sum_x min(p(x), P(x in candidates)) for the law and k
    accepted: int | None  # index into the node's draws; None: a residual token was emitted


@dataclass(frozen=True)
class CompareVerdict:
    """One verifier's judgement of the step, on its own (or the shared) tree."""

    key: str
    law: str
    tree_group: str  # verifiers with the same group judged the identical tree
    tokens: tuple[int, ...]  # tokens[i]: token of node i (node 0 the root)
    parents: tuple[int, ...]  # parents[i]: parent of node i (-1 for the root)
    texts: tuple[str, ...]
    forest_ids: tuple[int, ...]  # forest node of each node (the one-forward layout)
    accepted_path: tuple[int, ...]  # node ids, root first
    emitted: tuple[int, ...]  # token ids this verifier would emit
    emitted_texts: tuple[str, ...]
    visits: tuple[CompareVisit, ...]
    accepted_length_law: tuple[float, ...]  # exact P(L = 0), ..., P(L = depth)
    expected_tokens: float  # exact E[tokens] = E[L] + 1
    mc_histogram: tuple[float, ...]  # Monte-Carlo frequencies of L from the real judge (empty: not run)
    mc_draws: int
    mc_exact_law: tuple[float, ...]  # exact law on the rows the Monte Carlo used (compressed at large V)
    mc_pvalue: float | None  # chi-square p-value of the histogram against mc_exact_law


@dataclass(frozen=True)
class CompareRecord:
    run_verifier: str  # its verdict decided the emitted text
    forest_nodes: int  # nodes of the one forest scored in the step's single target forward
    verdicts: tuple[CompareVerdict, ...]  # in the order the user selected them
