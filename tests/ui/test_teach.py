"""The examples to teach with (ui/teach.py) say what their links really show (toy pair, in process), every
link reads back without a notice, and the README lists the same links."""

from __future__ import annotations

from dataclasses import replace
from urllib.parse import parse_qsl

import pytest

from decoding.compare.session import CompareRun
from decoding.models.pairs import load_pair
from decoding.run import engine
from tests.served import ROOT
from ui.caps import Caps
from ui.link_query import read_link
from ui.session import Controls
from ui.teach import EXAMPLES


@pytest.fixture(scope="module")
def toy():
    return load_pair("toy")


def first_step(toy, link):
    c = link.controls
    if link.compare:
        state = engine.start(toy, c.config(), c.prompt).state
        return CompareRun(toy, c.config(), state, list(link.compare), 0).step()
    return engine.start(toy, c.config(), c.prompt).step()


def test_every_example_link_reads_back_as_itself():
    for e in EXAMPLES:
        assert read_link(dict(parse_qsl(e.query[1:], keep_blank_values=True)), Controls(), Caps()) == (e.link, [])


def test_the_readme_lists_every_example():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for e in EXAMPLES:
        assert e.query in readme and e.title in readme


def test_one_chain_accepts_then_rejects(toy):
    step = first_step(toy, EXAMPLES[0].link)
    assert [n.status for n in step.nodes[:3]] == ["root", "accepted", "rejected"]
    assert step.emitted[-1].kind == "residual"


def test_three_candidates_expect_more_tokens_than_one(toy):
    link = EXAMPLES[1].link
    three = first_step(toy, link)
    one = first_step(toy, replace(link, controls=replace(link.controls, verifier="sd", branching="1,1"), compare=()))
    assert three.expected_tokens > one.expected_tokens


def test_with_replacement_repeats_a_draft_and_expects_fewer_tokens(toy):
    record = first_step(toy, EXAMPLES[2].link).compare
    wor, iid = (next(v for v in record.verdicts if v.key == k) for k in ("rrs_wor", "rrs"))
    assert iid.texts[1:].count(" sat") == 3 and len(set(wor.texts[1:])) == len(wor.texts) - 1
    assert wor.expected_tokens > iid.expected_tokens
    assert wor.visits[0].conditional_acceptance > iid.visits[0].conditional_acceptance


def test_temperature_zero_is_the_targets_greedy_text(toy):
    link = EXAMPLES[3].link
    c = link.controls
    lossless = engine.generate(toy, c.config(), c.prompt).text
    greedy = engine.generate(toy, replace(c, verifier="greedy").config(), c.prompt).text
    assert lossless == greedy
    record = first_step(toy, link).compare
    assert len({v.emitted for v in record.verdicts}) == 1
