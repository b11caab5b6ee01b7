"""rrs_wor's fast twin (rules/fast/rrs_wor_rows.py) shows LazyRows (verdict.py), built only when read. Oracles:
every row read late (after the chain ended, in any order) is bit for bit the row read the moment its Update was
yielded, and both equal the textbook chain (rules/rrs_wor.py: the recurrence with its own [V] rows, a residual
and a draft law per rejected test, nothing deferred), on laws that exercise the uniform fallback (k above q's
support), repeated candidates, q = 0 tokens and a residual that runs out of mass."""

from __future__ import annotations

import pytest
import torch

from decoding.verify.registry import VERIFIERS
from decoding.verify.rules import rrs_wor
from decoding.verify.rules.common import Test, Update, prepare
from decoding.verify.rules.fast import rrs_wor_rows
from decoding.verify.verdict import LazyRow, ResidualUpdate

F64 = torch.float64


def _textbook(p: torch.Tensor, q: torch.Tensor, xs: list[int]) -> tuple[list[float], list[tuple]]:
    """(thresholds, [(r, d)] per rejected test) of the textbook chain (rules/rrs_wor.py, docs/verifiers.md §4):
    every row computed at once, nothing deferred."""
    thresholds, rows = [], []
    for event in rrs_wor.chain(p, q, xs):
        if isinstance(event, Test):
            thresholds.append(event.threshold)
        elif isinstance(event, Update):
            rows.append((event.residual, event.draft))
    return thresholds, rows


def _cases() -> list[tuple[str, torch.Tensor, torch.Tensor, list[int]]]:
    g = torch.Generator().manual_seed(7)
    cases = []
    for seed in range(6):  # far-apart laws: most tests reject
        p = torch.softmax(4 * torch.randn(30, generator=g, dtype=F64), 0)
        q = torch.softmax(4 * torch.randn(30, generator=g, dtype=F64), 0)
        cases.append((f"far{seed}", p, q, VERIFIERS["rrs_wor"].sample(q, 8, g)))
    q = torch.tensor([0.5, 0.3, 0.2, 0, 0, 0, 0, 0, 0, 0], dtype=F64)  # support 3 < k: the uniform fallback
    p = torch.softmax(torch.randn(10, generator=g, dtype=F64), 0)
    cases.append(("fallback", p, q, VERIFIERS["rrs_wor"].sample(q, 7, g)))
    q0 = torch.softmax(torch.randn(12, generator=g, dtype=F64), 0)
    q0[[2, 5, 9]] = 0.0  # q = 0 tokens (p > 0 there), a repeated candidate and a q = 0 candidate
    cases.append(("repeats", torch.softmax(torch.randn(12, generator=g, dtype=F64), 0), q0 / q0.sum(),
                  [1, 4, 1, 5, 7, 4, 0]))
    same = torch.softmax(torch.randn(12, generator=g, dtype=F64), 0)  # p = q: the first update has no mass
    cases.append(("vanishing", same, same.clone(), [3, 1, 4]))
    return cases


def _events(p, q, xs, read_now: bool) -> tuple[list[Test], list[Update], list[torch.Tensor]]:
    tests, updates, now = [], [], []
    for event in rrs_wor_rows.chain(*prepare(p, q, xs)):
        if isinstance(event, Test):
            tests.append(event)
        elif isinstance(event, Update):
            updates.append(event)
            if read_now:
                now.append((event.residual.get(), event.draft.get()))
    return tests, updates, now


@pytest.mark.parametrize("name, p, q, xs", _cases(), ids=[c[0] for c in _cases()])
def test_rows_read_late_in_any_order_are_the_rows_read_at_once(name, p, q, xs):
    _, updates_now, now = _events(p, q, xs, read_now=True)
    _, updates, _ = _events(p, q, xs, read_now=False)
    assert len(updates) == len(now) == len(xs)
    for i in reversed(range(len(updates))):  # late and backwards: a replay must restart, not go on
        assert torch.equal(updates[i].residual.get(), now[i][0]), f"residual row {i}"
        assert torch.equal(updates[i].draft.get(), now[i][1]), f"draft row {i}"
    for i in (1, 0, len(updates) - 1):  # read again: the same tensors
        assert updates[i].residual.get() is updates[i].residual.get()


@pytest.mark.parametrize("name, p, q, xs", _cases(), ids=[c[0] for c in _cases()])
def test_rows_and_thresholds_are_the_textbook_chain(name, p, q, xs):
    tests, updates, _ = _events(p, q, xs, read_now=False)
    thresholds, rows = _textbook(*prepare(p, q, xs))
    assert [t.threshold for t in tests] == pytest.approx(thresholds, rel=1e-12, abs=1e-15)
    for update, (r, d) in zip(updates, rows, strict=True):
        torch.testing.assert_close(update.residual.get(), r, rtol=1e-11, atol=1e-15)
        torch.testing.assert_close(update.draft.get(), d, rtol=1e-11, atol=1e-15)


def test_a_verdict_reads_its_lazy_rows_as_tensors():
    """ResidualUpdate.residual / .draft are [V] tensors whether the rule deferred them or not."""
    row = torch.tensor([0.25, 0.75], dtype=F64)
    built = []
    lazy = LazyRow(lambda: built.append(1) or row.clone())
    update = ResidualUpdate(0, lazy, LazyRow.built(row))
    assert not built  # nothing built before the first read
    assert torch.equal(update.residual, row) and update.draft is row
    assert update.residual is update.residual and built == [1]  # built once
    assert ResidualUpdate(1, row).residual is row and ResidualUpdate(1, row).draft is None


def test_the_last_update_is_the_final_law():
    p, q, xs = _cases()[0][1:]
    verdict = VERIFIERS["rrs_wor"].verify(p, q, xs, torch.Generator().manual_seed(0))
    assert verdict.residual is not None, "far laws: every test rejects at this seed"
    assert torch.equal(verdict.residual, verdict.updates[-1].residual)
