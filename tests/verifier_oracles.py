"""Exact oracles for the verifier tests (docs/verifiers.md §11): no randomness, small vocabularies only.

- random and adversarial (p, q) pairs;
- the output law of one node given its candidates, and its mixture over every candidate tuple;
- the law of the emitted sequence of a whole draft tree, by enumerating every draft tree.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Callable, Iterator

import torch

from decoding.verify import laws
from decoding.verify.entry import Verifier
from decoding.verify.rules import spectr

Conditional = Callable[[torch.Tensor, torch.Tensor, list[int]], tuple[torch.Tensor, torch.Tensor]]
F64 = torch.float64


def dirichlet_pair(generator: torch.Generator, V: int, concentration: float, sparse: bool) -> tuple:
    """(p, q) [V] from Dirichlet(concentration); `sparse` zeroes one entry of each (different ones)."""
    p = _dirichlet(generator, V, concentration)
    q = _dirichlet(generator, V, concentration)
    if sparse:
        i, j = torch.randperm(V, generator=generator)[:2].tolist()
        p[i], q[j] = 0.0, 0.0
    return p / p.sum(), q / q.sum()


def _dirichlet(generator: torch.Generator, V: int, concentration: float) -> torch.Tensor:
    """Unnormalised Dirichlet draw: independent Gamma(concentration) variables (seeded)."""
    return torch._standard_gamma(torch.full((V,), concentration, dtype=F64), generator=generator) + 1e-300


def adversarial_pairs(V: int) -> list[tuple[str, torch.Tensor, torch.Tensor]]:
    """docs/verifiers.md §11.1 item 6, for a vocabulary of V >= 3 tokens."""
    ramp = torch.arange(1, V + 1, dtype=F64)
    flat = torch.ones(V, dtype=F64)

    def norm(v):
        return v / v.sum()

    def hot(i):
        return torch.nn.functional.one_hot(torch.tensor(i), V).to(F64)

    first_zero = ramp.clone()
    first_zero[0] = 0.0
    half = torch.tensor([1.0 if i < V // 2 else 0.0 for i in range(V)], dtype=F64)
    two = torch.zeros(V, dtype=F64)
    two[:2] = torch.tensor([0.7, 0.3], dtype=F64)
    return [
        ("q(x)=0<p(x)", norm(ramp), norm(first_zero)),
        ("p(x)=0<q(x)", norm(first_zero), norm(ramp.flip(0))),
        ("p=q", norm(ramp), norm(ramp)),
        ("disjoint supports", norm(half), norm(1.0 - half)),
        ("one-hot p", hot(V - 1), norm(ramp)),
        ("one-hot q", norm(ramp), hot(1)),
        ("one-hot p = one-hot q", hot(0), hot(0)),
        ("k >= |supp q|", norm(flat), two),
    ]


def output_law(accept: torch.Tensor, residual: torch.Tensor, xs: list[int]) -> torch.Tensor:
    """[V] sum_i accept[i] delta_{x_i} + (1 - sum accept) residual."""
    out = (1.0 - float(accept.sum())) * residual.clone()
    for i, x in enumerate(xs):
        out[x] += float(accept[i])
    return out


def tuple_laws(entry: Verifier) -> list[str]:
    """Candidate laws to test an entry under: "any" means any set, so both deterministic top-k and i.i.d."""
    return ["topk", "iid"] if str(entry.law) == "any" else [str(entry.law)]


def allowed_ks(entry: Verifier, law: str, V: int, k_max: int = 4) -> list[int]:
    top = min(k_max, entry.max_candidates or k_max)
    if law != "iid":
        top = min(top, V)
    return list(range(1, top + 1))


def mixed_law(conditional: Conditional, p: torch.Tensor, q: torch.Tensor, k: int, law: str) -> torch.Tensor:
    """[V] the output law averaged over every candidate tuple of `law` (the exactness oracle)."""
    total = torch.zeros_like(p)
    for xs, prob in laws.enumerate_tuples(law, q, k):
        accept, residual = conditional(p, q, list(xs))
        total += prob * output_law(accept, residual, list(xs))
    return total


def tv(a: torch.Tensor, b: torch.Tensor) -> float:
    return 0.5 * float((a - b).abs().sum())


# ---------------------------------------------------------------------------------------------
# Tree level (§11.2): every prefix has its own p and q; enumerate every draft tree.
# ---------------------------------------------------------------------------------------------

Prefix = tuple[int, ...]


def random_prefix_laws(generator: torch.Generator, V: int, depth: int) -> tuple[dict, dict]:
    """p(.|prefix) for every prefix of length <= depth, q(.|prefix) for length < depth."""
    p_of, q_of = {}, {}
    for n in range(depth + 1):
        for prefix in itertools.product(range(V), repeat=n):
            p, q = dirichlet_pair(generator, V, 0.8, sparse=(sum(prefix) % 3 == 1))
            p_of[prefix] = p
            if n < depth:
                q_of[prefix] = q
    return p_of, q_of


def draft_trees(law: str, widths: tuple[int, ...], q_of: dict, prefix: Prefix = ()) -> Iterator[tuple]:
    """(tree, probability) for every draft tree below `prefix`; tree = (tokens, (subtree per child))."""
    if not widths:
        yield None, 1.0
        return
    for xs, prob in laws.enumerate_tuples(law, q_of[prefix], widths[0]):
        subtree_choices = [list(draft_trees(law, widths[1:], q_of, prefix + (x,))) for x in xs]
        for combo in itertools.product(*subtree_choices):
            sub_prob = prob
            for _, pr in combo:
                sub_prob *= pr
            yield (xs, tuple(t for t, _ in combo)), sub_prob


def emitted_law(conditional: Conditional, tree, p_of: dict, q_of: dict, prefix: Prefix = ()) -> dict:
    """{emitted sequence: probability} for one draft tree: accepted path + residual or bonus token."""
    if tree is None:  # a leaf: bonus token from p
        return {prefix + (y,): float(py) for y, py in enumerate(p_of[prefix]) if py > 0}
    xs, subtrees = tree
    accept, residual = conditional(p_of[prefix], q_of[prefix], list(xs))
    law: dict = defaultdict(float)
    for i, x in enumerate(xs):
        if float(accept[i]) > 0:
            for seq, pr in emitted_law(conditional, subtrees[i], p_of, q_of, prefix + (x,)).items():
                law[seq] += float(accept[i]) * pr
    rest = 1.0 - float(accept.sum())
    for y, ry in enumerate(residual.tolist()):
        if ry > 0:
            law[prefix + (y,)] += rest * ry
    return law


def tree_law(conditional: Conditional, law: str, widths: tuple[int, ...], p_of: dict, q_of: dict) -> dict:
    """{emitted sequence: probability} averaged over every draft tree."""
    total: dict = defaultdict(float)
    for tree, prob in draft_trees(law, widths, q_of):
        for seq, pr in emitted_law(conditional, tree, p_of, q_of).items():
            total[seq] += prob * pr
    return total


def extend(seq_law: dict, p_of: dict, length: int) -> dict:
    """Continue every sequence by ancestral sampling from p up to `length` tokens."""
    out: dict = defaultdict(float)
    stack = list(seq_law.items())
    while stack:
        seq, pr = stack.pop()
        if len(seq) == length:
            out[seq] += pr
            continue
        for y, py in enumerate(p_of[seq].tolist()):
            if py > 0:
                stack.append((seq + (y,), pr * py))
    return out


def target_joint(p_of: dict, V: int, length: int) -> dict:
    """{sequence: prod_t p(x_t | x_<t)} over `length` tokens."""
    return extend({(): 1.0}, p_of, length)


def max_gap(a: dict, b: dict) -> float:
    return max(abs(a.get(s, 0.0) - b.get(s, 0.0)) for s in set(a) | set(b))


def rho_by_bisection(p: torch.Tensor, q: torch.Tensor, k: int, iters: int = 200) -> float:
    """rho* by plain bisection of f on [1, k] (upper bracket): the slow reference division_factor is checked against."""
    def f(rho: float) -> float:
        b = spectr.beta(p, q, rho)
        return 1.0 - (1.0 - b) ** k - rho * b

    lo, hi = 1.0, float(k)
    if k == 1 or f(lo) <= 0.0:
        return lo
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        if not lo < mid < hi:
            break
        lo, hi = (lo, mid) if f(mid) <= 0.0 else (mid, hi)
    return hi


def count_trees(entry: Verifier, language, shape: tuple[int, ...]) -> int:
    """How many trees the lab enumerates for `shape` (the oracle of lab/trees.enumeration_size)."""
    from decoding.lab.trees import drafted_trees

    return sum(1 for _ in drafted_trees(entry, language, shape))
