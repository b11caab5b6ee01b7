"""Optimal-transport verification: the coupling that reaches alpha* (docs/verifiers.md §16.1).

For k i.i.d. candidates x̄ ~ q^k and the target p, the best lossless verifier is a coupling of x̄ and the
emitted token Y ~ p that maximises P(Y ∈ x̄) (the OT linear program, OTLP; its value is alpha*, which
optimal.py computes by min-cut without the coupling). Only the mass a coupling puts on "Y is one of the
candidates" matters: any accept plan a(m, y) >= 0 (m a candidate multiset, y ∈ m) with
    Σ_y a(m, y) <= Q(m)     (every multiset's mass)   and   Σ_m a(m, y) <= p(y)     (every token's mass)
is completed to a full coupling by drawing the rejected token from the leftover target mass
c(y) = p(y) - Σ_m a(m, y), independently of the candidates: the emitted law is Σ_m a(m, ·) + c = p exactly.
So the OTLP is the bipartite max-flow  max Σ a  under those two families of constraints (Thomas & Pal 2025's
max-flow view, arXiv 2511.15898; Khisti et al. 2025's canonical decomposition reads the same plan as "pick
which draft, then accept"). Permutations of a tuple have the same probability and the same candidates,
so the LP runs on multisets (k! fewer variables); a tuple's accept mass goes to the first candidate
holding each token.

Where it runs: k = 1 is SD's maximal coupling (closed form, any V). For k >= 2 the LP is solved exactly
(scipy's HiGHS dual simplex) when it has at most MAX_LP_VARIABLES variables, i.e. on tiny languages and on
the real vocabulary when a warp (top-k / top-p) leaves a small draft support; beyond that a node is refused
with one line naming the size (Thomas & Pal's convex route for the full vocabulary is not implemented).

Numerics: the dual simplex returns a vertex, which meets the constraints to float64 rounding, so the output
law is p to ~1e-15 and the plan's total matches alpha* to ~1e-10 (tests/verify/test_ot_optimal.py); the
leftover is clipped at 0 only against rounding. A node's plan is memoised by the exact bytes of
(p, q, k): the exact laws call `conditional` once per tuple and every call must read the same coupling.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import torch
from scipy import sparse
from scipy.optimize import linprog

from decoding.verify.optimal import optimal_acceptance
from decoding.verify.rules.common import Event, Final, Test, Update, ratio_test, residual_tail
from decoding.verify.sampling import final_residual

# accept variables, at most k per multiset; HiGHS solves this many in about a second on a CPU (docs/speed.md,
# "Measurements the code's comments cite")
MAX_LP_VARIABLES = 60_000
PLAN_CACHE = 64  # node plans kept (a tree has at most MAX_NODES nodes; the lab revisits each node many times)


@dataclass(frozen=True)
class Plan:
    """One node's optimal accept plan: for each candidate multiset, the probability of emitting each of its
    tokens given the multiset, and the leftover law the rejected token is drawn from."""

    accept: dict[tuple[int, ...], dict[int, float]]  # sorted multiset -> {token: P(emit token | multiset)}
    leftover: torch.Tensor  # [V] c / Σ c (zeros when nothing is left: acceptance is certain)
    value: float  # Σ a: the plan's acceptance (alpha* up to the LP's precision)


def chain(p: torch.Tensor, q: torch.Tensor, xs: Sequence[int]) -> Iterator[Event]:
    if len(xs) == 1:  # one draft: SD's maximal coupling is the OT plan
        yield ratio_test(0, xs[0], p, q)
        yield from residual_tail(p, p, q)
        return
    plan = node_plan(p, q, len(xs))
    given = plan.accept.get(tuple(sorted(xs)), {})  # {} for a tuple q cannot draw (a warp mismatch)
    stay, seen = 1.0, set()
    for i, x in enumerate(xs):
        share = 0.0 if x in seen else given.get(x, 0.0)  # a repeated token's mass went to its first copy
        seen.add(x)
        yield Test(i, x, share, stay, "a(x̄, x)/P(reach)")  # threshold share/stay: P(accept x | reached)
        stay = max(0.0, stay - share)
    yield Update(plan.leftover, note="the leftover target mass c = p - Σ a, drawn independently of the tuple")
    yield Final(final_residual(plan.leftover, p))


def acceptance(p: torch.Tensor, q: torch.Tensor, k: int) -> float:
    """Closed form: the plan attains alpha* (optimal.py's min-cut; tests check the plan against it)."""
    return optimal_acceptance(p, q, k, "iid")


def node_plan(p: torch.Tensor, q: torch.Tensor, k: int) -> Plan:
    """The optimal accept plan for k i.i.d. candidates at a node (p, q [V] float64, normalised)."""
    return _plan(p.numpy().tobytes(), q.numpy().tobytes(), p.shape[0], k)


@lru_cache(maxsize=PLAN_CACHE)
def _plan(p_bytes: bytes, q_bytes: bytes, V: int, k: int) -> Plan:
    """Memoised on the exact rows: a pure function of (p, q, k), so a cached plan is the plan."""
    p = np.frombuffer(p_bytes, dtype=np.float64)  # [V]
    q = np.frombuffer(q_bytes, dtype=np.float64)  # [V]
    support = int((q > 0).sum())
    check_size(math.comb(support + k - 1, k) * k, support, k)  # before enumerating anything
    multisets, mass = candidate_multisets(q, k)
    cells = [(m, y) for m, ms in enumerate(multisets) for y in sorted(set(ms)) if p[y] > 0]
    a = solve(cells, mass, p, len(multisets))  # [n cells]
    return _assemble(multisets, mass, cells, a, p)


def candidate_multisets(q: np.ndarray, k: int) -> tuple[list[tuple[int, ...]], np.ndarray]:
    """Every multiset of k draws from supp q with its probability k!/Π mult! · Π q ([M])."""
    support = [int(x) for x in np.nonzero(q > 0)[0]]
    multisets = list(itertools.combinations_with_replacement(support, k))
    mass = np.array([_multiset_mass(q, m) for m in multisets])
    return multisets, mass


def _multiset_mass(q: np.ndarray, m: tuple[int, ...]) -> float:
    counts = [m.count(x) for x in set(m)]
    orderings = math.factorial(len(m)) // math.prod(math.factorial(c) for c in counts)
    return orderings * math.prod(float(q[x]) for x in m)


def check_size(variables: int, support: int, k: int) -> None:
    """Refuse an LP too large to solve per node, in one line that says where ot_optimal stops. `variables` is
    the bound k · C(s + k - 1, k) (every multiset of the s draft tokens, each of its tokens), known before
    a single multiset is built."""
    if variables > MAX_LP_VARIABLES:
        raise ValueError(
            f"ot_optimal solves the transport LP exactly: k={k} candidates over a draft support of {support} "
            f"tokens need up to {variables:,} variables, above its limit of {MAX_LP_VARIABLES:,}; narrow the draft "
            "(top-k / top-p) or use k=1 (any vocabulary)"
        )


def constraints(cells: list[tuple[int, int]], mass: np.ndarray, p: np.ndarray, n_sets: int):
    """A_ub [rows, cells] and b_ub [rows]: each multiset's accept mass <= its probability, then each
    token's accept mass <= p(token) (only tokens some multiset holds)."""
    tokens = sorted({y for _, y in cells})
    column = {y: n_sets + j for j, y in enumerate(tokens)}
    rows = [m for m, _ in cells] + [column[y] for _, y in cells]
    cols = list(range(len(cells))) * 2
    a_ub = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n_sets + len(tokens), len(cells)))
    b_ub = np.concatenate([mass, p[tokens]])
    return a_ub, b_ub


def solve(cells: list[tuple[int, int]], mass: np.ndarray, p: np.ndarray, n_sets: int) -> np.ndarray:
    """max Σ a subject to `constraints`, a >= 0, by HiGHS's dual simplex (a vertex: exact to rounding).
    No cell (no token both a candidate and in supp p, e.g. disjoint supports): nothing can be accepted."""
    if not cells:
        return np.zeros(0)
    a_ub, b_ub = constraints(cells, mass, p, n_sets)
    result = linprog(-np.ones(len(cells)), A_ub=a_ub, b_ub=b_ub, bounds=(0, None), method="highs-ds",
                     options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10})
    if result.status != 0:
        raise ValueError(f"ot_optimal: the transport LP failed ({result.message})")
    return np.clip(result.x, 0.0, None)


def _assemble(multisets, mass: np.ndarray, cells, a: np.ndarray, p: np.ndarray) -> Plan:
    """Read the solution as per-multiset shares a(m, y) / Q(m) and the leftover law c / Σ c, c = (p - Σ_m a)_+.
    No repair: a vertex of this LP meets its constraints to rounding (~1e-16 here), and a plan that broke one
    (an over-accepted token) must show up as a wrong output law in the exact tests, not be hidden."""
    accept: dict[tuple[int, ...], dict[int, float]] = {}
    for (m, y), value in zip(cells, a, strict=True):
        accept.setdefault(multisets[m], {})[y] = float(value / mass[m])
    tokens = np.array([y for _, y in cells], dtype=np.int64)
    taken = np.bincount(tokens, weights=a, minlength=p.shape[0])  # [V] accept mass per token
    left = np.clip(p - taken, 0.0, None)  # [V] c
    total = left.sum()
    leftover = torch.from_numpy(left / total if total > 0 else np.zeros_like(left))
    return Plan(accept, leftover, float(a.sum()))
