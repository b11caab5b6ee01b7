"""Block verification (Sun, Mendlovic, Leviathan, Aharoni, Beirami, Ro, Suresh; ICLR 2025, Alg. 2),
docs/verifiers.md §14.1. Lossless and optimal for one draft chain X_1..X_g.

Rows along the chain: p_i = p(.|X_<=i), q_i = q(.|X_<=i) (row i is node i of the chain, row g the
bonus row). Weights w_0 = 1, w_i = min(1, w_{i-1} p_{i-1}(X_i) / q_{i-1}(X_i)). For i < g,
Z_i = sum (w_i p_i - q_i)_+ and h_i = Z_i / (Z_i + 1 - w_i); h_g = w_g. One independent coin
eta_i per position; tau = the LAST i with eta_i <= h_i (0 if none), not the first failure. Emit
X_1..X_tau, then a bonus from p_g when tau = g, else a sample of norm((w_tau p_tau - q_tau)_+).

Readings where the paper leaves a detail open (each proved lossless by tests/verify/test_tree_level.py):
h_i = 1 when w_i = 1 (the formula's limit; with Z_i = 0 it is 0/0 and tau >= i then has
probability 1), w_i = 0 for a token with q = 0, and a residual with no mass (probability 0) falls
back to p_tau.
"""

from __future__ import annotations

import torch

from decoding.verify.origins import BONUS, DRAFT, RESIDUAL
from decoding.verify.sampling import draw, uniform
from decoding.verify.step_law import Outcome
from decoding.verify.tree import DraftTree
from decoding.verify.tree_entry import TreeEvent, TreeWalk
from decoding.verify.tree_rules.chains import chain_nodes, residual_law, updated_weight, weight_step, weighted_residual


def shape(tree: DraftTree) -> str | None:
    if chain_nodes(tree) is None:
        return "block verification judges one draft chain (branching 1,1,... or one sequence); this tree branches"
    return None


def weights(chain: list[int], tree: DraftTree, p: torch.Tensor, q: torch.Tensor) -> list[float]:
    """[w_0, ..., w_g] along the chain."""
    w = [1.0]
    for parent, node in zip(chain, chain[1:], strict=False):
        x = tree.tokens[node]
        w.append(weight_step(w[-1], float(p[parent, x]), float(q[parent, x])))
    return w


def h_values(chain: list[int], w: list[float], p: torch.Tensor, q: torch.Tensor) -> list[tuple[float, float, float]]:
    """[(h_i, Z_i, Z_i + 1 - w_i)] for i = 0..g: h_0 = 1 (tau = 0 when no coin passes), h_g = w_g."""
    g = len(chain) - 1
    out = [(1.0, 0.0, 0.0)]
    for i in range(1, g + 1):
        if i == g:
            out.append((w[g], w[g], 1.0))
            continue
        _, mass = weighted_residual(w[i], p[chain[i]], q[chain[i]])
        out.append((updated_weight(w[i], mass), mass, mass + 1.0 - w[i]))
    return out


def tau_law(h: list[float]) -> list[float]:
    """P(tau = i) = h_i prod_{j > i} (1 - h_j), i = 0..g: tau is the last passed coin."""
    law, later_fail = [0.0] * len(h), 1.0
    for i in range(len(h) - 1, -1, -1):
        law[i] = later_fail * h[i]
        later_fail *= 1.0 - h[i]
    return law


def last_law(chain: list[int], w: list[float], tau: int, p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """[V] law of the token after X_tau: p_g at the end of the chain, else the weighted residual."""
    node = chain[tau]
    if tau == len(chain) - 1:
        return p[node].to(torch.float64)
    r, mass = weighted_residual(w[tau], p[node], q[node])
    return residual_law(r, mass, p[node])


def step_law(tree: DraftTree, p: torch.Tensor, q: torch.Tensor) -> list[Outcome]:
    chain = chain_nodes(tree)
    w = weights(chain, tree, p, q)
    h = [v[0] for v in h_values(chain, w, p, q)]
    return [Outcome(tuple(chain[: tau + 1]), prob, last_law(chain, w, tau, p, q))
            for tau, prob in enumerate(tau_law(h)) if prob > 0]


def judge(tree: DraftTree, p: torch.Tensor, q: torch.Tensor, generator: torch.Generator) -> TreeWalk:
    chain = chain_nodes(tree)
    w = weights(chain, tree, p, q)
    hs = h_values(chain, w, p, q)
    g, events, tau = len(chain) - 1, [], 0
    for i in range(1, g + 1):
        eta = uniform(generator)
        h, num, den = hs[i]
        passed = h > 0 and eta <= h
        tau = i if passed else tau
        events.append(_coin_event(i, g, chain, tree, w, h, num, den, eta, passed))
    events.append(_tau_event(tau, [e.passed for e in events], chain, tree))
    law = last_law(chain, w, tau, p, q)  # [V]
    token = draw(law, generator)
    kind = BONUS if tau == g else RESIDUAL
    events.append(TreeEvent("emit", chain[tau], token, label=kind, target=law,
                            note=_emit_note(tau, g, w[tau])))
    path = tuple(chain[: tau + 1])
    tokens = tuple(tree.tokens[n] for n in path[1:]) + (token,)
    kinds = (DRAFT,) * tau + (kind,)
    return TreeWalk(path, (), tokens, kinds, events=tuple(events), rejected=tuple(chain[tau + 1:]))


def _coin_event(i, g, chain, tree, w, h, num, den, eta, passed) -> TreeEvent:
    label = "h_g = w_g" if i == g else "h_i = Z_i / (Z_i + 1 - w_i), Z_i = sum (w_i p_i - q_i)_+"
    note = f"position {i}: w_{i} = {w[i]:.4g} = min(1, w_{i - 1} p/q); coin eta_{i} {'<=' if passed else '>'} h_{i}"
    return TreeEvent("coin", chain[i], tree.tokens[chain[i]], num, den, h, eta, passed, label, note)


def _tau_event(tau: int, passed: list[bool], chain, tree) -> TreeEvent:
    first_fail = next((i for i, ok in enumerate(passed, 1) if not ok), None)
    why = f"tau = {tau}: the LAST position whose coin passed (0 when none did)"
    if first_fail is not None and first_fail - 1 < tau:
        why += f"; a first-failure rule would stop at {first_fail - 1} (biased)"
    return TreeEvent("tau", chain[tau], tree.tokens[chain[tau]], threshold=float(tau), label="tau", note=why)


def _emit_note(tau: int, g: int, w: float) -> str:
    if tau == g:
        return "whole chain accepted: bonus token from p at the last draft"
    return (f"X_1..X_{tau} kept; next token from norm((w_{tau} p - q)_+) with w_{tau} = {w:.4g} "
            "(not the token-wise residual)")
