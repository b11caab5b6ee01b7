"""Medusa's typical acceptance as Medusa applies it (Cai et al. 2024, `evaluate_posterior`, typical,
fast mode), docs/verifiers.md §9.2 and §14.4. LOSSY: acceptance ignores q.

Every root-to-leaf candidate path is scored: a candidate x drawn at node m is typical iff
p_m(x) > min(eps, delta exp(-H(p_m))), with Medusa's entropy H = -sum p log(p + 1e-5); a path's
accepted length is its number of LEADING typical candidates (cumprod of the mask). The path with
the longest accepted prefix wins; ties go to the highest sum of log p over the accepted prefix
(Medusa's likelihood tie-break), then to the first path; when nothing is typical the first path with
length 0 (nothing accepted). The next token is argmax p at the last accepted node (fast mode).
Deterministic: no coin, so the exact law is one outcome of probability 1.
"""

from __future__ import annotations

import math

import torch

from decoding.verify.origins import BONUS, DRAFT, RESIDUAL
from decoding.verify.rules.typical import POSTERIOR_ALPHA, POSTERIOR_THRESHOLD
from decoding.verify.step_law import Outcome
from decoding.verify.tree import DraftTree
from decoding.verify.tree_entry import TreeEvent, TreeWalk

MEDUSA_LOG_EPS = 1e-5  # Medusa's entropy uses log(p + 1e-5)


def shape(tree: DraftTree) -> str | None:
    return None  # any tree: typical acceptance reads only p


def medusa_threshold(p_row: torch.Tensor) -> float:
    """min(eps, delta exp(-H)) with H = -sum p log(p + 1e-5), as Medusa computes it."""
    p_row = p_row.to(torch.float64)
    entropy = -float((p_row * torch.log(p_row + MEDUSA_LOG_EPS)).sum())
    return min(POSTERIOR_THRESHOLD, POSTERIOR_ALPHA * math.exp(-entropy))


def _scores(tree: DraftTree, p: torch.Tensor) -> tuple[list[tuple[list[int], int, float]], list[TreeEvent]]:
    """Per root-to-leaf path: (path, accepted length, log-likelihood of the accepted prefix); the tests."""
    tau = {m: medusa_threshold(p[m]) for m in range(len(tree)) if not tree.is_leaf(m)}
    typical = {n: float(p[tree.parents[n], tree.tokens[n]]) > tau[tree.parents[n]] for n in range(1, len(tree))}
    events = [TreeEvent("typical", n, tree.tokens[n], float(p[tree.parents[n], tree.tokens[n]]),
                        tau[tree.parents[n]], None, None, typical[n], "p(x) > min(eps, delta exp(-H))",
                        f"candidate at node {n} is {'typical' if typical[n] else 'not typical'}")
              for n in range(1, len(tree))]
    scored = []
    for path in tree.retrieve_paths():
        length = 0
        while length + 1 < len(path) and typical[path[length + 1]]:
            length += 1
        loglik = sum(math.log(float(p[path[i - 1], tree.tokens[path[i]]])) for i in range(1, length + 1))
        scored.append((path, length, loglik))
    return scored, events


def choose(tree: DraftTree, p: torch.Tensor) -> tuple[tuple[int, ...], list[TreeEvent]]:
    """The accepted path (root first) and the story of how it was chosen."""
    scored, events = _scores(tree, p)
    best = max(range(len(scored)), key=lambda i: (scored[i][1], scored[i][2], -i))
    path, length, loglik = scored[best]
    ties = sum(1 for s in scored if s[1] == length)
    note = (f"path to leaf {path[-1]}: longest accepted prefix {length} of {len(scored)} paths"
            + (f" ({ties} tied: highest log-likelihood {loglik:.4g} wins)" if ties > 1 and length else ""))
    events.append(TreeEvent("choose", path[length], tree.tokens[path[length]], threshold=float(length),
                            passed=length > 0, label="accepted length", note=note))
    return tuple(path[: length + 1]), events


def _argmax_law(row: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.one_hot(torch.argmax(row), row.numel()).to(torch.float64)


def step_law(tree: DraftTree, p: torch.Tensor, q: torch.Tensor) -> list[Outcome]:
    path, _ = choose(tree, p)
    return [Outcome(path, 1.0, _argmax_law(p[path[-1]]))]


def judge(tree: DraftTree, p: torch.Tensor, q: torch.Tensor, generator: torch.Generator) -> TreeWalk:
    path, events = choose(tree, p)
    token = int(torch.argmax(p[path[-1]]))
    kind = BONUS if tree.is_leaf(path[-1]) else RESIDUAL
    events.append(TreeEvent("emit", path[-1], token, label=kind, note="argmax p at the last accepted node (fast mode)",
                            target=_argmax_law(p[path[-1]])))
    on_path = set(path)
    rejected = tuple(n for n in range(1, len(tree)) if tree.parents[n] in on_path and n not in on_path)
    return TreeWalk(path, (), tuple(tree.tokens[n] for n in path[1:]) + (token,),
                    (DRAFT,) * (len(path) - 1) + (kind,), events=tuple(events), rejected=rejected)
