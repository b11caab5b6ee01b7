"""The lesson (ui/lesson.py, `python -m decoding lesson -o DIR`): every claim its text makes holds on the replayed
records it is written from; a claim falsified by other records stops the build with the claim named; the site is
index.html with one embedded replay per idea, a static Space's README, and nothing fetched."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from decoding.cli.main import main as cli_main
from ui import lesson


@pytest.fixture(scope="module")
def records() -> dict[str, lesson.Replayed]:
    return {idea.slug: lesson.replayed(idea) for idea in lesson.IDEAS}


def test_the_ideas_the_issue_asks_for_are_there():
    assert [i.slug for i in lesson.IDEAS] == ["chain", "candidates", "replacement", "temperature-zero", "biased",
                                              "block"]


@pytest.mark.parametrize("idea", lesson.IDEAS, ids=lambda i: i.slug)
def test_every_claim_holds_on_the_replayed_records(idea, records):
    r = records[idea.slug]
    assert idea.claims
    for claim in idea.claims:
        assert claim.holds(r), claim.text(r)
        assert claim.text(r)  # the sentence is written from the same records


def test_the_claims_say_what_the_records_hold(records):
    chain = records["chain"]
    text = " ".join(lesson.checked(lesson.IDEAS[0], chain))
    assert repr(chain.step.nodes[1].text.replace(" ", "·")) in text and "residual sample" in text
    block = records["block"]
    assert "pass, fail, pass, so τ = 3 and block keeps 3 drafted words" in " ".join(lesson.checked(lesson.IDEAS[5],
                                                                                                  block))


def test_a_claim_that_the_records_do_not_hold_stops_the_build(records):
    chain = records["chain"]
    nodes = list(chain.step.nodes)
    nodes[2] = replace(nodes[2], status="accepted")  # as if SD had kept the second word
    falsified = replace(chain, trace=replace(chain.trace, steps=(replace(chain.step, nodes=tuple(nodes)),)))
    with pytest.raises(ValueError, match="lesson 'chain': claim 1 does not hold"):
        lesson.checked(lesson.IDEAS[0], falsified)
    block = records["block"]
    coins = tuple(replace(e, passed=True) if e.kind == "coin" else e for e in block.step.tree_events)
    all_pass = replace(block, trace=replace(block.trace, steps=(replace(block.step, tree_events=coins),)))
    with pytest.raises(ValueError, match="claim 2 does not hold"):  # no failed coin before tau
        lesson.checked(lesson.IDEAS[5], all_pass)


def test_the_site_on_disk(tmp_path, capsys):
    assert cli_main(["lesson", "-o", str(tmp_path / "site")]) == 0
    assert "lesson written to" in capsys.readouterr().err
    site = tmp_path / "site"
    index = (site / "index.html").read_text(encoding="utf-8")
    frames = re.findall(r'<iframe src="([^"]+)" title="replay: [^"]+"', index)
    assert frames == [f"replay-{i.slug}.html" for i in lesson.IDEAS]
    assert all((site / f).is_file() and '<template class="replay-step"' in (site / f).read_text() for f in frames)
    links = re.findall(r'(?:src|href)="([^"]+)"', index)
    assert all(not re.match(r"\w+:", link) for link in links), links  # relative files and anchors only
    space = (site / "README.md").read_text(encoding="utf-8")
    assert "sdk: static" in space and "app_file: index.html" in space


def test_a_file_as_the_lessons_folder_is_refused_in_one_line(tmp_path, capsys):
    taken = tmp_path / "taken"
    taken.write_text("x")
    assert cli_main(["lesson", "-o", str(taken)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "is a file" in err and "\n" not in err
