"""trees.enumeration_size counts certify's work without drafting a tree (the app's cap rests on it): equal to
the trees actually drafted x nodes per tree plus the padded sequences, and stopped at once past a limit."""

from __future__ import annotations

import time

import pytest

from decoding.lab import language as lang
from decoding.lab.tradeoff import thresholds, tradeoff_size
from decoding.lab.trees import PastLimit, enumeration_size, nodes_per_tree
from decoding.verify.registry import VERIFIERS
from tests.verifier_oracles import count_trees

LANGUAGES = {name: lang.load(path) for name, path in lang.presets().items()}


@pytest.mark.parametrize("key, name, shape", [
    ("rrs", "worked_example", (2, 2)), ("rrs_wor", "worked_example", (2, 2)), ("spechub", "context3", (2, 1)),
    ("typical", "worked_example", (3, 2)), ("rrs", "context3", (1, 1, 1)), ("hu_greedy", "near_deterministic", (2, 2)),
    ("rrs_wor", "disjoint", (2, 1)), ("traversal", "binary_toy", (2, 2)),
])
def test_the_size_is_the_trees_drafted_times_their_nodes_plus_the_padding(key, name, shape):
    language = LANGUAGES[name]
    expected = count_trees(VERIFIERS[key], language, shape) * nodes_per_tree(shape) + language.V ** (len(shape) + 1)
    assert enumeration_size(VERIFIERS[key], language, shape, 10**7) == expected


@pytest.mark.parametrize("key, shape", [("rrs", (4, 4, 4, 4)), ("rrs", (16,)), ("rrs", (1,) * 12),
                                        ("typical", (16, 16, 16, 16, 16))])
def test_a_huge_enumeration_is_refused_without_walking_it(key, shape):
    start = time.perf_counter()
    with pytest.raises(PastLimit):
        enumeration_size(VERIFIERS[key], LANGUAGES["worked_example"], shape, 100_000)
    assert time.perf_counter() - start < 1


def test_a_shape_the_verifier_cannot_take_is_its_own_refusal_not_a_size():
    with pytest.raises(ValueError, match="takes at most 1 candidates"):
        enumeration_size(VERIFIERS["sd"], LANGUAGES["worked_example"], (2, 2), 100_000)


def test_the_trade_off_size_counts_fuzzy_once_per_threshold_and_skips_what_cannot_run():
    language, shape = LANGUAGES["worked_example"], (2, 2)
    one = {k: enumeration_size(VERIFIERS[k], language, shape, 10**7) for k in ("rrs", "fuzzy")}
    total = tradeoff_size(VERIFIERS, language, shape, ["rrs", "sd", "fuzzy"], 10**7)
    assert total == one["rrs"] + len(thresholds(language)) * one["fuzzy"]
    with pytest.raises(PastLimit):
        tradeoff_size(VERIFIERS, language, shape, ["rrs", "sd", "fuzzy"], total - 1)
