"""Shareable links (ui/link_query.py, ui/links.py): controls -> link -> controls is the identity on every
control, junk is refused value by value (a notice and the default), the caps bound what a link runs, the
CLI line decodes with the same config, and opening a link runs its Steps (toy pair, in process)."""

from __future__ import annotations

from dataclasses import fields, replace
from urllib.parse import parse_qsl

import pytest

from decoding.cli.main import build_parser, config_from_args
from decoding.verify.registry import VERIFIERS
from ui.caps import Caps
from ui.link_query import TABS, Link, canonical, cli_command, link_query, read_link
from ui.session import SHAPES, Controls

DEFAULT = Controls()


def parsed(query: str) -> dict[str, str]:
    """What the server sees (starlette's query_params: the last value of a repeated key)."""
    return dict(parse_qsl(query, keep_blank_values=True))


def back(link: Link, caps: Caps | None = None) -> tuple[Link, list[str]]:
    return read_link(parsed(link_query(link)), DEFAULT, caps or Caps())


# One variation of every Controls field (and of the link's own keys), each away from its default.
VARIED = [
    replace(DEFAULT, pair="toy"), replace(DEFAULT, pair="lookup"), replace(DEFAULT, pair="embedded-head"),
    replace(DEFAULT, pair="custom", target="org/target model", draft="./local draft"),
    replace(DEFAULT, prompt="a & b = c? #1 100% «ünïcode» ⏎\nnext line, tab\t+plus"),
    replace(DEFAULT, prompt=""),
    *[replace(DEFAULT, verifier=key, branching="1,1,1") for key in VERIFIERS],
    replace(DEFAULT, branching="2,1,3"),
    replace(DEFAULT, verifier="rrs", shape=SHAPES[1], sequences=3, depth=5),
    replace(DEFAULT, temperature=0.0), replace(DEFAULT, temperature=1.37), replace(DEFAULT, top_k=5),
    replace(DEFAULT, top_p=0.9), replace(DEFAULT, seed=123456789), replace(DEFAULT, max_new_tokens=7),
]


def test_every_control_survives_the_round_trip():
    names = [f.name for f in fields(Controls)]
    assert set(names) <= {name for c in VARIED for name in names if getattr(c, name) != getattr(DEFAULT, name)}
    for controls in VARIED:
        link = Link(controls, steps=3)
        got, notices = back(link)
        assert notices == [] and got == replace(link, controls=canonical(controls)), controls


def test_steps_compare_and_tab_survive_the_round_trip():
    tabs = [Link(DEFAULT, 1, (), t) for t in TABS]
    for link in (Link(DEFAULT, 0), Link(DEFAULT, 17, ("rrs", "rrs_wor", "spectr")), *tabs):
        assert back(link) == (link, [])


def test_a_link_holds_the_seed():
    """The run a link describes is seeded: a link that dropped the seed would show another run."""
    link = Link(replace(DEFAULT, seed=4242), 2)
    assert "seed=4242" in link_query(link) and back(link)[0].controls.seed == 4242


def test_canonical_drops_only_what_the_run_does_not_use():
    c = replace(DEFAULT, verifier="rrs", shape=SHAPES[1], sequences=3, depth=2, branching="9,9", target="x")
    assert canonical(c) == replace(c, branching=DEFAULT.branching, target="")
    assert canonical(c).config() == c.config()


@pytest.mark.parametrize(("query", "key"), [
    ("temperature=abc", "temperature"), ("temperature=5", "temperature"), ("top_p=nan", "top_p"),
    ("seed=-1", "seed"), ("seed=1.5", "seed"), ("top_k=1e400", "top_k"), ("verifier=nope", "verifier"),
    ("pair=evil", "pair"), ("pair=", "pair"), ("tree=0,2", "tree"), ("tree=a,b", "tree"),
    ("verifier=rrs&depth=0", "depth"),
    ("max_new_tokens=0", "max_new_tokens"), ("steps=-1", "steps"), ("steps=two", "steps"),
    ("compare=rrs,nope", "compare"), ("tab=xyz", "tab"), ("foo=bar", "foo"),
])
def test_junk_is_one_notice_naming_its_key_and_the_default_is_kept(query, key):
    link, notices = read_link(parsed(query), DEFAULT, Caps())
    assert len(notices) == 1 and key in notices[0] and "\n" not in notices[0]
    assert link.controls == replace(DEFAULT, shape=link.controls.shape, verifier=link.controls.verifier)  # defaults
    assert link.steps == 0 and link.compare == () and link.tab == ""


def test_a_link_never_runs_more_than_the_caps():
    caps = Caps(max_new_tokens=8, max_depth=2, max_nodes=6, max_prompt_chars=10)
    for query in ("steps=9", "max_new_tokens=9", "tree=1,1,1", "tree=3,3", "prompt=" + "x" * 11,
                  "sequences=2&depth=3"):
        link, notices = read_link(parsed(query), replace(DEFAULT, branching="2,2", max_new_tokens=8), caps)
        assert notices and link.steps == 0, query
    link, notices = read_link(parsed("steps=8&tree=1,1&max_new_tokens=8"), replace(DEFAULT, max_new_tokens=8), caps)
    assert notices == [] and link.steps == 8


def test_settings_that_cannot_run_together_run_nothing():
    link, notices = read_link(parsed("verifier=block&tree=3,2&steps=2"), DEFAULT, Caps())
    assert link.steps == 0 and len(notices) == 1 and "cannot run" in notices[0]


def test_the_cli_line_decodes_with_the_same_config():
    import shlex

    sequences = replace(DEFAULT, verifier="spectr", shape=SHAPES[1], sequences=2)
    for controls in [c for c in VARIED if c.pair != "custom"] + [sequences]:
        try:
            wanted = controls.config()
        except ValueError:
            continue  # e.g. block on 1,1,1 is fine, but a verifier refusing its shape has nothing to compare
        args = shlex.split(cli_command(controls))[4:]  # after "python -m decoding generate"
        got = config_from_args(build_parser().parse_args(["generate", *args]))
        assert got == wanted, controls


def test_opening_a_link_runs_its_steps_and_the_text_is_the_seeded_runs(toy_views):
    from decoding.models.pairs import load_pair
    from decoding.run import engine
    from ui import links

    views, panel, tabs = toy_views
    controls = replace(DEFAULT, pair="toy", prompt="the cat", verifier="rrs", branching="2,2", seed=7,
                       max_new_tokens=12)
    query = parsed(link_query(Link(controls, 3, (), "stats")))
    out = links.open_link(views, panel, tabs, DEFAULT, None, query)
    session = out[views.state]
    assert len(session.steps) == 3 and session.controls == canonical(controls)
    whole = engine.generate(load_pair("toy"), controls.config(), controls.prompt)
    assert [s.emitted for s in session.steps] == [s.emitted for s in whole.steps[:3]]  # the same seeded run
    assert out[views.controls["seed"]] == 7 and out[views.controls["verifier"]] == "rrs"
    assert out[panel.notice] == "" and "Step 3 of 3" in out[views.status]


def test_a_compared_links_walks_stay_within_the_servers_cap(toy_views):
    """A link with `compare` runs its Steps with the app's usual walks (200), or the server's --max-compare-mc
    where that is lower: the link asks for no count, so it is capped, not refused."""
    from ui import links

    views, panel, tabs = toy_views
    controls = replace(DEFAULT, pair="toy", prompt="the cat", verifier="rrs", branching="2,2")
    query = parsed(link_query(Link(controls, 1, ("rrs_wor", "spectr"))))
    out = links.open_link(replace(views, caps=Caps(max_compare_mc=50)), panel, tabs, DEFAULT, None, query)
    verdicts = out[views.state].steps[-1].compare.verdicts
    assert [v.key for v in verdicts] == ["rrs", "rrs_wor", "spectr"] and {v.mc_draws for v in verdicts} == {50}


def test_a_junk_link_opens_with_a_notice_and_runs_nothing(toy_views):
    from ui import links

    views, panel, tabs = toy_views
    toy = replace(DEFAULT, pair="toy", prompt="the cat")
    out = links.open_link(views, panel, tabs, toy, None, {"seed": "x", "steps": "1"})
    assert "⚠️" in out[panel.notice] and "seed" in out[panel.notice]
    session = out[views.state]  # the page keeps working: the default seed, the Step run
    assert session.controls.seed == toy.seed and len(session.steps) == 1 and "Step 1 of 1" in out[views.status]


@pytest.fixture(scope="module")
def toy_views():
    import gradio as gr

    import app
    from ui import links

    found = {}
    original = links.LinkPanel.build

    def keep(cls):
        found["panel"] = original()
        return found["panel"]

    links.LinkPanel.build = classmethod(keep)
    try:
        demo, views = app.build_page("toy")
    finally:
        links.LinkPanel.build = original
    tabs = next(b for b in demo.blocks.values() if isinstance(b, gr.Tabs))
    return views, found["panel"], tabs
