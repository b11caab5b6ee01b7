"""A lesson: a static site built from the teaching examples (ui/teach.py), one short text per idea with its replay
embedded (ui/replay_file.py), for a course page or a static Space. `python -m decoding lesson -o DIR`.

Every claim the text makes is a `Claim`: its sentence is written from the replayed records, and `holds` checks
the claim on those same records (tests/ui/test_lesson.py checks every one; `build` refuses to write a lesson
whose claim does not hold, so a change in the code that falsifies a sentence stops the site, not the reader).
The runs are the toy pair's, seeded: the same records on every machine.

The site is index.html (the texts, each replay in an iframe: a file of its own, so the replays' ids and keys do
not meet), one replay-<idea>.html per idea, and a README.md whose front matter makes the folder a static Space
(`sdk: static`). It opens from disk as well: nothing is fetched.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from decoding.compare.session import CompareRun
from decoding.lab import certify as certify_mod
from decoding.lab import language as lang
from decoding.run import engine
from decoding.run.schema import Trace
from decoding.speed.plan import load_planned
from decoding.verify.registry import VERIFIERS
from ui import replay_file, teach
from ui.link_query import Link
from viz.narrate import num, tok


@dataclass(frozen=True)
class Replayed:
    """An idea's records: the run embedded, and any other run or certificate its claims compare with."""

    trace: Trace
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def step(self):
        return self.trace.steps[0]


@dataclass(frozen=True)
class Claim:
    text: Callable[[Replayed], str]  # the sentence, its numbers and words read from the records
    holds: Callable[[Replayed], bool]  # the claim checked on the same records


@dataclass(frozen=True)
class Idea:
    slug: str
    title: str
    intro: str  # what to look at, no number in it
    link: Link  # the run replayed (the teaching example's link where there is one)
    claims: tuple[Claim, ...]
    extra: Callable[[], dict[str, Any]] = dict  # other runs and certificates the claims compare with


def replay(link: Link) -> Trace:
    """The link's run on its (toy) pair, as the page runs it: its Steps, compared when the link compares."""
    pair = load_planned(link.controls.pair)
    config = link.controls.config()
    run: engine.Run = engine.start(pair, config, link.controls.prompt)
    if link.compare:
        run = CompareRun(pair, config, run.state, list(link.compare), 0)
    for _ in range(max(1, link.steps)):
        run.step()
    return run.trace()


def _verdict(r: Replayed, key: str):
    return next(v for v in r.step.compare.verdicts if v.key == key)


def _rejected_test(r: Replayed):
    return next(t for v in r.step.visits for t in v.tests if not t.passed)


def _one_chain() -> dict[str, Any]:
    link = teach.EXAMPLES[1].link
    chain = replace(link, controls=replace(link.controls, verifier="sd", branching="1,1"), compare=())
    return {"chain": replay(chain)}


def _certificates() -> dict[str, Any]:
    tiny = lang.load(lang.presets()["worked_example"])
    return {key: certify_mod.certify(VERIFIERS[key], [tiny], (1, 1)) for key in ("hsd", "hsd_lossless")}


def _coins(r: Replayed) -> list:
    return [e for e in r.step.tree_events if e.kind == "coin"]


def _tau(r: Replayed) -> int:
    return int(next(e for e in r.step.tree_events if e.kind == "tau").threshold)


TOY = teach.TOY
IDEAS: tuple[Idea, ...] = (
    Idea("chain", "One draft chain: a test per drafted word",
         "The draft proposes a chain of three words and standard speculative decoding (SD) tests them in order: a "
         "word passes when a uniform draw u is at most min(1, p(x)/q(x)). At the first failure SD stops and draws "
         "the next word from the residual max(p − q, 0), renormalised, so the text still follows p.",
         teach.EXAMPLES[0].link,
         (Claim(lambda r: f"Here SD accepts {tok(r.step.nodes[1].text)} and rejects {tok(r.step.nodes[2].text)}.",
                lambda r: [n.status for n in r.step.nodes[:3]] == ["root", "accepted", "rejected"]),
          Claim(lambda r: f"The rejected word's test drew u = {num(_rejected_test(r).uniform)}, above its threshold "
                          f"{num(_rejected_test(r).threshold)}.",
                lambda r: _rejected_test(r).uniform > _rejected_test(r).threshold),
          Claim(lambda r: f"So the step's last word, {tok(r.step.emitted[-1].text)}, is a residual sample.",
                lambda r: r.step.emitted[-1].kind == "residual"))),
    Idea("candidates", "Several candidates: a rejected one hands its mass on",
         "With three candidates at the root, a rejected candidate's mass moves to the next one through the "
         "residual, so the tree brings more tokens a step than one candidate would.",
         teach.EXAMPLES[1].link,
         (Claim(lambda r: f"The exact expected number of tokens of this tree is {r.step.expected_tokens:.2f}, against "
                          f"{r.extra['chain'].steps[0].expected_tokens:.2f} for a one-candidate chain drawn with the "
                          "same seed.",
                lambda r: r.step.expected_tokens > r.extra["chain"].steps[0].expected_tokens),),
         _one_chain),
    Idea("replacement", "With and without replacement",
         "Drawn i.i.d., candidates can repeat, and a repeated candidate is a wasted test: after its first rejection "
         "its residual mass is 0. Drawn without replacement, every candidate is a new word. The compared step below "
         "draws both trees from the same uniforms.",
         teach.EXAMPLES[2].link,
         (Claim(lambda r: f"rrs (i.i.d.) drafts {tok(' sat')} {_verdict(r, 'rrs').texts[1:].count(' sat')} times; "
                          f"rrs_wor drafts {len(set(_verdict(r, 'rrs_wor').texts[1:]))} different words.",
                lambda r: _verdict(r, "rrs").texts[1:].count(" sat") >= 2
                and len(set(_verdict(r, "rrs_wor").texts[1:])) == len(_verdict(r, "rrs_wor").texts) - 1),
          Claim(lambda r: f"Without replacement the step expects {_verdict(r, 'rrs_wor').expected_tokens:.2f} tokens, "
                          f"with it {_verdict(r, 'rrs').expected_tokens:.2f}.",
                lambda r: _verdict(r, "rrs_wor").expected_tokens > _verdict(r, "rrs").expected_tokens))),
    Idea("temperature-zero", "Temperature 0 is greedy decoding",
         "At temperature 0 the target p puts all its mass on its argmax, so every lossless verifier emits the "
         "target's greedy text, and the lossy greedy verifier agrees with it.",
         teach.EXAMPLES[3].link,
         (Claim(lambda r: f"On every one of these {len(r.trace.steps)} steps, rrs and greedy emit the same tokens.",
                lambda r: all(len({v.emitted for v in s.compare.verdicts}) == 1 for s in r.trace.steps)),)),
    Idea("biased", "A verifier that looks right but is biased",
         "Hierarchical speculative decoding as published (hsd) looks like block verification, but its whole-draft "
         "coin is not capped: it keeps the first token's law and not the second's. No single step shows it; the "
         "exact check does. (The lab's example file assets/examples/wrong_verifier.py is another such verifier.)",
         Link(replace(TOY, verifier="hsd", branching="1,1", seed=2), 1),
         (Claim(lambda r: "Certified exactly on a chain of 2 over the worked_example language, hsd's emitted law is "
                          f"off the target's by TV = {r.extra['hsd'].max_tv:.4f}, while hsd_lossless, the capped "
                          f"form, is off by {r.extra['hsd_lossless'].max_tv:.1e}.",
                lambda r: r.extra["hsd"].max_tv > 1e-3 and r.extra["hsd_lossless"].max_tv <= 1e-9),
          Claim(lambda r: "The story of the step below ends by saying hsd is lossy.",
                lambda r: r.step.verifier == "hsd" and not VERIFIERS["hsd"].lossless)),
         _certificates),
    Idea("block", "Block verification: keep the chain up to the last passed coin",
         "Block verification tosses one coin per position of the chain and keeps the chain up to τ, the last "
         "position whose coin passed: a failed coin in the middle does not stop it as it stops SD.",
         teach.EXAMPLES[5].link,
         (Claim(lambda r: "Here the coins at positions 1 to 3 read "
                          + ", ".join("pass" if c.passed else "fail" for c in _coins(r))
                          + f", so τ = {_tau(r)} and block keeps {len(r.step.accepted_path) - 1} drafted words.",
                lambda r: _tau(r) == max(i + 1 for i, c in enumerate(_coins(r)) if c.passed)
                and len(r.step.accepted_path) - 1 == _tau(r)),
          Claim(lambda r: "One coin failed before τ, where SD would have stopped.",
                lambda r: any(not c.passed for c in _coins(r)[:_tau(r) - 1]))),),
)


def replayed(idea: Idea) -> Replayed:
    return Replayed(replay(idea.link), idea.extra())


def checked(idea: Idea, records: Replayed) -> list[str]:
    """The idea's claims as sentences; ValueError naming the first claim that does not hold on the records."""
    sentences = []
    for i, claim in enumerate(idea.claims, start=1):
        if not claim.holds(records):
            raise ValueError(f"lesson {idea.slug!r}: claim {i} does not hold on its replayed records: "
                             f"{claim.text(records)}")
        sentences.append(claim.text(records))
    return sentences


def build(folder: str | Path, ideas: tuple[Idea, ...] = IDEAS) -> Path:
    """Write the site into `folder` (created); returns its index.html."""
    out = Path(folder)
    if out.exists() and not out.is_dir():
        raise ValueError(f"{out} is a file: give a folder to write the lesson into")
    out.mkdir(parents=True, exist_ok=True)
    sections = []
    for idea in ideas:
        records = replayed(idea)
        sentences = checked(idea, records)
        name = f"replay-{idea.slug}.html"
        (out / name).write_text(replay_file.document(records.trace, title=f"specscope lesson: {idea.title}"),
                                encoding="utf-8")
        sections.append(_section(idea, sentences, name))
    (out / "index.html").write_text(_index(sections), encoding="utf-8")
    (out / "README.md").write_text(SPACE_README, encoding="utf-8")
    return out / "index.html"


SPACE_README = """---
title: specscope lesson
emoji: 🔭
colorFrom: indigo
colorTo: green
sdk: static
app_file: index.html
pinned: false
---

A lesson on speculative decoding built by `python -m decoding lesson -o DIR` (specscope): index.html and one
self-contained replay file per idea. It needs no server: open index.html from disk, or upload the folder as a
static Space.
"""
STYLE = ("body{margin:0 auto;max-width:1200px;padding:1rem 1.5rem 3rem;font-family:system-ui,-apple-system,'Segoe UI',"
         "Roboto,Arial,sans-serif;line-height:1.55;color:#1f2328;background:#fff}"
         "h1{font-size:1.7rem}h2{font-size:1.3rem;margin-top:2.2rem;border-top:1px solid #d0d7de;padding-top:1rem}"
         ".claims li{margin:0.2rem 0}iframe{width:100%;height:860px;border:1px solid #d0d7de;border-radius:8px}"
         "a{color:#0550ae}code{background:#f6f8fa;padding:0 0.2em}nav ol{columns:2}"
         "@media (prefers-color-scheme:dark){body{background:#0d1117;color:#e6edf3}a{color:#79c0ff}"
         "code{background:#161b22}h2,iframe{border-color:#3d444d}}")


def _section(idea: Idea, sentences: list[str], name: str) -> str:
    claims = "".join(f"<li>{html.escape(s)}</li>" for s in sentences)
    return (f'<section id="{idea.slug}" aria-labelledby="{idea.slug}-title">'
            f'<h2 id="{idea.slug}-title">{html.escape(idea.title)}</h2><p>{html.escape(idea.intro)}</p>'
            f'<ul class="claims">{claims}</ul>'
            f'<p><a href="{name}">Open this replay on its own page</a> (keys: ← → events, space plays, n next '
            f"step; add <code>?present=1</code> for a projector).</p>"
            f'<iframe src="{name}" title="replay: {html.escape(idea.title, quote=True)}" loading="lazy"></iframe>'
            "</section>")


def _index(sections: list[str]) -> str:
    toc = "".join(f'<li><a href="#{i.slug}">{html.escape(i.title)}</a></li>' for i in IDEAS)
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>Speculative decoding, step by step: a specscope lesson</title><style>{STYLE}</style></head><body>"
            "<header><h1>Speculative decoding, step by step</h1>"
            "<p>A small draft model q proposes tokens; the target p scores them all in one forward pass; a verifier "
            "decides which to keep so that the text still follows p. Each idea below is a real run on a 12-word toy "
            "language, replayed from its records: press ▶ (or →) to go through its story event by event. Every "
            "sentence with a number was checked against these records when the lesson was built.</p>"
            f'<nav aria-label="ideas"><ol>{toc}</ol></nav></header><main>{"".join(sections)}</main>'
            "<footer><p>Built by specscope (<code>python -m decoding lesson</code>). No server, no network.</p>"
            "</footer></body></html>")
