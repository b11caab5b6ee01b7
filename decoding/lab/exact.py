"""The exact sequence-level check of one verifier on one tiny language and one tree shape (docs/verifiers.md §11.2).

Every drafted tree is weighted by its drafting probability; the verifier's own exact step law
(`entry.step_law`, node-level or tree-level alike) gives the law of the emitted sequence; the mixture,
padded to a fixed length by continuing from the target, must equal the target's joint law.
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from decoding.lab.language import Prefix, TinyLanguage
from decoding.lab.trees import DraftedTree, Guesses, describe, drafted_trees
from decoding.verify.entry import Verifier
from decoding.verify.optimal import membership_bound, optimal_acceptance
from decoding.verify.step_law import Outcome, emitted_law, expected_tokens

SeqLaw = dict[Prefix, float]


@dataclass(frozen=True)
class Case:
    """One (language, shape) certification: the mixture's TV to the target joint and the exact step numbers."""

    language: str
    shape: tuple[int, ...]
    tv: float
    trees: int
    expected_tokens: float  # E[tokens emitted per step], bonus/residual token included
    root_acceptance: float  # P(at least one draft token accepted)
    alpha_star: float  # optimal acceptance at the root for this candidate law (F4)
    membership: float  # membership bound at the root (F3)
    got: SeqLaw = field(repr=False)  # padded emitted law
    want: SeqLaw = field(repr=False)  # target joint law

    @property
    def expected_accepted(self) -> float:
        return self.expected_tokens - 1.0


def outcomes_of(entry: Verifier, drafted: DraftedTree) -> list[Outcome]:
    """The entry's exact step law on one drafted tree, refused with one line when it is not a law."""
    try:
        outcomes = entry.step_law(drafted.tree, drafted.p, drafted.q)
    except Exception as err:  # a user's verifier may raise anything: report it, never a traceback
        name = type(err).__name__
        raise ValueError(f"verifier {entry.name!r}: step law (conditional) raised {name}: {err}") from None
    for o in outcomes:
        if not (math.isfinite(o.prob) and o.prob >= -1e-12) or not bool(o.last.isfinite().all()):
            raise ValueError(
                f"verifier {entry.name!r}: conditional returned a non-finite or negative law "
                f"(path probability {o.prob}, last token law {o.last.tolist()})"
            )
    return outcomes


def memoized(entry: Verifier) -> Verifier:
    """The entry with its `conditional` cached by (p, q, candidates): the same node recurs in thousands of
    drafted trees, and `conditional` is pure by contract. Tree-level entries are returned as they are."""
    if getattr(entry, "level", "node") != "node" or not dataclasses.is_dataclass(entry):
        return entry
    cache: dict = {}
    conditional = entry.conditional

    def cached(p, q, candidates):
        key = (p.numpy().tobytes(), q.numpy().tobytes(), tuple(int(x) for x in candidates))
        if key not in cache:
            cache[key] = conditional(p, q, candidates)
        return cache[key]

    return dataclasses.replace(entry, conditional=cached)


def check_case(entry: Verifier, language: TinyLanguage, shape: tuple[int, ...], guesses: Guesses = None) -> Case:
    """Mix the exact step laws over every drafted tree and compare with the target joint law
    (`guesses`: where the drafter has no guess, the tree stops early: trees.drafted_trees)."""
    entry = memoized(entry)
    mixture: SeqLaw = defaultdict(float)
    tokens = accept = 0.0
    trees = 0
    for drafted in drafted_trees(entry, language, shape, guesses):
        outcomes = outcomes_of(entry, drafted)
        for seq, pr in emitted_law(outcomes, drafted.tree).items():
            mixture[seq] += drafted.prob * pr
        tokens += drafted.prob * expected_tokens(outcomes)
        accept += drafted.prob * sum(o.prob for o in outcomes if o.accepted >= 1)
        trees += 1
    length = len(shape) + 1
    got, want = pad(mixture, language, length), pad({(): 1.0}, language, length)
    p0, q0, k0, law = language.p(()), language.q(()), shape[0], entry.law  # the object: a law with settings too
    return Case(language.name, shape, tv(got, want), trees, tokens, accept,
                optimal_acceptance(p0, q0, k0, law), membership_bound(p0, q0, k0, law), got, want)


def pad(seq_law: SeqLaw, language: TinyLanguage, length: int) -> SeqLaw:
    """Continue every sequence from the target p(. | sequence) up to `length` tokens (ancestral sampling, exact)."""
    out: SeqLaw = defaultdict(float)
    stack = list(seq_law.items())
    while stack:
        seq, pr = stack.pop()
        if len(seq) >= length:
            out[seq] += pr
            continue
        for y, py in enumerate(language.p(seq).tolist()):
            if py > 0:
                stack.append(((*seq, y), pr * py))
    return out


def tv(a: SeqLaw, b: SeqLaw) -> float:
    return 0.5 * sum(abs(a.get(s, 0.0) - b.get(s, 0.0)) for s in set(a) | set(b))


def worst_sequence(case: Case) -> tuple[Prefix, float, float]:
    """The padded sequence with the largest |got - want|: (sequence, got, want)."""
    seq = max(set(case.got) | set(case.want), key=lambda s: abs(case.got.get(s, 0.0) - case.want.get(s, 0.0)))
    return seq, case.got.get(seq, 0.0), case.want.get(seq, 0.0)


def worst_tree(entry: Verifier, language: TinyLanguage, case: Case) -> tuple[DraftedTree, float]:
    """The drafted tree that pushes the mixture furthest from the target: the largest contribution
    w_T * sum_s sign(got - want)(s) * (law_T(s) - want(s)) to 2 TV (the contributions sum to 2 TV)."""
    entry = memoized(entry)
    sign = {s: math.copysign(1.0, case.got.get(s, 0.0) - case.want.get(s, 0.0)) for s in set(case.got) | set(case.want)}
    best, best_c = None, -math.inf
    length = len(case.shape) + 1
    for drafted in drafted_trees(entry, language, case.shape):
        law = pad(emitted_law(outcomes_of(entry, drafted), drafted.tree), language, length)
        c = drafted.prob * sum(sign[s] * (law.get(s, 0.0) - case.want.get(s, 0.0)) for s in sign)
        if c > best_c:
            best, best_c = drafted, c
    assert best is not None
    return best, best_c


def worst_case_report(entry: Verifier, language: TinyLanguage, case: Case, locate: bool = True) -> dict:
    """The JSON `worst_case`: where the mixture misses the target most, and (`locate`) the drafted tree
    that shows it (a second pass over the trees: skipped when the case is exact)."""
    seq, got, want = worst_sequence(case)
    report = {
        "kind": "exact",
        "language": case.language,
        "shape": list(case.shape),
        "tv": case.tv,
        "sequence": language.text(seq),
        "got": got,
        "want": want,
    }
    if locate:
        drafted, contribution = worst_tree(entry, language, case)
        report |= {"tree": describe(drafted.tree, language), "tree_probability": drafted.prob,
                   "tree_contribution": contribution}
    return report


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0
