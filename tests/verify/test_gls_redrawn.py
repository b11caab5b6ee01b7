"""gls's verify when the drafts are not its exponentials' (docs/verifiers.md §17.2): Y comes from exponentials
redrawn GIVEN the drafts (gumbel_race.exponentials_given, O(K V)) instead of from its computed exact law. Those
exponentials' races are won by the drafts, and Y so drawn follows the exact law of Y given the drafts (χ² against
`conditional`'s law); the broken variant that ignores the drafts (fresh exponentials) fails the same check."""

from __future__ import annotations

import pytest
import torch
from scipy.stats import chisquare

from decoding.verify.races import gumbel as gumbel_race
from decoding.verify.rules import gls

F64 = torch.float64
DRAWS = 6000


def _pairs():
    g = torch.Generator().manual_seed(7)
    out = []
    for _ in range(3):
        p = torch.rand(5, generator=g, dtype=F64) ** 2
        q = torch.rand(5, generator=g, dtype=F64) ** 2
        out.append((p / p.sum(), q / q.sum()))
    q = torch.tensor([0.5, 0.3, 0.2, 0.0, 0.0], dtype=F64)  # tokens no draft can be
    out.append((torch.tensor([0.1, 0.2, 0.3, 0.25, 0.15], dtype=F64), q))
    return out


CASES = [(0, [3]), (1, [0, 4]), (2, [2, 2]), (3, [1, 0, 2]), (0, [4, 1, 4])]


@pytest.mark.parametrize("pair,xs", CASES)
def test_the_redrawn_exponentials_are_won_by_the_drafts(pair, xs):
    p, q = _pairs()[pair]
    g = torch.Generator().manual_seed(3)
    for _ in range(50):
        assert gumbel_race.drafts(gumbel_race.exponentials_given(g, q, xs), q) == xs


def _frequencies(sample, V: int) -> torch.Tensor:
    counts = torch.zeros(V, dtype=F64)
    for _ in range(DRAWS):
        counts[sample()] += 1
    return counts


def _pvalue(counts: torch.Tensor, law: torch.Tensor) -> float:
    keep = law > 0
    assert float(counts[~keep].sum()) == 0  # never a token the law cannot give
    expected = law[keep] * float(counts.sum())
    return float(chisquare(counts[keep].numpy(), expected.numpy() * float(counts[keep].sum()) / float(expected.sum()))
                 .pvalue)


@pytest.mark.parametrize("pair,xs", CASES)
def test_verify_follows_the_exact_law_of_y_given_the_drafts(pair, xs):
    p, q = _pairs()[pair]
    g = torch.Generator().manual_seed(11)
    law = gls._law_of_y(p, q, xs)  # [V] exact, the 1-D integral
    counts = _frequencies(lambda: gls.verify(p, q, xs, g).token, p.shape[0])
    assert _pvalue(counts, law) > 1e-4


def test_fresh_exponentials_ignoring_the_drafts_fail():
    """Broken variant: Y from exponentials independent of the drafts (Y ~ p, docs §17.5 pitfall 1's law): its
    frequencies miss the law of Y given the drafts."""
    p, q = _pairs()[1]
    xs = [0, 4]
    g = torch.Generator().manual_seed(11)
    law = gls._law_of_y(p, q, xs)
    counts = _frequencies(lambda: gumbel_race.target(gumbel_race.exponentials(g, len(xs), p.shape[0]), p), 5)
    assert float((law - p).abs().sum()) > 0.1  # the drafts do inform Y
    assert _pvalue(counts, law) < 1e-6


def test_rows_one_at_a_time_are_the_same_exponentials():
    """verify reads the node's exponentials a row at a time; the keyed run's drafting drew them at once: the same
    numbers, or the keyed route would miss its own drafts."""
    for k, V in ((3, 5), (8, 49152)):
        at_once = gumbel_race.exponentials(torch.Generator().manual_seed(9), k, V)
        g = torch.Generator().manual_seed(9)
        assert torch.equal(at_once, torch.cat([gumbel_race.exponentials(g, 1, V) for _ in range(k)]))


@pytest.mark.parametrize("pair,xs", CASES[:3])
def test_the_reference_redraw_follows_the_law_too(pair, xs):
    """exponentials_given (K x V draws, the derivation written out) gives the same law as target_given."""
    p, q = _pairs()[pair]
    g = torch.Generator().manual_seed(13)
    counts = _frequencies(lambda: gumbel_race.target(gumbel_race.exponentials_given(g, q, xs), p), 5)
    assert _pvalue(counts, gls._law_of_y(p, q, xs)) > 1e-4


def test_drafted_tokens_drawn_like_the_others_fail():
    """Broken variant of target_given: a drafted token's row minimum drawn by the undrafted formula (its drafting
    rows' E = q_j M_k ignored): Y misses its law given the drafts."""
    p, q = _pairs()[1]
    xs = [0, 4]
    g = torch.Generator().manual_seed(17)

    def broken() -> int:
        M = gumbel_race.exponentials(g, len(xs), 1)[:, 0]
        e = gumbel_race.exponentials(g, 1, 5)[0]
        S = torch.cumsum(torch.sort(M).values, 0)
        z = e + q * S[0]
        for i in range(2, len(xs) + 1):
            z = torch.minimum(z, (e + q * S[i - 1]) / i)
        return int(torch.argmin(z / p))

    assert _pvalue(_frequencies(broken, 5), gls._law_of_y(p, q, xs)) < 1e-6


@pytest.mark.parametrize("V,K,seed", [(5, 2, 0), (6, 3, 1), (7, 4, 2), (6, 5, 3), (300, 8, 4), (49152, 8, 5)])
def test_the_regrouped_joint_equals_the_direct_sum(V, K, seed):
    """joint's K >= 2 route (`_joint_segments`, one product per chunk) against the direct sum (`joint_reference`):
    the same quadrature, regrouped, so equal to rounding; drafts repeated and tokens with q = 0 included."""
    g = torch.Generator().manual_seed(seed)
    p = torch.softmax(torch.randn(V, generator=g, dtype=F64) * 2, 0)
    q = torch.softmax(torch.randn(V, generator=g, dtype=F64) * 2, 0)
    q[0] = 0.0
    q = q / q.sum()
    xs = [int(x) for x in torch.multinomial(q, K, replacement=True, generator=g)]
    xs[-1] = xs[0]  # a repeated draft
    fast, direct = gumbel_race.joint(p, q, xs), gumbel_race.joint_reference(p, q, xs)
    assert float((fast - direct).abs().max()) <= 1e-12 * float(direct.abs().max())
