"""khisti_is's fast twin (the registry's path): rules/khisti_is.py with r fitted, bounded and read lazily.

The textbook rule (rules/khisti_is.py, docs/verifiers.md §7.2) selects one of k i.i.d. candidates with
probability proportional to w = p/q, then runs SD of the selected y against its induced law
r(y) = k q(y) E[w(y)/(w(y) + S)], S = sum of k-1 i.i.d. w(X), X ~ q, building r at every token. Here r is built
only where it is read, and the same selection, the same accept test and the same residual law follow; tests/
verify/test_fast_rules.py holds the two to the same selections, tests, verdicts, rows and exact law.

Computing r (no Monte Carlo):
- small support (n^k <= ENUMERATION_LIMIT, n = |supp q|): exact enumeration of every tuple, vectorised.
- otherwise a 1-D integral over a per-bin polynomial fit (rules/fast/khisti_fit.py), done at most once per node.
  Checked against enumeration and against the direct V x T quadrature in tests/verify/test_verifiers_khisti.py
  (agreement ~1e-13; the total of r, exactly 1 for the true law, is 1 within 1e-12). The accept test
  needs r at the selected token only, and usually not even its value: two bounds on it from the bins alone
  (rules/fast/khisti_bracket.py, ~2 % apart) decide the test unless the uniform falls between them; only then, or
  when a view reads the test's denominator (a Lazy), is r(y) computed (its bin's coefficients summed directly,
  in Python floats: the full law's number to ~2e-14 q). verify draws the residual token by rejection from p
  (`residual_token`, each proposal decided the same way), so the residual norm((p - r)_+) is built only when a
  view reads it (a LazyRow) or the draw misses 16 times, and then only on the tokens with w above w* (the only
  ones where p > r), not as a full [V] law.

Conventions, applied identically by the selection and by both law computations (so they define a
slightly different, equally lossless selection rule rather than an approximation):
- weights w <= W_LO (1e-14) count as 0, capped at 1e300 above;
- when every candidate has weight 0 the first candidate is selected.
The one approximation besides quadrature: in the integral, a weight above W_HI (1e16) is selected
whenever drafted (E[w/(w+S)] = 1 up to (k-1)/w < 1e-15; such tokens have q < 1e-16).
Numerics: q(x) = 0 gives weight 0 and r(x) = 0, so such a candidate is never accepted (threshold 0).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from functools import partial

import torch

from decoding.verify.rules.common import Event, Final, Test, Update, prepare, run_chain
from decoding.verify.rules.fast.khisti_bracket import Bracket
from decoding.verify.rules.fast.khisti_fit import W_HI, W_LO, Binned, Fit, bin_tokens, special_at
from decoding.verify.rules.node_cache import NodeCache
from decoding.verify.sampling import draw, normalised_residual_
from decoding.verify.verdict import Lazy, LazyRow, NodeVerdict

ENUMERATION_LIMIT = 20_000  # tuples


def sir_weights(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """[V] importance weights w = p/q on supp q (0 elsewhere and below W_LO), capped to stay finite."""
    return weights_and_range(p, q)[0]


Extremes = tuple[float, float]  # the least and the largest weight


def weights_and_range(p: torch.Tensor, q: torch.Tensor) -> tuple[torch.Tensor, Extremes | None]:
    """sir_weights, and (least, largest) weight when every ratio was finite and above W_LO (None otherwise):
    then every q and p is > 0, so the support is the whole vocabulary and the fit needs no second range pass.
    p/0 (inf or nan) is 0 off the support, as is a ratio that overflows (q < 1e-308). One aminmax pass
    settles the usual case (every ratio finite, above W_LO and below the cap: a NaN fails the test) without
    the three fixing passes."""
    w = torch.div(p, q)  # [V] our own tensor from here on
    lo, hi = (float(v) for v in torch.aminmax(w))
    if lo > W_LO and hi <= 1e300:
        return w, (lo, hi)
    w.nan_to_num_(nan=0.0, posinf=0.0)
    return torch.nn.functional.threshold_(w, W_LO, 0.0).clamp_(max=1e300), None  # w <= W_LO counts as 0


def selection(weights: torch.Tensor) -> torch.Tensor:
    """[k] SIR selection probabilities for candidate weights [k]; the first when all are 0."""
    total = float(weights.sum())
    if total > 0:
        return weights / total
    first = torch.zeros_like(weights)
    first[0] = 1.0
    return first


def induced_law(p: torch.Tensor, q: torch.Tensor, k: int, method: str = "auto") -> torch.Tensor:
    """[V] law of the SIR-selected token over k i.i.d. draws from q (p, q float64, normalised).

    method: "auto", "enumerate" (exact, small support only) or "integrate" (any size).
    """
    return InducedLaw(q, sir_weights(p, q), k, method).full()


class InducedLaw:
    """r_beta of SIR selection: exact enumeration for a small support, else the 1-D integral, whose per-bin
    coefficients are fitted on first need and then evaluated at one token (`at`) or at every token (only when the
    residual is needed). Before the fit, `bounds` brackets r at a token from the bins alone (khisti_bracket.py)."""

    def __init__(
        self, q: torch.Tensor, w: torch.Tensor, k: int, method: str = "auto", extremes: Extremes | None = None
    ) -> None:
        """extremes: w's (least, largest) when all weights are positive (weights_and_range), to skip two [V] scans."""
        self.q, self.w, self.k = q, w, k
        self._full: torch.Tensor | None = None
        self._fit: Fit | None = None
        self._binned: Binned | None = None
        self._bracket: Bracket | None = None
        support = q.shape[0] if extremes is not None else None  # every weight > 0: q > 0 everywhere
        if k == 1:
            self._full = q.clone()
        elif method == "enumerate" or (method == "auto" and _support(q, support) ** k <= ENUMERATION_LIMIT):
            self._full = enumerated_law(q, w, k)
        else:
            self._binned = bin_tokens(q, w, extremes)
            if self._binned.bins:
                self._bracket = Bracket(self._binned, k)

    @property
    def fit(self) -> Fit:
        if self._fit is None:
            self._fit = Fit.fitted(self.q, self.w, self.k, self._binned)
        return self._fit

    def at(self, token: int) -> float:
        """r at one token: from the fit whenever the law is integrated (the same number before and after full());
        a special token (weight 0 or above W_HI) by its closed form, which needs no fit (`Fit.at`'s number)."""
        if self._binned is None:
            return float(self._full[token])
        w_y = float(self.w[token])
        if not 0 < w_y <= W_HI:
            return special_at(float(self.q[token]), w_y, self.k, self._binned.z ** (self.k - 1))
        return self.fit.at(self.q, self.w, token)

    def bounds(self, token: int) -> tuple[float, float]:
        """(lo, hi) with lo <= at(token) <= hi: the bracket's while the fit is not made, else (at, at)."""
        if self._fit is None and self._bracket is not None:
            w_y = float(self.w[token])
            if 0 < w_y <= W_HI:  # a binned token
                return self._bracket.bounds(float(self.q[token]), w_y)
        r = self.at(token)
        return r, r

    def full(self) -> torch.Tensor:
        if self._full is None:
            self._full = self.fit.full_law(self.q, self.w)
        return self._full

    def positive_part(self, p: torch.Tensor) -> torch.Tensor:
        """(p - r)_+ [V], a fresh tensor: from the full law when it is built, else only where it can be > 0."""
        if self._full is not None:
            return torch.sub(p, self._full).clamp_(min=0.0)
        return self.fit.positive_part(p, self.q, self.w)


def _support(q: torch.Tensor, known: int | None) -> int:
    return known if known is not None else int(torch.count_nonzero(q))


def enumerated_law(q: torch.Tensor, w: torch.Tensor, k: int) -> torch.Tensor:
    """[V] r(y) = sum over every tuple x of Q(x) beta(y | x), the definition itself (khisti_is.py reads it here)."""
    support = torch.nonzero(q > 0).flatten()  # [n]
    grid = torch.cartesian_prod(*[torch.arange(support.numel())] * k).reshape(-1, k)  # [n^k, k]
    tuples = support[grid]  # [N, k] token ids
    prob = q[tuples].prod(dim=1)  # [N] Q(x)
    weights = w[tuples]  # [N, k]
    total = weights.sum(dim=1, keepdim=True)  # [N, 1]
    first = torch.zeros_like(weights)
    first[:, 0] = 1.0
    beta = torch.where(total > 0, weights / total.clamp(min=1e-300), first)  # [N, k] beta(x_i | x)
    return torch.zeros_like(q).index_add_(0, tuples.reshape(-1), (prob[:, None] * beta).reshape(-1))


def integrated_law(q: torch.Tensor, w: torch.Tensor, k: int) -> torch.Tensor:
    """[V] the induced law by the 1-D integral (not renormalised: its total checks the accuracy)."""
    return Fit.of(q, w, k).full_law(q, w)


TRIES = 16  # proposals of `residual_token` before its caller builds the residual instead


def residual_token(p: torch.Tensor, law: InducedLaw, generator: torch.Generator, tries: int = TRIES) -> int | None:
    """A token drawn from norm((p - r)_+) without building that [V] law: propose x ~ p, keep it with probability
    (p(x) - r(x))_+ / p(x), r(x) = law.at(x) (the number the accept test reads); None after `tries` misses.

    Exact: a kept proposal has the residual law ((p - r)_+(x) / (1 - alpha) each time), and the caller, after
    the misses, draws from the built residual: a mixture of one law. Expected proposals 1 / sum (p - r)_+, one
    `at` each, about a hundredth of building the residual at V = 49152 (docs/speed.md, "Measurements the code's
    comments cite"). One difference from the built law: where
    (p - r)_+ holds <= EPS_MASS the built residual falls back to p; proposals are then almost never kept, and
    reaching this draw at all has probability sum (p - r)_+ <= EPS_MASS, so the emitted law moves by <= 1e-12."""
    cdf = torch.cumsum(p, dim=0)  # [V]
    u = torch.rand(2, tries, generator=generator, dtype=torch.float64)  # [2, tries]: proposals, keeps
    proposals = torch.searchsorted(cdf, u[0].mul_(float(cdf[-1])), right=True).clamp_(max=p.shape[0] - 1)  # [tries]
    for x, keep in zip(proposals.tolist(), u[1].tolist(), strict=True):
        if _kept(float(p[x]), keep, law, x):
            return x
    return None


def _kept(p_x: float, keep: float, law: InducedLaw, x: int) -> bool:
    """keep p(x) < p(x) - r(x): from r's bounds when they settle it (rounding is monotone, so the exact r decides
    the same), else from the exact r."""
    lo, hi = law.bounds(x)
    if keep * p_x < p_x - hi:
        return True
    if keep * p_x >= p_x - lo:
        return False
    return keep * p_x < p_x - law.at(x)


def _sd_test(p: torch.Tensor, xs: Sequence[int], chosen: int, law: InducedLaw) -> Test:
    """SD of the selected y against r_beta(y): a lazy denominator with r's bounds (the run decides from them when
    it can), or the number itself when the bounds are exact (no bracket, or an exact law already built)."""
    y = xs[chosen]
    lo, hi = law.bounds(y)
    if lo < hi and lo > 0:
        return Test(chosen, y, float(p[y]), Lazy(partial(law.at, y)), "p(y)/r_beta(y)", bracket=(lo, hi))
    r_y = lo if lo == hi else law.at(y)  # equal bounds are the number itself
    note = f"candidate {chosen} (token {y}) has r_beta(y) = 0 (q(y) = 0): skipped" if not r_y > 0 else ""
    return Test(chosen, y, float(p[y]), r_y, "p(y)/r_beta(y)", note=note)


def _chain(p: torch.Tensor, xs: Sequence[int], chosen: int, node: _Node, generator: torch.Generator) -> Iterator[Event]:
    """The test, then (rejected) the residual as a lazy row and the token drawn by rejection from p (or, after its
    misses, from the built residual): the [V] residual is built only if a view reads it or the draw needs it."""
    yield _sd_test(p, xs, chosen, node.law)
    row = LazyRow(node.residual)  # [V] SD residual against the induced law, on first read
    yield Update(row)
    yield Final(row, token=residual_token(node.p, node.law, generator))


class _Node:
    """One node's precomputation: prepared p and q [V], the SIR weights [V], the induced law, and (when
    first needed) the residual norm((p - r)_+) [V], which does not depend on the candidates."""

    def __init__(self, p: torch.Tensor, q: torch.Tensor, k: int) -> None:
        self.p, self.q = p, q
        self.w, extremes = weights_and_range(p, q)  # [V]
        self.law = InducedLaw(q, self.w, k, extremes=extremes)
        self._residual: torch.Tensor | None = None

    def residual(self) -> torch.Tensor:
        if self._residual is None:
            r = self.law.positive_part(self.p)  # [V] (p - r)_+, our own tensor
            self._residual = normalised_residual_(r, self.p)
        return self._residual


def _node(
    p: torch.Tensor, q: torch.Tensor, candidates: Sequence[int], cache: NodeCache | None
) -> tuple[_Node, list[int]]:
    """The node's precomputation (from `cache` when it has this node and k) and the candidates as ints."""
    p_law, q_law, xs = prepare(p, q, candidates)
    if cache is None:
        return _Node(p_law, q_law, len(xs)), xs
    return cache.get(p, q, len(xs), lambda: _Node(p_law, q_law, len(xs))), xs


def verify(
    p: torch.Tensor,
    q: torch.Tensor,
    candidates: Sequence[int],
    generator: torch.Generator,
    cache: NodeCache | None = None,
) -> NodeVerdict:
    """Select one candidate by importance weight p/q, then SD of it against its induced law r.
    With a `cache`, a node verified again costs a selection and a test, not a refit of r."""
    node, xs = _node(p, q, candidates, cache)
    beta = selection(node.w[xs])  # [k]
    chosen = draw(beta, generator)
    verdict = run_chain(_chain(node.p, xs, chosen, node, generator), xs, generator)
    note = f"SIR selected candidate {chosen} (token {xs[chosen]}) with probability {float(beta[chosen]):.6g}"
    return replace(verdict, notes=(note,) + verdict.notes)


def verify_with(cache: NodeCache) -> Callable[..., NodeVerdict]:
    """`verify` that keeps each node's induced law in `cache` (Verifier.memoised)."""
    return partial(verify, cache=cache)


def conditional(p: torch.Tensor, q: torch.Tensor, candidates: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """accept[i] = beta_i min(1, p(x_i)/r(x_i)); residual = norm((p - r)_+) [V]."""
    node, xs = _node(p, q, candidates, None)
    beta = selection(node.w[xs])  # [k]
    passes = torch.tensor([_sd_test(node.p, xs, i, node.law).probability for i in range(len(xs))], dtype=torch.float64)
    accept = beta * passes  # [k]
    if float(accept.sum()) >= 1.0:
        return accept, torch.zeros_like(node.p)
    return accept, node.residual()  # [V] only on the tokens above w* (the full law is never built)


def acceptance(p: torch.Tensor, q: torch.Tensor, k: int) -> float:
    """alpha = sum_y min(p(y), r(y)), r the selected token's induced law (the very r the rule uses)."""
    return float(torch.minimum(p, induced_law(p, q, k)).sum())
