"""One place for each idea (ARCHITECTURE.md, "Style"): a message or a parser written once, read everywhere.

Each check reads the product code as text (every .py file of decoding/, ui/, viz/, bench/ and app.py): a second
copy of the idea, the way the "unknown verifier" message had ten and the shape parsers three with different
rules, fails it.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = [p for d in ("decoding", "ui", "viz", "bench") for p in (ROOT / d).rglob("*.py")] + [ROOT / "app.py"]


def places(pattern: str) -> list[str]:
    """'file:line' of every product line matching `pattern`."""
    found = []
    for path in PRODUCT:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(pattern, line):
                found.append(f"{path.relative_to(ROOT)}:{number}")
    return found


def test_the_unknown_verifier_message_is_written_once():
    assert [p.split(":")[0] for p in places(r"unknown verifier")] == ["decoding/verify/registry.py"]


def test_one_tree_shape_parser():
    """Only run/config.parse_branching turns '3,2,2' into levels; every caller names its field through it."""
    assert [p.split(":")[0] for p in places(r"comma-separated positive integers")] == ["decoding/run/config.py"]
    parsers = places(r"^def parse_(shape|branching|levels|tree)\b")
    assert [p.split(":")[0] for p in parsers] == ["decoding/run/config.py"]


def test_the_page_reads_its_defaults_from_decode_config():
    """The page's token budget, temperature and seed are DecodeConfig's (64 in the config and 48 on the page was
    one idea written twice)."""
    from decoding.run.config import DecodeConfig
    from ui.session import Controls

    page, config = Controls(), DecodeConfig()
    assert page.config() == config
