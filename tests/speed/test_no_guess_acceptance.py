"""A level a step reached with no guess (prompt lookup without a match) counts as acceptance 0 for the chooser:
the lookup pair's acceptance had counted only its guesses (0.67 at depth 1) while 100 of its 112 calibration
steps drafted nothing, and the chooser predicted 2.5x the target alone for a drafter that rarely drafts."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

from decoding.models import pairs as models
from decoding.models.treelm import ContextTreeLM
from decoding.run.seen import Seen, no_guess
from decoding.speed import pair_acceptance
from tests.run.test_no_guess import guessing_logits


def step(*nodes: tuple[int, tuple[int, ...]], path: tuple[int, ...] = (0,)):
    """A record with nodes (depth, draws) and an accepted path."""
    return SimpleNamespace(nodes=[SimpleNamespace(depth=d, draws=w) for d, w in nodes], accepted_path=path)


def test_a_step_that_stopped_above_the_depth_for_want_of_a_guess_is_a_zero():
    assert no_guess(step((0, ())), 4) == [(1, 0.0)]  # nothing drafted: depth 1 reached, no guess
    assert no_guess(step((0, (1,)), (1, (2,)), (2, ()), path=(0, 1, 2)), 4) == [(3, 0.0)]  # guesses ran out
    assert no_guess(step((0, (1,)), (1, ()), path=(0,)), 4) == []  # rejected at depth 1: its own row says so
    assert no_guess(step((0, (1,)), (1, ()), path=(0, 1)), 1) == []  # the whole depth drafted and accepted
    assert no_guess(step((0, ())), 0) == []  # depth unknown (an adaptive run): nothing said


def test_a_runs_seen_numbers_include_the_misses():
    seen = Seen(depth=4)
    seen.add_step(step((0, ())), [])
    assert seen.ones == [(1, 0.0)]


def test_the_measured_acceptance_counts_a_level_with_no_guess_as_a_miss(monkeypatch):
    """The toy draft has no guess after '.': measured with and without the misses, the table differs by exactly
    those zeros at depth 1."""
    from decoding.models import toy

    pair = replace(models.load_pair("toy"), new_draft=lambda: ContextTreeLM(guessing_logits, toy.V))
    monkeypatch.setattr(pair_acceptance, "TEMPERATURES", (0.8,))
    prompts = ("the cat sat on the mat .", "a dog .")
    tables, runs = pair_acceptance.measure(pair, prompts)
    misses = [m for timed in runs for _, r in timed for m in no_guess(r, pair_acceptance.DEPTH)]
    assert misses, "the toy draft should have had no guess after '.' at least once"
    monkeypatch.setattr(pair_acceptance, "misses", lambda records, depth: [])
    without, _ = pair_acceptance.measure(pair, prompts)
    assert tables[0.8].rates[1][0] < without[0.8].rates[1][0]
    assert tables[0.8].nodes == without[0.8].nodes + len(misses)
