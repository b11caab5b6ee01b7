"""HSD (docs/verifiers.md §14.5): the published algorithm is what the authors' code does (a literal
transcription, every coin branched), keeps the first token's law and breaks after it; hsd_lossless is
lossless and is block verification step law for step law; the binary toy's numbers by hand."""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest
import torch

from decoding.lab.certify import certify
from decoding.lab.language import load, presets
from decoding.verify.registry import VERIFIERS
from decoding.verify.step_law import Outcome, expected_tokens
from decoding.verify.tree import DraftTree
from decoding.verify.tree_rules import hsd
from decoding.verify.tree_rules.chains import chain_nodes
from tests.verifier_oracles import draft_trees, random_prefix_laws
from tests.verify.hsd_oracle import authors_law, running_max_cap
from tests.verify.tree_level_oracle import build, loss_gap, sequence_law

F64 = torch.float64
P_TOY, Q_TOY = torch.tensor([1 / 3, 2 / 3], dtype=F64), torch.tensor([2 / 3, 1 / 3], dtype=F64)


def language(seed: int, V: int, depth: int) -> tuple[dict, dict]:
    return random_prefix_laws(torch.Generator().manual_seed(seed), V, depth)


def chains(p_of: dict, q_of: dict, g: int):
    """(tree, p [g+1, V], q [g+1, V], xs) for every drafted chain of length g."""
    for nested, _ in draft_trees("iid", (1,) * g, q_of):
        tree, p, q = build(nested, p_of, q_of)
        yield tree, p, q, [tree.tokens[n] for n in chain_nodes(tree)[1:]]


def as_table(outcomes: list[Outcome]) -> dict[tuple[int, int], float]:
    """{(accepted, next token): probability}: the oracle's form of a step law."""
    law: dict[tuple[int, int], float] = {}
    for o in outcomes:
        for y in range(o.last.numel()):
            if float(o.last[y]) > 0:
                law[(o.accepted, y)] = law.get((o.accepted, y), 0.0) + o.prob * float(o.last[y])
    return law


def gap(a: dict, b: dict) -> float:
    return max(abs(a.get(k, 0.0) - b.get(k, 0.0)) for k in set(a) | set(b))


def toy_chain(xs: tuple[int, ...]):
    tree = DraftTree.root(0)
    for i, x in enumerate(xs):
        tree = tree.add_draws(i, [x], merge=False)
    g = len(xs)
    return tree, P_TOY.expand(g + 1, -1), torch.cat([Q_TOY.expand(g, -1), torch.zeros(1, 2, dtype=F64)])


def toy_accepted(key: str, g: int) -> float:
    """Exact E[accepted drafts] on the binary toy, a chain of g (every chain weighted by q)."""
    total = 0.0
    for xs in itertools.product(range(2), repeat=g):
        weight = float(torch.prod(Q_TOY[list(xs)]))
        total += weight * (expected_tokens(VERIFIERS[key].step_law(*toy_chain(xs))) - 1)
    return total


# ---- the published algorithm, against the authors' code -----------------------------------------


@pytest.mark.parametrize("V,g", [(2, 3), (3, 2), (3, 3), (4, 2)])
def test_hsd_step_law_is_the_authors_algorithm(V, g):
    """Every chain of random context-dependent languages (zeros in p and q included)."""
    for seed in range(3):
        p_of, q_of = language(40 + seed, V, g)
        for tree, p, q, xs in chains(p_of, q_of, g):
            assert gap(as_table(VERIFIERS["hsd"].step_law(tree, p, q)), authors_law(p, q[:g], xs)) < 1e-12


def test_hsd_differs_from_block_only_where_a_prefix_ratio_exceeded_the_whole_one():
    """The one difference: the whole-draft coin min(1, r_g) against block's r_g / max(1, r_1..r_g)."""
    p_of, q_of = language(5, 3, 3)
    differing = 0
    for tree, p, q, _ in chains(p_of, q_of, 3):
        pre = hsd.prefixes(chain_nodes(tree), tree, p, q)
        biased = max(pre.M[:-1]) > max(pre.r[-1], 1.0) and pre.r[-1] > 0
        same = gap(as_table(VERIFIERS["hsd"].step_law(tree, p, q)), as_table(VERIFIERS["block"].step_law(tree, p, q)))
        assert (same > 1e-12) == biased
        differing += biased
    assert differing >= 3


def test_hsd_keeps_the_first_tokens_law_and_loses_the_second():
    """A biased chain has a prefix ratio above 1, so a prefix X_1..X_j (j >= 1) whose coin never steps back:
    the extra whole-draft acceptance only moves mass between outputs that start with X_1 (§14.5)."""
    for seed, V in ((1, 2), (2, 3), (3, 3), (4, 4)):
        p_of, q_of = language(seed, V, 3)
        law = sequence_law(VERIFIERS["hsd"].step_law, "iid", (1, 1, 1), p_of, q_of)
        first = torch.zeros(V, dtype=F64)
        for seq, pr in law.items():
            first[seq[0]] += pr
        assert torch.allclose(first, p_of[()], atol=1e-12)
    gaps = [loss_gap(VERIFIERS["hsd"].step_law, "iid", (1, 1, 1), *language(s, 3, 3)) for s in range(4)]
    assert max(gaps) > 1e-2


# ---- the binary toy: target (1/3, 2/3), draft (2/3, 1/3), context-free -----------------------------


def test_binary_toy_chain_of_2_by_hand():
    """Only the chain b a is biased: r_1 = 2, r_2 = 1, so HSD accepts it whole with 1 where block uses
    1/2; on rejection both keep b and resample b. So 1/9 of mass moves from "b b" to "b a":
    P("b a ...") = 2/9 + 1/9 = 1/3 (target 2/9), P("b b ...") = 4/9 - 1/9 = 1/3: TV 1/9.
    E[accepted]: a a (4/9): 2 * 1/4; a b, b a, b b (2/9, 2/9, 1/9): 2 each -> 4/3 (block 11/9, SD 10/9)."""
    assert Fraction(toy_accepted("hsd", 2)).limit_denominator(1000) == Fraction(4, 3)
    assert toy_accepted("hsd", 2) == pytest.approx(4 / 3, abs=1e-12)
    assert toy_accepted("hsd_lossless", 2) == pytest.approx(11 / 9, abs=1e-12)
    toy = load(presets()["binary_toy"])
    cert = certify(VERIFIERS["hsd"], [toy], (1, 1), mc_trees=0)
    assert not cert.lossless and cert.max_tv == pytest.approx(1 / 9, abs=1e-12)
    two = {}
    for seq, pr in cert.cases[0].got.items():
        two[seq[:2]] = two.get(seq[:2], 0.0) + pr
    assert two == pytest.approx({(0, 0): 1 / 9, (0, 1): 2 / 9, (1, 0): 1 / 3, (1, 1): 1 / 3}, abs=1e-12)
    assert cert.worst_case["tree"] == {"<root>": ["b"], "b": ["a"]}


@pytest.mark.parametrize("g", [2, 4, 10])
def test_binary_toy_hsd_accepts_more_than_block_and_block_is_hsd_lossless(g):
    hsd_acc, block_acc = toy_accepted("hsd", g), toy_accepted("block", g)
    assert toy_accepted("hsd_lossless", g) == pytest.approx(block_acc, abs=1e-12)
    assert hsd_acc > block_acc + 0.1
    if g <= 4:  # the literal transcription, every coin branched (2^g patterns per chain)
        oracle = sum(float(torch.prod(Q_TOY[list(xs)])) * sum(n * pr for (n, _), pr in authors_law(
            P_TOY.expand(g + 1, -1), Q_TOY.expand(g, -1), list(xs)).items())
            for xs in itertools.product(range(2), repeat=g))
        assert hsd_acc == pytest.approx(oracle, abs=1e-12)


# ---- hsd_lossless: the capped whole-draft coin ---------------------------------------------------


@pytest.mark.parametrize("V", [2, 3, 4])
def test_hsd_lossless_is_block_verification_step_law_for_step_law(V):
    for seed in range(3):
        p_of, q_of = language(60 + seed, V, 3)
        for tree, p, q, xs in chains(p_of, q_of, 3):
            a, b = VERIFIERS["hsd_lossless"].step_law(tree, p, q), VERIFIERS["block"].step_law(tree, p, q)
            assert gap(as_table(a), as_table(b)) < 1e-12
            assert gap(as_table(a), authors_law(p, q[:3], xs, whole_capped=True)) < 1e-12


@pytest.mark.parametrize("widths", [(1,), (1, 1), (1, 1, 1), (1, 1, 1, 1)], ids=str)
def test_hsd_lossless_is_lossless_on_chains(widths):
    for seed, V in ((0, 2), (1, 3), (2, 3)):
        p_of, q_of = language(80 + seed, V, len(widths))
        assert loss_gap(VERIFIERS["hsd_lossless"].step_law, "iid", widths, p_of, q_of) < 1e-9


def _min_cap(P, Q):
    """algorithm_clean.py (an older upload): each prefix capped by min(P, Q), no running max."""
    return [min(p, q) for p, q in zip(P, Q, strict=True)]


def _no_cap(P, Q):
    """algorithm_clean.py's `approxi` branch: the prefix joint P left uncapped."""
    return list(P)


def _max_before_this_prefix(P, Q):
    """The running max of the EARLIER prefixes only (r_k itself left out): a capped joint above Q."""
    out, previous_max = [], 1.0
    for p, q in zip(P, Q, strict=True):
        out.append(p / previous_max)
        previous_max = max(previous_max, p / q)
    return out


def _oracle_law(cap, whole_capped):
    def law(tree, p, q):
        chain = chain_nodes(tree)
        xs, g = [tree.tokens[n] for n in chain[1:]], len(chain) - 1
        return [Outcome(tuple(chain[: n + 1]), pr, torch.eye(p.shape[1], dtype=F64)[y])
                for (n, y), pr in authors_law(p, q[:g], xs, cap, whole_capped).items()]
    return law


BROKEN = {
    "published (whole draft uncapped)": _oracle_law(running_max_cap, False),
    "min(P, Q) cap (algorithm_clean.py)": _oracle_law(_min_cap, True),
    "no cap (algorithm_clean.py's approxi)": _oracle_law(_no_cap, True),
    "running max of the earlier prefixes only": _oracle_law(_max_before_this_prefix, True),
}


@pytest.mark.parametrize("name", list(BROKEN))
def test_hsd_variants_fail_the_exact_check_the_capped_one_passes(name):
    p_of, q_of = language(1, 3, 3)
    assert loss_gap(_oracle_law(running_max_cap, True), "iid", (1, 1, 1), p_of, q_of) < 1e-9
    assert loss_gap(BROKEN[name], "iid", (1, 1, 1), p_of, q_of) > 1e-3


def test_every_preset_certifies_hsd_lossless_and_flags_hsd():
    languages = [load(path) for path in presets().values()]
    assert certify(VERIFIERS["hsd_lossless"], languages, (1, 1, 1), mc_trees=0).lossless
    lossy = certify(VERIFIERS["hsd"], languages, (1, 1, 1), mc_trees=0)
    assert not lossy.lossless and lossy.max_tv > 0.05
    assert {c.language for c in lossy.cases if c.tv > 1e-9} >= {"binary_toy", "worked_example", "context3"}


# ---- carrying the step-back state into the next step (docs/verifiers.md §14.5) -------------------------


def _toy_round(debt: bool) -> dict[tuple[tuple[int, ...], bool], float]:
    """{(emitted tokens, debt after): probability} of one step on the binary toy, a chain of 2. A clear step
    is published HSD; a lone "b" leaves a debt; a step in debt is block with its first target row delta_b."""
    out: dict = {}
    first = torch.tensor([0.0, 1.0], dtype=F64) if debt else P_TOY
    for xs in itertools.product(range(2), repeat=2):
        tree, p, q = toy_chain(xs)
        p = torch.stack([first, P_TOY, P_TOY])
        for o in VERIFIERS["block" if debt else "hsd"].step_law(tree, p, q):
            for y in (0, 1):
                pr = float(Q_TOY[xs[0]] * Q_TOY[xs[1]]) * o.prob * float(o.last[y])
                tokens = (*xs[: o.accepted], y)
                key = (tokens, not debt and tokens == (1,))
                out[key] = out.get(key, 0.0) + pr
    return out


def test_carrying_the_debt_is_lossless_on_the_toy_but_slower_than_block():
    rounds = {False: _toy_round(False), True: _toy_round(True)}
    law, stack = {}, [((), False, 1.0)]
    while stack:  # steps until 6 tokens are out: the law of the first 6 tokens
        seq, debt, pr = stack.pop()
        if len(seq) >= 6:
            law[seq[:6]] = law.get(seq[:6], 0.0) + pr
            continue
        stack += [(seq + tokens, after, pr * r) for (tokens, after), r in rounds[debt].items()]
    for seq in itertools.product(range(2), repeat=6):
        assert law.get(seq, 0.0) == pytest.approx(float(torch.prod(P_TOY[list(seq)])), abs=1e-12)
    tokens = {d: sum(len(t) * r for (t, _), r in rounds[d].items()) for d in (False, True)}
    into_debt = sum(r for (_, after), r in rounds[False].items() if after)
    in_debt = into_debt / (1 + into_debt)  # stationary share of steps in debt
    per_forward = (1 - in_debt) * tokens[False] + in_debt * tokens[True]
    assert (tokens[False], tokens[True], into_debt) == pytest.approx((7 / 3, 14 / 9, 1 / 3), abs=1e-12)
    assert per_forward == pytest.approx(77 / 36, abs=1e-12) and per_forward < 1 + toy_accepted("block", 2)
