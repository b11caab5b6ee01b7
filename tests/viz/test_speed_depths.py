"""The Speed tab's acceptance per depth and the trained head's card (viz/speed.py), on numbers set by hand: the
markdown shows the numbers given, says whose acceptance it is, and shows no card section without a card."""

from __future__ import annotations

from dataclasses import replace

from viz import speed as speed_view

FACTS = speed_view.SpeedFacts(
    machine="m", stock=((1, 10.0),), planned=((1, 10.0),), plan="stock", draft=((1, 1.0),), overhead_ms=1.0,
    shapes=(speed_view.ShapeRow("sd 1,1,1 (this run)", 1.5, 12.0, 1.2),), chosen="the verdict", run_label="sd 1,1,1",
    run_predicted=1.2, nodes=12, depth_rates=(0.5, 0.25, 0.125))
CARD = speed_view.HeadCard(temperature=0.8, prompts=24, new_tokens=64, rows=(
    speed_view.CardRow("the head before", (0.1, 0.2, 0.3, 0.4), chain=1.25, tree=2.0),
    speed_view.CardRow("this head", (0.5, 0.6, 0.7, 0.8, 0.9), chain=1.75, tree=2.5)))


def test_the_acceptance_per_depth_is_shown_after_the_verdict_and_says_whose_it_is():
    text = speed_view.summary_markdown(FACTS)
    assert "| depth | 1 | 2 | 3 |\n|---|---|---|---|\n| A(1, d) | 0.500 | 0.250 | 0.125 |" in text
    assert "Acceptance per depth the chooser used (a chain's A(1, d), from this run's own p and q):" in text
    assert text.index("the verdict") < text.index("| A(1, d) |") < text.index("**This run") < text.index("| shape |")
    calibrated = speed_view.summary_markdown(replace(FACTS, nodes=0))
    assert "from the calibration's run, not this run's):" in calibrated and "this run's own p and q" not in calibrated
    assert "| A(1, d) |" not in speed_view.summary_markdown(replace(FACTS, depth_rates=()))


def test_without_a_card_there_is_no_card_section():
    text = speed_view.summary_markdown(FACTS)
    assert "card" not in text and "this head" not in text and "4,2,2,1" not in text


def test_the_card_shows_the_head_before_and_this_head_to_depth_4():
    text = speed_view.summary_markdown(replace(FACTS, card=CARD))
    assert ("held-out acceptance on 24 prompts x 64 new tokens, T = 0.8 (the nearest to this run's); E[tokens/step] "
            "of a chain of 3 and of the (4,2,2,1) tree:") in text
    table = ("| head | A(1, 1) | A(1, 2) | A(1, 3) | A(1, 4) | chain 3 | 4,2,2,1 |\n"
             "|---|---|---|---|---|---|---|\n"
             "| the head before | 0.100 | 0.200 | 0.300 | 0.400 | 1.25 | 2.00 |\n"
             "| this head | 0.500 | 0.600 | 0.700 | 0.800 | 1.75 | 2.50 |")  # depth 5 left out: the card is to 4
    assert table in text
    assert text.index("| A(1, d) |") < text.index("| this head |") < text.index("**This run")


def test_a_card_with_fewer_depths_shows_dashes():
    short = replace(CARD, rows=(speed_view.CardRow("this head", (0.5, 0.25), chain=1.5, tree=2.0),))
    text = speed_view.summary_markdown(replace(FACTS, card=short))
    assert "| this head | 0.500 | 0.250 | — | — | 1.50 | 2.00 |" in text
