"""Every selected verifier judges its tree of the step; each verdict carries its exact numbers."""

from __future__ import annotations

from collections.abc import Callable

import torch

from decoding.compare import montecarlo
from decoding.compare.drafting import ForestDraft
from decoding.run.compare_schema import CompareVerdict, CompareVisit
from decoding.verify.entry import Verifier
from decoding.verify.step_law import accepted_length_law, expected_tokens
from decoding.verify.theory import routes as theory
from decoding.verify.tree import DraftTree
from decoding.verify.walk import Walk

TokenText = Callable[[int], str]


def visit(entry: Verifier, node: int, accepted: int | None, tree: DraftTree, p: torch.Tensor,
          q: torch.Tensor) -> CompareVisit:
    """Exact acceptance (theory, the verifier's own law), given-candidates acceptance, alpha*, membership."""
    cands, law = tree.candidates(node), str(entry.law)
    k = len(cands)
    exact, stderr = None, 0.0
    if getattr(entry, "level", "node") == "node":
        acc = theory.acceptance(entry.name, p[node], q[node], k)
        exact, stderr = acc.value, acc.stderr
    given = float(entry.conditional(p[node], q[node], cands)[0].sum())
    return CompareVisit(
        node=node, k=k, exact_acceptance=exact, exact_stderr=stderr, conditional_acceptance=given,
        optimal_acceptance=theory.optimal_acceptance(p[node], q[node], k, law),
        membership_bound=theory.membership_bound(p[node], q[node], k, law), accepted=accepted,
    )


def verdict(entry: Verifier, group: str, t: int, drafted: ForestDraft, p_forest: torch.Tensor,
            walk: Walk, text: TokenText, mc_draws: int, mc_seed: int) -> CompareVerdict:
    """One verifier's plain record: its tree, walk, exact law of L, and the Monte-Carlo check."""
    tree = drafted.trees[t]
    p, q, _ = drafted.rows(t, p_forest)  # [N, V] each
    outcomes = entry.step_law(tree, p, q)
    mc = montecarlo.run(entry, tree, p, q, mc_draws, mc_seed)
    visits = tuple(visit(entry, node, v.accepted, tree, p, q) for node, v in walk.visits)
    return CompareVerdict(
        key=entry.name, law=str(entry.law), tree_group=group, tokens=tree.tokens, parents=tree.parents,
        texts=tuple(text(tok) for tok in tree.tokens), forest_ids=drafted.forest.maps[t],
        accepted_path=walk.path, emitted=walk.tokens, emitted_texts=tuple(text(tok) for tok in walk.tokens),
        visits=visits, accepted_length_law=tuple(accepted_length_law(outcomes, tree.max_depth)),
        expected_tokens=expected_tokens(outcomes), mc_histogram=mc.histogram, mc_draws=mc.draws,
        mc_exact_law=mc.exact, mc_pvalue=mc.pvalue,
    )
