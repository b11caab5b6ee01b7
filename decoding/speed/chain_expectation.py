"""A built-in pair's shipped chain acceptance as an engine record's expectation (docs/verifiers.md §22).

assets/speed/acceptance.json holds, per built-in pair and temperature, A(1, d): the exact acceptance of one draft at
depth d of a chain, averaged over the nodes chains of 4 reached on the calibration prompts (pair_acceptance.py). That
is P(accept position d | reached) for the pair, the number an engine record's per-position rate estimates when the
engine ran that pair's models. Read for display only, so the entry's key (models, prompts, head digest) is not
matched against a loaded pair: the shipped numbers are shown as shipped, with where they came from.
"""

from __future__ import annotations

import json

from decoding.speed.pair_acceptance import SHIPPED, tables_from_dict


def shipped_pairs() -> dict[str, tuple[float, ...]]:
    """{pair kind: the temperatures it was measured at} in the shipped file (empty when it cannot be read)."""
    try:
        pairs = json.loads(SHIPPED.read_text(encoding="utf-8"))["pairs"]
        return {kind: tuple(sorted(float(t) for t in entry["acceptance"])) for kind, entry in pairs.items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def chain_alphas(pair_kind: str, temperature: float) -> tuple[tuple[float, ...], str]:
    """(A(1, d) for d = 1..4, where from in words) of a built-in pair at a temperature it was measured at."""
    known = shipped_pairs()
    if pair_kind not in known:
        raise ValueError(f"no shipped acceptance for pair {pair_kind!r}; shipped: {', '.join(known) or 'none'}")
    if float(temperature) not in known[pair_kind]:
        raise ValueError(f"pair {pair_kind!r} was measured at T = {', '.join(map(str, known[pair_kind]))}, "
                         f"not {temperature}")
    entry = json.loads(SHIPPED.read_text(encoding="utf-8"))["pairs"][pair_kind]
    table = tables_from_dict(entry["acceptance"])[float(temperature)]
    return table.rates[1], (f"{pair_kind} pair's shipped chain acceptance at T = {temperature:g} (exact per node, "
                            f"{table.nodes} nodes of chains of 4 on the calibration prompts)")
