"""Trees that stop where the drafter has no guess (treelm.proposes: prompt lookup without a match), or where
the draft is unsure of its path (run/confidence.py, DecodeConfig.min_confidence), are still lossless for
every lossless verifier, node-level and tree-level: exact enumeration on tiny languages (lab.exact.check_case
with `guesses`). The rule may depend on a node's own context only; a drafter that takes its guess back AFTER
seeing what it drew is biased, and the same check says so."""

from __future__ import annotations

from collections import defaultdict

import pytest
import torch

from decoding.lab import exact
from decoding.lab.certify import TOLERANCE, default_shape
from decoding.lab.language import Prefix, random_language
from decoding.lab.trees import ROOT_TOKEN, candidate_tuples, drafted_trees, prefix_of
from decoding.run.confidence import PathConfidence
from decoding.verify.registry import VERIFIERS, lossless_keys
from decoding.verify.step_law import emitted_law
from decoding.verify.tree import DraftTree

GUESS_RULES = {  # where the drafter has no guess: after a token 1; after the first token 0 or 2
    "after_token_1": lambda prefix: not (prefix and prefix[-1] == 1),
    "after_first_0_or_2": lambda prefix: not (len(prefix) == 1 and prefix[0] in (0, 2)),
}
LANGUAGES = [random_language(seed, 3, 3) for seed in (5, 6)]


def _shape(key: str) -> tuple[int, ...]:
    return (1, 1, 1) if VERIFIERS[key].max_candidates == 1 else default_shape(VERIFIERS[key])


@pytest.mark.parametrize("rule", sorted(GUESS_RULES))
@pytest.mark.parametrize("key", lossless_keys())
def test_every_lossless_verifier_stays_lossless_on_trees_that_stop_early(key, rule):
    shape, guesses = _shape(key), GUESS_RULES[rule]
    for language in LANGUAGES:
        case = exact.check_case(VERIFIERS[key], language, shape, guesses)
        assert case.tv <= TOLERANCE, (language.name, case.tv)
        drafted = list(drafted_trees(VERIFIERS[key], language, shape, guesses))
        assert sum(d.prob for d in drafted) == pytest.approx(1.0, abs=1e-12)
        stopped = [d for d in drafted if any(d.tree.is_leaf(n) and d.tree.depths[n] < len(shape)
                                             for n in range(len(d.tree)))]
        # two candidates (or a chain) over 3 tokens always hold a 0 or a 2: that rule stops every tree
        assert stopped or rule == "after_token_1", "the rule must really stop some trees early"
        assert all(not guesses(prefix_of(d.tree, n)) for d in stopped for n in range(len(d.tree))
                   if d.tree.is_leaf(n) and d.tree.depths[n] < len(shape))


def test_no_guess_at_the_root_is_a_plain_target_step():
    case = exact.check_case(VERIFIERS["rrs"], LANGUAGES[0], (2, 2), lambda prefix: False)
    assert case.trees == 1 and case.expected_tokens == pytest.approx(1.0) and case.tv <= TOLERANCE


def _retracting_trees(entry, language, shape, drops=lambda prefix, xs: xs[0] == 1):
    """The broken drafter: it draws a node's candidates, then drops them (the node stays a leaf) where
    drops(prefix, drawn) (by default: the first is token 1), keeping the probability of the draw: the tree law
    is no longer q's."""
    def expand(tree: DraftTree, queue: list[int], prob: float):
        if not queue:
            yield tree, prob
            return
        node, rest = queue[0], queue[1:]
        depth, prefix = tree.depths[node], prefix_of(tree, node)
        for xs, pr in candidate_tuples(entry, language.q(prefix), shape[depth]):
            if drops(prefix, xs):
                yield from expand(tree, rest, prob * pr)
                continue
            grown = tree.add_draws(node, list(xs), merge=False)
            yield from expand(grown, rest + (list(grown.draws[node]) if depth + 1 < len(shape) else []), prob * pr)
    return expand(DraftTree.root(ROOT_TOKEN), [0], 1.0)


def _mixture_tv(entry, language, shape, trees) -> float:
    mixture: dict[Prefix, float] = defaultdict(float)
    for tree, prob in trees:
        rows = [prefix_of(tree, n) for n in range(len(tree))]
        p, q = (torch.stack([row(r) for r in rows]) for row in (language.p, language.q))
        for seq, pr in emitted_law(entry.step_law(tree, p, q), tree).items():
            mixture[seq] += prob * pr
    length = len(shape) + 1
    return exact.tv(exact.pad(mixture, language, length), exact.pad({(): 1.0}, language, length))


@pytest.mark.parametrize("key", ["sd", "rrs", "block"])
def test_a_drafter_that_takes_its_guess_back_after_the_draw_is_caught(key):
    entry, shape = VERIFIERS[key], _shape(key)
    rule = GUESS_RULES["after_token_1"]
    honest = _mixture_tv(entry, LANGUAGES[0], shape,
                         ((d.tree, d.prob) for d in drafted_trees(entry, LANGUAGES[0], shape, rule)))
    broken = _mixture_tv(entry, LANGUAGES[0], shape, _retracting_trees(entry, LANGUAGES[0], shape))
    assert honest <= TOLERANCE < 1e-3 < broken


FLOOR = 0.3  # the minimum confidence of these checks: it stops some paths of these languages and not others


def _sure(language, floor: float = FLOOR) -> PathConfidence:
    """The engine's rule on a tiny language: q's probability of each path (q: the law the draft draws from)."""
    sure = PathConfidence(floor)
    sure.law = _Laws(language)
    return sure


class _Laws(dict):
    def __init__(self, language) -> None:
        super().__init__()
        self.language = language

    def __missing__(self, prefix):
        return self.language.q(prefix)


@pytest.mark.parametrize("key", lossless_keys())
def test_every_lossless_verifier_stays_lossless_where_the_draft_stops_when_unsure(key):
    shape = _shape(key)
    for language in LANGUAGES:
        sure = _sure(language)
        guesses = lambda prefix, sure=sure: sure.of(tuple(prefix)) >= FLOOR  # noqa: E731
        case = exact.check_case(VERIFIERS[key], language, shape, guesses)
        assert case.tv <= TOLERANCE, (language.name, case.tv)
        drafted = list(drafted_trees(VERIFIERS[key], language, shape, guesses))
        early = [d for d in drafted if any(d.tree.is_leaf(n) and d.tree.depths[n] < len(shape)
                                           for n in range(len(d.tree)))]
        full = [d for d in drafted if d.tree.max_depth == len(shape)]
        assert early and full, "the floor must stop some paths and let others go deep"


def test_dropping_the_candidates_that_fall_below_the_floor_is_caught():
    """The wrong way to stop: draw a node's candidates, then drop them where the first is below the floor
    (deciding on the draw). The right way keeps it as a leaf, verified, and drafts nothing beneath it."""
    entry, shape, language = VERIFIERS["sd"], (1, 1, 1), LANGUAGES[0]
    sure = _sure(language)
    keeps = lambda prefix: sure.of(tuple(prefix)) >= FLOOR  # noqa: E731
    drafted = ((d.tree, d.prob) for d in drafted_trees(entry, language, shape, keeps))
    honest = _mixture_tv(entry, language, shape, drafted)
    broken = _mixture_tv(entry, language, shape, _retracting_trees(
        entry, language, shape, drops=lambda prefix, xs: sure.of(tuple(prefix) + (xs[0],)) < FLOOR))
    assert honest <= TOLERANCE < 1e-3 < broken
