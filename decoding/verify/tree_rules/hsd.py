"""Hierarchical speculative decoding, HSD (Zhou et al., arXiv 2601.05724), docs/verifiers.md §14.5.

As the authors' code runs it on one draft chain (`simulation.py`'s HSD and the `backward` branch of
their transformers patch, one draft): **lossy** beyond the first token. Chain X_1..X_g, rows
p_k = p(.|X_<=k), q_k = q(.|X_<=k), k = 0..g (row g is the bonus row).

- Prefix joints P_k = prod_{j<=k} p_{j-1}(X_j), Q_k likewise, and the prefix ratio r_k = P_k / Q_k
  (P_0 = Q_0 = r_0 = 1).
- The cap: the running max M_k = max(1, r_1..r_k) and the capped joint P~_k = P_k / M_k.
- For every k < g the branch below the prefix: D_k = P~_k p_k - Q_k q_k [V], S+ = sum (D_k)_+,
  S- = sum (-D_k)_+; the prefix "steps back" with probability 1 - S+ / max(S+, S-) (one coin each).
- The whole draft is accepted with probability min(1, r_g): the joint ratio, NOT capped.
- Otherwise tau = the LAST k < g that did not step back; emit X_1..X_tau and one token from
  norm((D_tau)_+). A whole draft accepted ends with a bonus from p_g.

Every quantity is computed scaled by 1 / Q_k (w_k = r_k / M_k; D_k / Q_k = w_k p_k - q_k): the
coin S+ / max(S+, S-) is scale-free and long chains do not underflow. For k < g this is block
verification's h_k and weighted residual exactly (w_k = r_k / M_k is block's weight); the one
difference is the last coin, min(1, r_g) instead of block's w_g = r_g / M_g. That coin accepts more
whenever a prefix ratio went above 1 and the whole draft's ratio fell back below it: the bias.
`hsd_lossless.py` caps it like every other position (and is then block verification).

Readings where the code is open: 0/0 (S+ = S- = 0) does not step back (NaN < u is false in the
authors' code); a token q could not have drawn (q = 0, a warp mismatch; probability 0) gets
ratio 0 for its prefix and everything after it; a residual with no mass falls back to p_tau.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from decoding.verify.origins import BONUS, DRAFT, RESIDUAL
from decoding.verify.sampling import draw, uniform
from decoding.verify.step_law import Outcome
from decoding.verify.tree import DraftTree
from decoding.verify.tree_entry import TreeEvent, TreeWalk
from decoding.verify.tree_rules.chains import chain_nodes, residual_law

FinalCoin = Callable[["Prefixes"], float]  # the probability of accepting the whole draft


def shape(tree: DraftTree) -> str | None:
    if chain_nodes(tree) is None:
        return "HSD judges one draft chain (branching 1,1,... or one sequence); this tree branches"
    return None


@dataclass(frozen=True)
class Prefixes:
    """The chain's prefix numbers, k = 0..g: P_k, Q_k (joints), r_k (ratio), M_k (running max >= 1)."""

    P: tuple[float, ...]
    Q: tuple[float, ...]
    r: tuple[float, ...]
    M: tuple[float, ...]

    @property
    def g(self) -> int:
        return len(self.r) - 1

    def capped(self, k: int) -> float:
        """w_k = r_k / M_k = P~_k / Q_k: the capped joint, scaled by the draft's."""
        return self.r[k] / self.M[k]


def prefixes(chain: list[int], tree: DraftTree, p: torch.Tensor, q: torch.Tensor) -> Prefixes:
    """Prefix joints, ratios and the running max along the chain (ratio by the running product of p/q)."""
    P, Q, r, M = [1.0], [1.0], [1.0], [1.0]
    for parent, node in zip(chain, chain[1:], strict=False):
        x = tree.tokens[node]
        p_x, q_x = float(p[parent, x]), float(q[parent, x])
        P.append(P[-1] * p_x)
        Q.append(Q[-1] * q_x)
        r.append(r[-1] * p_x / q_x if q_x > 0 else 0.0)
        M.append(max(M[-1], r[-1]))
    return Prefixes(tuple(P), tuple(Q), tuple(r), tuple(M))


def branch(w: float, p_row: torch.Tensor, q_row: torch.Tensor) -> tuple[torch.Tensor, float, float]:
    """((D)_+ [V], S+, S-) for D = w p - q, the branch below a prefix scaled by 1 / Q_k."""
    d = w * p_row.to(torch.float64) - q_row.to(torch.float64)  # [V]
    plus = d.clamp(min=0.0)  # [V]
    return plus, float(plus.sum()), float((-d).clamp(min=0.0).sum())


def keep_probability(s_plus: float, s_minus: float) -> float:
    """P(no step back) = S+ / max(S+, S-); 1 for 0/0 (the authors' NaN never steps back)."""
    top = max(s_plus, s_minus)
    return s_plus / top if top > 0 else 1.0


def keep_probabilities(chain: list[int], pre: Prefixes, p: torch.Tensor, q: torch.Tensor) -> list[tuple]:
    """[(h_k, S+, max(S+, S-))] for k = 0..g-1: the step-back coins' pass probabilities."""
    out = []
    for k in range(pre.g):
        _, s_plus, s_minus = branch(pre.capped(k), p[chain[k]], q[chain[k]])
        out.append((keep_probability(s_plus, s_minus), s_plus, max(s_plus, s_minus)))
    return out


def published_final(pre: Prefixes) -> float:
    """min(1, r_g): the published whole-draft test, on the UNcapped joint ratio (the lossy step)."""
    return min(1.0, pre.r[pre.g])


def tau_law(keep: list[float], final: float) -> list[float]:
    """P(tau = k), k = 0..g: g with the final coin, else the last k < g that did not step back."""
    g = len(keep)
    law, later_back = [0.0] * (g + 1), 1.0 - final
    law[g] = final
    for k in range(g - 1, -1, -1):
        law[k] = later_back * keep[k]
        later_back *= 1.0 - keep[k]
    law[0] += later_back  # every coin stepped back: the authors stop at position 0
    return law


def last_law(chain: list[int], pre: Prefixes, tau: int, p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """[V] law of the token after X_tau: the bonus row p_g, else norm((P~_tau p_tau - Q_tau q_tau)_+)."""
    node = chain[tau]
    if tau == pre.g:
        return p[node].to(torch.float64)
    plus, s_plus, _ = branch(pre.capped(tau), p[node], q[node])
    return residual_law(plus, s_plus, p[node])


def law_with(final: FinalCoin):
    """The exact step law of HSD with this whole-draft coin (published_final, or a capped one)."""

    def step_law(tree: DraftTree, p: torch.Tensor, q: torch.Tensor) -> list[Outcome]:
        chain = chain_nodes(tree)
        pre = prefixes(chain, tree, p, q)
        keep = [h for h, _, _ in keep_probabilities(chain, pre, p, q)]
        taus = tau_law(keep, final(pre))
        return [Outcome(tuple(chain[: tau + 1]), prob, last_law(chain, pre, tau, p, q))
                for tau, prob in enumerate(taus) if prob > 0]

    return step_law


def judge_with(final: FinalCoin, final_label: str):
    """judge() of HSD with this whole-draft coin; the story shows every ratio, coin and the resample."""

    def judge(tree: DraftTree, p: torch.Tensor, q: torch.Tensor, generator: torch.Generator) -> TreeWalk:
        chain = chain_nodes(tree)
        pre = prefixes(chain, tree, p, q)
        events = [_ratio_event(k, chain, tree, pre) for k in range(1, pre.g + 1)]
        kept = []
        for k, (h, num, den) in enumerate(keep_probabilities(chain, pre, p, q)):
            u = uniform(generator)
            kept.append(u < h)  # kept with probability h (the authors step back when u < 1 - h: same law)
            events.append(_stepback_event(k, chain, tree, pre, h, num, den, u, kept[-1]))
        tau = pre.g
        if pre.g > 0:
            a, u = final(pre), uniform(generator)
            whole = u <= a
            events.append(_final_event(chain, tree, pre, a, u, whole, final_label))
            tau = pre.g if whole else max((k for k, ok in enumerate(kept) if ok), default=0)
            events.append(_tau_event(tau, whole, chain, tree))
        law = last_law(chain, pre, tau, p, q)  # [V]
        token = draw(law, generator)
        kind = BONUS if tau == pre.g else RESIDUAL
        events.append(TreeEvent("emit", chain[tau], token, label=kind, target=law, note=_emit_note(tau, pre)))
        path = tuple(chain[: tau + 1])
        tokens = tuple(tree.tokens[n] for n in path[1:]) + (token,)
        return TreeWalk(path, (), tokens, (DRAFT,) * tau + (kind,), events=tuple(events),
                        rejected=tuple(chain[tau + 1:]))

    return judge


step_law = law_with(published_final)
judge = judge_with(published_final, "min(1, r_g), uncapped (published)")


def _ratio_event(k: int, chain, tree, pre: Prefixes) -> TreeEvent:
    note = (f"P = {pre.P[k]:.3g}, Q = {pre.Q[k]:.3g}; running max M_{k} = max(1, r_1..r_{k}) = {pre.M[k]:.4g}; "
            f"capped P~ = P/M: w_{k} = r_{k}/M_{k} = {pre.capped(k):.4g}")
    return TreeEvent("ratio", chain[k], tree.tokens[chain[k]], pre.P[k], pre.Q[k], pre.r[k],
                     label=f"r_{k} = P(X_1..X_{k})/Q(X_1..X_{k})", note=note)


def _stepback_event(k, chain, tree, pre, h, num, den, u, kept) -> TreeEvent:
    what = "kept" if kept else "steps back"
    note = f"P(step back) = {1.0 - h:.4g}, u = {u:.4g}: {what} (D = P~_{k} p - Q_{k} q, scaled by 1/Q_{k})"
    return TreeEvent("stepback", chain[k], tree.tokens[chain[k]], num, den, h, u, kept,
                     "P(keep) = S+/max(S+, S-)", note)


def _final_event(chain, tree, pre: Prefixes, a: float, u: float, whole: bool, label: str) -> TreeEvent:
    g = pre.g
    block_w = min(1.0, pre.capped(g))
    note = f"u = {u:.4g}: {'accepted' if whole else 'rejected'}"
    if a > block_w + 1e-12:
        note += (f"; block (lossless) would use w_{g} = r_{g}/M_{g} = {block_w:.4g}: the excess {a - block_w:.4g} "
                 f"is HSD's bias (an earlier prefix ratio reached M = {pre.M[g - 1]:.4g} > r_{g})")
    return TreeEvent("final", chain[g], tree.tokens[chain[g]], pre.P[g], pre.Q[g], a, u, whole, label, note)


def _tau_event(tau: int, whole: bool, chain, tree) -> TreeEvent:
    if whole:
        why = f"tau = {tau}: whole draft accepted (step-back coins unused)"
    else:
        why = f"tau = {tau}: the LAST position that did not step back"
    return TreeEvent("tau", chain[tau], tree.tokens[chain[tau]], threshold=float(tau), label="tau", note=why)


def _emit_note(tau: int, pre: Prefixes) -> str:
    if tau == pre.g:
        return "whole chain accepted: bonus token from p at the last draft"
    if tau == 0:
        return "no draft kept; resampled from norm((p - q)_+) at the root (w_0 = 1: SD's residual)"
    return f"X_1..X_{tau} kept; resampled from norm((P~_{tau} p - Q_{tau} q)_+), w_{tau} = {pre.capped(tau):.4g}"
