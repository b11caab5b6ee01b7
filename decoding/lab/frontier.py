"""The lossy price frontier at one node: every lossy rule's exact acceptance against the exact TV and KL of the
law it emits, beside the lossless rules at TV = 0 (docs/verifiers.md §21).

Why: a lossy rule is sold by its acceptance and its advertised budget (cactus's δ, fuzzy's threshold T); what it
costs is the divergence of what it emits, which only the exact law shows (cactus at δ = 0.01 emits a law 0.046
nats from p on docs §12's toy). Each point is one rule at one setting, with k = 1 draft drawn by the rule's law,
its emitted law mixed exactly over every draft (`node_law`); the frontier is the best acceptance for each TV.
Tree-level lossy rules (typical_medusa, hsd) are not node rules; the lab's sequence-level trade-off shows them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import torch

from decoding.verify import laws

CACTUS_DELTAS = (0.0, 0.001, 0.003, 0.01, 0.03, 0.05, 0.1, 0.3, 1.0)
F64 = torch.float64


@dataclass(frozen=True)
class PricePoint:
    rule: str  # registry key
    setting: str  # "δ = 0.01", "T = 0.1", or ""
    budget: float | None  # what the rule advertises: cactus's δ, fuzzy's T; None when it has none
    acceptance: float  # P(the draft is accepted), exact
    tv: float  # TV(emitted, p), exact
    kl: float  # KL(emitted ‖ p) in nats (inf when the rule emits a token p gives 0)
    lossless: bool


def node_law(conditional: Callable, law: laws.Law, p: torch.Tensor, q: torch.Tensor) -> tuple[torch.Tensor, float]:
    """(emitted law [V], acceptance) at one node with one candidate drawn by `law`: exact, over every draw."""
    out = torch.zeros_like(p)  # [V]
    acceptance = 0.0
    for (x,), prob in law.enumerate(q, 1):
        accept, residual = conditional(p, q, [x])  # [1], [V]
        a = float(accept[0])
        out[x] += prob * a
        out += prob * (1.0 - a) * residual.to(F64)
        acceptance += prob * a
    return out, acceptance


def kl(a: torch.Tensor, b: torch.Tensor) -> float:
    """KL(a ‖ b) in nats; inf when a puts mass where b has none."""
    if bool(((a > 0) & (b <= 0)).any()):
        return math.inf
    return max(0.0, float(torch.special.xlogy(a, a).sum() - torch.special.xlogy(a, b).sum()))


def settings(entry, p: torch.Tensor, q: torch.Tensor) -> list[tuple[str, float | None, object]]:
    """(label, budget, the entry at that setting) for one rule: cactus over CACTUS_DELTAS, fuzzy at the two
    thresholds that differ at this node (below and at its JS), every other rule at its own setting."""
    names = [kw for kw, _ in entry.params]
    if "delta" in names:
        return [(f"δ = {d:g}", d, entry.with_params(delta=d)) for d in CACTUS_DELTAS]
    if "threshold" in names:
        from decoding.verify.rules.fuzzy import js_divergence

        js = js_divergence(p, q)
        below = [(f"T < {js:.3g}", 0.0, entry.with_params(threshold=0.0))] if js > 0 else []
        return below + [(f"T ≥ {js:.3g}", js, entry.with_params(threshold=js))]
    return [("", None, entry)]


def frontier(registry: Mapping, p: torch.Tensor, q: torch.Tensor, lossless: tuple[str, ...] = ("sd",)
             ) -> list[PricePoint]:
    """Every node-level lossy rule of `registry` (at each setting) and the `lossless` references, one draft."""
    p, q = p.to(F64) / p.sum(), q.to(F64) / q.sum()
    points = []
    for key, entry in registry.items():
        if entry.level != "node" or (entry.lossless and key not in lossless):
            continue
        for label, budget, configured in settings(entry, p, q):
            out, acceptance = node_law(configured.conditional, configured.law, p, q)
            points.append(PricePoint(key, label, budget, acceptance, 0.5 * float((out - p).abs().sum()),
                                     kl(out, p), entry.lossless))
    return points


def pareto(points: list[PricePoint]) -> list[PricePoint]:
    """The frontier: the points no other point beats on both acceptance (higher) and TV (lower), by TV."""
    best, out = -1.0, []
    for point in sorted(points, key=lambda pt: (round(pt.tv, 12), -pt.acceptance)):  # TV to rounding
        if point.acceptance > best + 1e-12:
            out.append(point)
            best = point.acceptance
    return out
