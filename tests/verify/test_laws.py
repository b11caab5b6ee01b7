"""Candidate laws as objects: one per name, each consistent with its own enumeration."""

from __future__ import annotations

import math
from collections import Counter

import pytest
import torch

from decoding.verify import laws
from decoding.verify.registry import VERIFIERS

Q = torch.tensor([0.1, 0.4, 0.2, 0.3], dtype=torch.float64)  # every token drawable: count == tuples walked


def test_one_law_per_name_and_the_name_is_the_string():
    assert laws.LAWS == ("iid", "without_replacement", "hub", "topk_plus_random", "topk", "any", "gumbel")
    for name in laws.LAWS:
        law = laws.get(name)
        assert str(law) == name and laws.get(law) is law
    with pytest.raises(ValueError, match="unknown candidate law 'nope'"):
        laws.get("nope")
    assert all(isinstance(entry.law, laws.Law) for entry in VERIFIERS.values())


@pytest.mark.parametrize("name", laws.LAWS)
def test_count_enumeration_and_sampling_agree(name):
    law = laws.get(name)
    for k in range(1, (law.max_k or 3) + 1):
        tuples = dict(law.enumerate(Q, k))
        assert sum(tuples.values()) == pytest.approx(1.0, abs=1e-12)
        expected = {"iid": 4**k, "without_replacement": math.perm(4, k)}.get(name, len(tuples))
        assert len(tuples) == expected and law.count(4, k) >= len(tuples)
        g = torch.Generator().manual_seed(k)
        drawn = Counter(tuple(law.sample(Q, k, g)) for _ in range(2000))
        assert set(drawn) <= set(tuples)  # every sample is a tuple the law can produce
        for xs, n in drawn.items():
            assert n / 2000 == pytest.approx(tuples[xs], abs=0.05), (name, k, xs)


def test_check_k_refuses_what_a_law_cannot_draw():
    with pytest.raises(ValueError, match="k <= 2"):
        laws.get("hub").check_k(Q, 3)
    with pytest.raises(ValueError, match="distinct tokens"):
        laws.get("without_replacement").check_k(Q, 5)
    laws.get("iid").check_k(Q, 5)  # repeats allowed
    assert laws.get("iid").iid_compatible and laws.get("any").iid_compatible
    assert not any(laws.get(n).iid_compatible for n in ("without_replacement", "hub", "topk_plus_random", "topk"))


def test_top_order_is_the_full_sort_by_decreasing_q_then_id():
    """top_order takes topk's m + 1 and scans q only for a tie across the m-th place: every case (ties inside the
    top m, across its edge, zeros, m past V) against the plain sort by (-q, id)."""
    generator = torch.Generator().manual_seed(0)
    for size in range(1, 30):
        for levels in (1, 2, 3, 6):
            q = torch.randint(0, levels, (size,), generator=generator).double()  # few values: many ties
            q = q / q.sum() if q.sum() > 0 else q
            plain = sorted(range(size), key=lambda i: (-float(q[i]), i))
            for m in {None, 0, 1, 2, 3, size - 1, size, size + 2} - {-1}:
                assert laws.top_order(q, m) == plain[: size if m is None else m], (q.tolist(), m)
