"""The rows a chain rule writes its residuals into (rules/common.Rows): one block per node in `verify`,
recycled rows in `conditional`. Oracles: every shown update equals the textbook recurrence recomputed
from scratch (so no row was overwritten or shared), and the recycled `conditional` equals the exact law
of the same chain run with fresh rows, bit for bit."""

from __future__ import annotations

from functools import partial

import pytest
import torch

from decoding.verify.registry import VERIFIERS
from decoding.verify.rules import pointmass, rrs
from decoding.verify.rules.common import Rows, chain_law, prepare
from decoding.verify.rules.fast import rrs_wor_rows
from decoding.verify.sampling import residual

F64 = torch.float64
RULES = {"rrs": rrs, "rrs_wor": rrs_wor_rows, "pointmass": pointmass}  # the registry's chains


def test_rows_are_distinct_views_of_one_block_then_separate_tensors():
    like = torch.zeros(5, dtype=F64)
    rows = Rows(2, like)
    a, b, c = rows.take(), rows.take(), rows.take()
    assert a.shape == b.shape == c.shape == (5,) and a.dtype == F64
    assert a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()  # one block
    assert c.untyped_storage().data_ptr() != a.untyped_storage().data_ptr()  # past `count`: its own tensor
    a.fill_(1.0), b.fill_(2.0), c.fill_(3.0)
    assert a.tolist() == [1.0] * 5 and b.tolist() == [2.0] * 5 and c.tolist() == [3.0] * 5


def test_recycled_rows_reuse_the_oldest_row():
    rows = Rows.recycled(2, torch.zeros(4, dtype=F64))
    first, second, third = rows.take(), rows.take(), rows.take()
    assert third.data_ptr() == first.data_ptr() and second.data_ptr() != first.data_ptr()


def _far_pair(seed: int, V: int = 40) -> tuple[torch.Tensor, torch.Tensor]:
    """p and q far apart (tests mostly reject, so the chain makes many updates)."""
    g = torch.Generator().manual_seed(seed)
    p = torch.softmax(4 * torch.randn(V, generator=g, dtype=F64), 0)
    q = torch.softmax(4 * torch.randn(V, generator=g, dtype=F64), 0)
    return p, q


def _textbook_updates(key: str, p: torch.Tensor, q: torch.Tensor, xs: list[int]) -> list[tuple]:
    """(residual, draft) after each rejected test, recomputed from the definitions (docs/verifiers.md §3, §4, §8)."""
    out, r, d = [], p, q
    for i, x in enumerate(xs):
        if key == "rrs":
            r = residual(r, q)
            out.append((r, None))
        elif key == "rrs_wor":
            r = residual(r, d)
            undrawn = q.clone()
            undrawn[xs[: i + 1]] = 0.0
            d = undrawn / undrawn.sum()
            out.append((r, d))
        elif x not in xs[:i]:  # pointmass: p without the tested tokens
            kept = p.clone()
            kept[xs[: i + 1]] = 0.0
            out.append((kept / kept.sum(), None))
    return out


@pytest.mark.parametrize("key", sorted(RULES))
def test_every_shown_update_is_the_textbook_row(key):
    """Rows overwritten by a later update (a recycled or shared row in verify) fail here."""
    entry, seen = VERIFIERS[key], 0
    for seed in range(12):
        p, q = _far_pair(seed)
        g = torch.Generator().manual_seed(seed)
        xs = entry.sample(q, 6, g)
        verdict = entry.verify(p, q, xs, g)
        expected = _textbook_updates(key, p, q, xs)
        assert len(verdict.updates) <= len(expected)
        for update, (r, d) in zip(verdict.updates, expected[: len(verdict.updates)], strict=True):
            torch.testing.assert_close(update.residual, r, rtol=1e-11, atol=1e-15)
            if d is not None:  # rrs_wor tracks the undrawn mass by subtraction: ~1e-14 relative
                torch.testing.assert_close(update.draft, d, rtol=1e-11, atol=1e-15)
        seen += len(verdict.updates)
        if verdict.residual is not None and verdict.updates:
            torch.testing.assert_close(verdict.residual, verdict.updates[-1].residual, rtol=0, atol=0)
    assert seen >= 30, "the far pairs must exercise many updates"


@pytest.mark.parametrize("key", sorted(RULES))
def test_recycled_conditional_is_the_fresh_rows_law(key):
    rule = RULES[key]
    for seed in range(12):
        p, q = _far_pair(seed)
        xs = VERIFIERS[key].sample(q, 6, torch.Generator().manual_seed(seed))
        accept, res = VERIFIERS[key].conditional(p, q, xs)
        p_law, q_law, xs_int = prepare(p, q, xs)
        accept_fresh, res_fresh = chain_law(partial(rule.chain, keep=True)(p_law, q_law, xs_int), xs_int, p.shape[0])
        assert torch.equal(accept, accept_fresh) and torch.equal(res, res_fresh)
