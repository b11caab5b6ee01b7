"""The replay file (viz/replay_html.py) holds the whole run and needs nothing from outside: one inert template
per step with its story block, tree and every node's figure and tests, a compared step's other stories and
small multiples; no URL, no fetch; every text escaped; a trace without steps refused in one line."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from tests.fixtures_records import trace
from viz.replay_html import replay_html
from viz.story_block import story_block


def templates(doc: str, cls: str = "replay-step") -> list[str]:
    return re.findall(rf'<template class="{cls}"[^>]*>(.*?)</template>', doc, flags=re.S)


def test_one_template_per_step_with_its_story_tree_and_every_nodes_figure_and_tests():
    run = trace()
    doc = replay_html(run)
    steps = templates(doc)
    assert len(steps) == len(run.steps)
    for i, (step, body) in enumerate(zip(run.steps, steps, strict=True), start=1):
        assert story_block(step, i) in body
        assert body.count('class="node-panel"') == len(step.nodes)
        assert body.count("<svg") == len(step.nodes) + 1  # the tree and one figure per node
        assert body.count('<table class="tests-table">') == len(step.nodes)
        shown = [m for m in re.findall(r'class="node-panel" data-node="(\d+)"( hidden)?', body) if not m[1]]
        assert shown == [(str(step.visits[-1].node), "")]  # the inspector opens at the last verified node


def test_the_file_asks_nothing_of_the_network():
    doc = replay_html(trace())
    assert not re.search(r"\b(src|href)\s*=", doc), "a URL attribute"
    assert "<link" not in doc and "@import" not in doc and "url(" not in doc
    assert not re.search(r"\b(fetch|XMLHttpRequest|import)\s*\(", doc)
    assert "</script" not in doc.split("<script>", 1)[1].split("</script>", 1)[0]  # an asset cannot end its tag


def test_every_token_text_is_escaped():
    run = trace()
    emitted = (replace(run.steps[0].emitted[0], text="<b>"), *run.steps[0].emitted[1:])
    run = replace(run, prompt="<i>hi</i> & bye", steps=(replace(run.steps[0], emitted=emitted), *run.steps[1:]))
    doc = replay_html(run)
    assert "<b>" not in doc and "&lt;b&gt;" in doc  # the token "<b>" is shown, never parsed
    assert "<i>" not in doc and "&lt;i&gt;hi&lt;/i&gt; &amp; bye" in doc  # the prompt too


def test_the_steps_list_and_the_text_name_every_step_and_token():
    run = trace()
    doc = replay_html(run)
    assert len(re.findall(r'<button type="button" data-step="\d+"', doc)) == len(run.steps)
    tokens = re.findall(r'<span class="tok origin-(\w+)" data-step="(\d+)"', doc)
    assert tokens == [(e.kind, str(s.index + 1)) for s in run.steps for e in s.emitted]


def test_a_trace_without_steps_is_refused():
    with pytest.raises(ValueError, match="no steps"):
        replay_html(replace(trace(), steps=()))
