"""The story of a step (viz/story.py, viz/narrate.py, viz/paragraph.py): every event kind told with the
record's own numbers, the events in the record's order, on hand-made records and on every registered
verifier's real records (toy pair, no model download)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from decoding.run.schema import (
    ACCEPTED,
    BONUS,
    DRAFT,
    REJECTED,
    ROOT,
    EmittedRecord,
    StepRecord,
    TokenProb,
    TreeEventRecord,
)
from tests.fixtures_records import node, step_bonus, step_residual, tp
from viz import narrate
from viz.narrate import About, num
from viz.paragraph import step_paragraph
from viz.story import decisions, story_events
from viz.story_html import story_html


def kinds(events) -> list[str]:
    return [e.kind for e in events]


def test_a_node_level_story_runs_draft_score_tests_updates_residual_emitted_in_the_records_order():
    step = step_residual()
    events = story_events(step)
    expected = ["draft", "score"]
    for visit in step.visits:
        updates = {u.after_test for u in visit.updates}
        for i, _ in enumerate(visit.tests):
            expected += ["test"] + (["update"] if i in updates else [])
    assert kinds(events) == expected + ["residual", "emitted"]
    tests = [t for v in step.visits for t in v.tests]
    told = decisions(events)
    assert len(told) == len(tests)
    for event, t in zip(told, tests, strict=True):  # same order: each event names its own test's numbers
        assert f"u = {num(t.uniform)}" in event.text and f"= {num(t.threshold)}" in event.text


def test_each_test_is_told_with_its_numbers_and_outcome():
    step = step_residual()
    visit = step.visits[0]
    for t in visit.tests:
        text = narrate.test(step, visit, t)
        for x in (t.numerator, t.denominator, t.threshold, t.uniform):
            assert num(x) in text
        assert f"candidate {t.candidate + 1}" in text and narrate.told_label(step, visit, t)[0] in text
        assert ("is accepted" in text) == t.passed and ("is rejected" in text) == (not t.passed)
        assert ("at or below it" in text) == t.passed


def test_a_ratio_is_told_as_p_over_q_until_the_residual_or_the_drawing_law_differs_then_named_once():
    step = step_residual()  # RRS "r(x)/q(x)": at the root the first test's numbers are p(x), q(x) themselves
    root = step.visits[0]
    first, second = (narrate.test(step, root, t) for t in root.tests)
    assert "p(x)/q(x) = 0.1 / 0.5" in first and "r(x)" not in first  # node 1: p = 0.1, q = 0.5
    assert "p(x)/q(x) = 0.45 / 0.3" in second  # its numbers are still node 2's p and q
    other = step.visits[1]  # at node 2 the second test's numerator (0.1) is p(x) = 0.1 of node 7 again
    texts = [narrate.test(step, other, t) for t in other.tests]
    assert all("p(x)/q(x)" in text for text in texts) and not any("residual:" in text for text in texts)


def test_on_real_records_r_and_d_are_named_in_words_only_where_they_first_differ(toy_rrs_wor):
    told_p_over_q = told_words = 0
    for step in toy_rrs_wor:
        for visit in step.visits:
            named: set[str] = set()
            for t in visit.tests:
                text = narrate.test(step, visit, t)
                child = step.nodes[step.nodes[visit.node].draws[t.candidate]]
                if "p(x)/q(x)" in text:  # the numbers are exactly p(x) and q(x) of the tested token
                    assert num(t.numerator) == num(child.p_token) and num(t.denominator) == num(child.q_token)
                    told_p_over_q += 1
                for symbol, words in (("r", "r is the residual"), ("d", "d is the law this candidate was drawn")):
                    if words in text:
                        assert symbol not in named, "a symbol is named once per node"
                        named.add(symbol)
                        told_words += 1
                if "r(x)" in text:
                    assert "r" in named  # told as r only once named
    assert told_p_over_q >= 3 and told_words >= 2


@pytest.fixture(scope="module")
def toy_rrs_wor():
    from decoding.models.pairs import load_pair
    from decoding.run import engine
    from decoding.run.config import Branching, DecodeConfig

    config = DecodeConfig(verifier="rrs_wor", shape=Branching((3, 2)), seed=5, max_new_tokens=20, chat=False,
                          temperature=1.0)
    return engine.generate(load_pair("toy"), config, "the cat").steps


def test_a_test_event_highlights_its_node_and_candidate_and_the_inspector_follows_the_node():
    step = step_residual()
    first = decisions(story_events(step))[0]
    visit = step.visits[0]
    assert first.node == visit.node
    assert first.focus == (visit.node, step.nodes[visit.node].draws[visit.tests[0].candidate])


def test_an_update_tells_the_residual_as_the_table_does():
    update = step_residual().visits[1].updates[0]
    text = narrate.update(update)
    for x in update.residual_top[:2]:
        assert f"{x.p:.3f} on {narrate.tok(x.text)}" in text
    assert f"test {update.after_test + 1}" in text


def test_the_residual_sample_names_its_token_node_and_residual_probability():
    step = step_residual()
    event = next(e for e in story_events(step) if e.kind == "residual")
    last = step.emitted[-1]
    r = next(x.p for x in step.visits[-1].updates[-1].residual_top if x.token == last.token)
    assert narrate.tok(last.text) in event.text and f"{r:.3f}" in event.text and f"node {last.node}" in event.text
    assert event.focus == (last.node, len(step.nodes))  # the diamond is point len(nodes)


def test_the_bonus_token_names_its_p():
    step = step_bonus()
    event = next(e for e in story_events(step) if e.kind == "bonus")
    bonus = step.emitted[-1]
    p = next(t.p for t in step.nodes[bonus.node].top if t.token == bonus.token)
    assert f"p = {num(p)}" in event.text and "bonus" in event.text and narrate.tok(bonus.text) in event.text


def test_the_emitted_event_lists_every_token_the_expectation_and_why_a_lossy_verifier_is_lossy():
    step = step_residual()
    text = narrate.emitted(step, About())
    assert all(narrate.tok(e.text) in text for e in step.emitted)
    assert f"{step.expected_tokens:.2f}" in text and "2 tokens" in text and "lossy" not in text
    lossy = narrate.emitted(step, About(lossless=False, lossy_why="it keeps argmax drafts."))
    assert lossy.endswith(f"{step.verifier} is lossy: it keeps argmax drafts.")


def test_one_token_is_singular():
    one = replace(step_bonus(), emitted=step_bonus().emitted[:1])
    assert "1 token with" in narrate.emitted(one, About()) and "1 tokens" not in step_paragraph(one)


def nothing_drafted() -> StepRecord:
    root = node(0, -1, 10, 0, ROOT, top=(tp(11, 0.6, 0.0),))
    return StepRecord(4, "rrs", "iid", (root,), (), (0,), (EmittedRecord(11, " world", BONUS, 0),), 1.0,
                      1, 0, 0.0, 5.0, 0.1)


def test_a_step_that_drafted_nothing_says_why_for_prompt_lookup():
    step = nothing_drafted()
    lookup = story_events(step, About(draft_kind="lookup"))
    assert kinds(lookup) == ["draft", "score", "bonus", "emitted"]
    assert "no earlier occurrence of the last 3 or 2 tokens" in lookup[0].text
    assert "plain decoding" in lookup[0].text
    assert "no earlier occurrence" not in story_events(step)[0].text  # only the lookup draft is explained so
    paragraph = step_paragraph(step, About(draft_kind="lookup"))
    assert "proposed nothing" in paragraph and "3 or 2 tokens" in paragraph and "plain decoding" in paragraph


def block_step() -> StepRecord:
    nodes = (node(0, -1, 10, 0, ROOT, draws=(1,)), node(1, 0, 18, 1, ACCEPTED, draws=(2,), p=0.5, q=0.6),
             node(2, 1, 19, 2, REJECTED, p=0.1, q=0.4))
    ev = (TreeEventRecord("coin", 1, 18, " the", 0.11, 0.4046, 0.2719, 0.1771, True, "h_i", "position 1: w_1"),
          TreeEventRecord("coin", 2, 19, "cat", 0.2315, 0.4087, 0.5664, 0.9, False, "h_i", "position 2: w_2"),
          TreeEventRecord("tau", 1, 18, " the", None, None, 1.0, None, None, "tau", "tau = 1: the last pass"),
          TreeEventRecord("gls_merge", 2, 19, "cat", 0.3, 0.6, 0.5, None, True, "merge", "a kind this file never saw"),
          TreeEventRecord("emit", 1, 17, "!", None, None, None, None, None, "residual", "from the weighted residual",
                          (TokenProb(17, "!", 0.625, 0.0), TokenProb(21, ".", 0.375, 0.0))))
    emitted = (EmittedRecord(18, " the", DRAFT, 1), EmittedRecord(17, "!", "residual", 1))
    return StepRecord(0, "block", "iid", nodes, (), (0, 1), emitted, 1.6, 1, 2, 1.0, 2.0, 0.1, tree_events=ev)


def test_a_tree_level_story_has_one_event_per_tree_event_in_order_with_its_numbers():
    step = block_step()
    events = story_events(step)
    assert kinds(events) == ["draft", "score", *(e.kind for e in step.tree_events), "emitted"]
    told = [e for e in events if e.kind not in ("draft", "score", "emitted")]
    for event, record in zip(told, step.tree_events, strict=True):
        assert event.node == record.node and record.note[1:] in event.text
        for x in (record.numerator, record.denominator, record.threshold, record.uniform):
            if x is not None:
                assert num(x) in event.text
        if record.passed is not None and record.uniform is not None:
            assert ("passes" if record.passed else "fails") in event.text
    assert "gls_merge at node 2" in told[3].text  # an unknown kind is still told
    assert "0.625 on '!'" in told[4].text and told[4].focus == (0, 1, len(step.nodes))
    assert len(decisions(events)) == len([e for e in step.tree_events if e.kind != "emit"])


def test_the_paragraph_counts_drafts_acceptances_rejections_and_compares_with_the_expectation():
    step = step_residual()
    text = step_paragraph(step)
    rejected = sum(1 for n in step.nodes if n.status == REJECTED)
    assert f"proposed {len(step.nodes) - 1} tokens" in text and f"rejected {rejected} candidates" in text
    assert f"{step.expected_tokens:.2f}" in text and f"gave {step.n_emitted}" in text
    assert "residual sample" in text and f"node {step.emitted[-1].node}" in text
    assert "bonus token" in step_paragraph(step_bonus())


def test_the_html_holds_every_event_escaped_with_its_focus_and_the_contract_ids():
    step = step_residual()
    events = story_events(step)
    page = story_html(step_paragraph(step), events, "1:rrs")
    for element in ("story-prev", "story-next", "story-play", "story-text", "story-position"):
        assert f'id="{element}"' in page
    assert f"event 1 of {len(events)}" in page and page.count("<li ") == len(events)
    assert "<b>" not in page and "&lt;b&gt;" in page  # token text "<b>" escaped
    assert f'data-focus="{",".join(map(str, events[2].focus))}"' in page


@pytest.fixture(scope="module")
def toy():
    from decoding.models.pairs import load_pair

    return load_pair("toy")


def _first_step(toy, key: str) -> StepRecord | None:
    from decoding.run import engine
    from decoding.run.config import Branching, DecodeConfig

    for tree in ((2, 2), (1, 1, 1)):
        try:
            config = DecodeConfig(verifier=key, shape=Branching(tree), seed=3, max_new_tokens=4, chat=False)
            return engine.generate(toy, config, "the cat").steps[0]
        except ValueError:
            continue
    return None


def test_every_registered_verifier_tells_as_many_tests_as_its_record_holds_in_order(toy):
    from decoding.verify.registry import VERIFIERS

    told = 0
    for key in VERIFIERS:
        step = _first_step(toy, key)
        if step is None:
            continue
        events = story_events(step)
        if step.tree_events:
            assert [e.kind for e in events[2:-1]] == [e.kind for e in step.tree_events], key
        else:
            tests = [t for v in step.visits for t in v.tests]
            assert [e.text for e in decisions(events)] == [narrate.test(step, v, t) for v in step.visits
                                                              for t in v.tests], key
            assert len(decisions(events)) == len(tests)
        assert events[0].kind == "draft" and events[-1].kind == "emitted"
        told += 1
    assert told >= len(VERIFIERS) - 1  # every key runs on one of the two shapes (spechub: k <= 2 too)


def test_an_imported_trace_tells_the_same_story():
    from decoding.run.schema import trace_from_json, trace_to_json
    from tests.fixtures_records import trace

    original = trace()
    imported = trace_from_json(trace_to_json(original))
    for before, after in zip(original.steps, imported.steps, strict=True):
        assert story_events(after) == story_events(before) and step_paragraph(after) == step_paragraph(before)


def test_a_chain_that_stopped_at_its_minimum_confidence_says_so():
    step = block_step()  # a chain 2 levels deep
    floor = About(widths=(1, 1, 1, 1), floor=0.3)
    text = story_events(step, floor)[0].text
    assert "stopped at depth 2 of 4" in text and "at least 0.3, the run's minimum confidence" in text
    greedy = story_events(step, replace(floor, greedy=True))[0].text  # at T = 0 the floor reads the untempered q
    assert "untempered" not in text and "the product of the draft's untempered q down it" in greedy
    assert "stopped" not in story_events(step, About(widths=(1, 1, 1, 1)))[0].text  # no floor: nothing to say
    assert "stopped" not in story_events(step, replace(floor, widths=(1, 1)))[0].text  # the shape's whole depth


def test_the_story_reads_the_minimum_confidence_from_the_trace():
    from tests.fixtures_records import trace
    from ui.story_about import about

    base = trace()
    assert about("sd", base).floor == 0.0
    assert about("sd", replace(base, config={**base.config, "min_confidence": 0.25})).floor == 0.25
