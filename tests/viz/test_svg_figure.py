"""viz/svg_figure.py draws the figure specs the app sends plotly as static SVG: every tree node is one point
with its id, category and symbol (shape, not colour only), its hover as a <title>; every bar's height is its
probability; plotly's markup is read, any other text escaped; subplots, annotations and the compare figure's
small multiples land inside the picture."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from tests.fixtures_records import step_bonus, step_residual
from viz import node_figure, tree_figure
from viz.svg_figure import plain, svg

NS = {"s": "http://www.w3.org/2000/svg"}


def parsed(text: str) -> ET.Element:
    return ET.fromstring(text)  # well-formed XML: no stray tag, no unescaped '<' or '&'


def points(root: ET.Element) -> dict[int, ET.Element]:
    return {int(g.get("data-node")): g for g in root.iter("{http://www.w3.org/2000/svg}g")
            if g.get("data-node") is not None}


def test_every_node_and_the_residual_token_is_one_point_with_its_category_and_symbol():
    step = step_residual()
    root = parsed(svg(tree_figure.tree_spec(step)))
    drawn = points(root)
    assert sorted(drawn) == list(range(len(step.nodes) + 1))  # the residual diamond is point len(nodes)
    for n in step.nodes:
        assert drawn[n.id].get("data-category") == n.status
    assert drawn[len(step.nodes)].get("data-category") == "residual"
    kinds = {n.status: drawn[n.id].find("s:circle", NS) is not None or drawn[n.id].find("s:rect", NS) is not None
             for n in step.nodes}
    assert kinds["rejected"] is False  # an x is a path, not a circle: told by shape
    assert drawn[1].find("s:path", NS) is not None and drawn[3].find("s:circle", NS).get("fill") == "none"
    assert drawn[0].find("s:rect", NS) is not None  # the root's square


def test_each_point_carries_its_hover_as_a_title_in_plain_text():
    step = step_residual()
    spec = tree_figure.tree_spec(step)
    hovers = {row[0]: h for t in spec["data"] if t.get("customdata")
              for row, h in zip(t["customdata"], t["hovertext"], strict=True)}
    drawn = points(parsed(svg(spec)))
    for node, hover in hovers.items():
        assert drawn[node].find("s:title", NS).text == plain(hover)
        assert "<br>" not in drawn[node].find("s:title", NS).text


def test_bar_heights_are_the_probabilities_on_the_axis():
    step = step_residual()
    spec = node_figure.node_spec(step, 2)
    root = parsed(svg(spec, 700))
    rects = [r for g in root.iter("{http://www.w3.org/2000/svg}g") if g.get("class") == "bars"
             for r in g.findall("s:rect", NS)]
    p_bars = [t for t in spec["data"] if t["name"] == "p (target)"][0]
    heights = {}
    for r in rects:
        title = r.find("s:title", NS).text
        if title.startswith("p (target): "):
            heights[title] = float(r.get("height"))
    values = [y for y in p_bars["y"] if y is not None]
    assert len(heights) == len(values)
    unit = max(heights.values()) / max(values)  # pixels per unit probability, the same for every bar
    for (title, h), y in zip(heights.items(), values, strict=True):
        assert abs(h - y * unit) < 0.15, title
    assert re.search(r"residual after test 1: .* = 0\.7000", svg(spec))  # the residual rows are drawn too


def test_markup_is_read_and_any_other_text_escaped():
    step = step_residual()
    text = svg(node_figure.node_spec(step, 0))  # the root's candidates: one of them is the token "<b>"
    assert "<script" not in text and "&lt;b&gt;" in text  # the token "<b>" is a text, not a tag
    parsed(text)
    assert '<tspan font-weight="bold">' in svg({"data": [], "layout": {"title": {"text": "a <b>bold</b> word"}}})
    assert plain("x<br>y &amp; <i>z</i><script>alert(1)</script>") == "x\ny & zalert(1)"


def test_the_accessible_name_is_the_title_and_text_is_inside_the_view_box():
    step = step_bonus()
    root = parsed(svg(tree_figure.tree_spec(step), 600))
    assert root.get("role") == "img" and root.get("aria-label").startswith("step 2 · sd")
    width, height = (float(v) for v in root.get("viewBox").split()[2:])
    for t in root.iter("{http://www.w3.org/2000/svg}tspan"):
        if t.get("y") is not None:
            assert 0 <= float(t.get("y")) <= height and -1 <= float(t.get("x")) <= width


def test_the_compare_figure_draws_one_tree_per_verifier():
    from decoding.compare.session import CompareRun
    from decoding.models.pairs import load_pair
    from decoding.run import engine
    from decoding.run.config import Branching, DecodeConfig
    from viz.compare import small_multiples

    toy = load_pair("toy")
    config = DecodeConfig(verifier="rrs", shape=Branching((2, 2)), seed=3, max_new_tokens=4, chat=False)
    state = engine.start(toy, config, "the cat").state
    step = CompareRun(toy, config, state, ["rrs", "rrs_wor", "spectr"], 0).step()
    spec = small_multiples(step.compare).to_plotly_json()
    root = parsed(svg(spec, 960))
    labelled = [t for t in root.iter("{http://www.w3.org/2000/svg}text") if "emits:" in "".join(t.itertext())]
    assert len(labelled) == 3  # one "emits" note under each verifier's tree
    circles = list(root.iter("{http://www.w3.org/2000/svg}circle"))
    assert len(circles) == sum(len(v.tokens) for v in step.compare.verdicts)
    xs = sorted({round(float(c.get("cx"))) for c in circles if c.get("cx")})
    assert xs[0] >= 0 and xs[-1] <= 960
