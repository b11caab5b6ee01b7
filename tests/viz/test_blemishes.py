"""What a newcomer saw and should not (issue 25, item 5), on hand-made records: "1 tokens emitted", the
root's inspector blaming the accepted path when nothing was drafted, seven compared trees side by side."""

from __future__ import annotations

from dataclasses import replace

from tests.fixtures_records import step_bonus
from tests.viz.test_story import nothing_drafted
from viz import compare as vc
from viz import node_figure, tree_figure


def test_one_token_emitted_is_singular_in_the_tree_title():
    one = replace(step_bonus(), emitted=step_bonus().emitted[:1])
    assert "1 token emitted" in tree_figure.default_title(one)
    assert "3 tokens emitted" in tree_figure.default_title(step_bonus())


def test_the_roots_inspector_says_nothing_was_drafted_not_that_it_missed_the_path():
    step = nothing_drafted()
    title = node_figure.node_title(step, step.nodes[0], None)
    assert "nothing was drafted" in title and "not on the accepted path" not in title


def test_seven_compared_trees_sit_four_to_a_row_so_their_titles_have_room():
    assert vc.grid(7) == (2, 4) and vc.grid(3) == (1, 3) and vc.grid(8) == (2, 4) and vc.grid(9) == (3, 4)


def test_the_residual_sample_diamond_carries_its_token_label():
    from tests.fixtures_records import step_residual
    from viz.tokens import label

    step = step_residual()
    spec = tree_figure.tree_spec(step)
    diamond = next(t for t in spec["data"] if t.get("customdata") and t["customdata"][0][1] == "residual")
    assert diamond["mode"] == "markers+text" and diamond["text"] == [label(step.emitted[-1].text)]
    assert diamond["text"][0].strip()
