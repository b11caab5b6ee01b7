"""khisti_lazy.residual_token: the residual token drawn by rejection from p, without building norm((p - r)_+).

Oracle: the built residual (the law the eager path draws from). Seeded Monte Carlo, N = 20000 draws on laws where
r comes from the 1-D integral (support^k above the enumeration limit) and from enumeration: every token's
frequency within 5 binomial standard errors + 0.002 of the residual law (a correct sampler fails with probability
< 1e-4 over the whole test; the broken variants below move some token by >= 0.03). Also: a residual with almost no
mass (p = r nearly) gives up (None) rather than looping, and the caller's fallback is the built residual.
"""

from __future__ import annotations

import math

import pytest
import torch

from decoding.verify.rules.fast import khisti_lazy

F64 = torch.float64
N = 20_000


def _laws(seed: int, V: int, scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return (torch.softmax(torch.randn(V, generator=g, dtype=F64) * scale, 0),
            torch.softmax(torch.randn(V, generator=g, dtype=F64) * scale, 0))


def _node(p: torch.Tensor, q: torch.Tensor, k: int) -> khisti_lazy._Node:
    return khisti_lazy._Node(p, q, k)


def _frequencies(node: khisti_lazy._Node, sampler, seed: int) -> tuple[torch.Tensor, int]:
    """[V] empirical law of sampler's tokens (the built residual after a miss, as verify does) and the misses."""
    generator = torch.Generator().manual_seed(seed)
    counts = torch.zeros(node.p.shape[0], dtype=F64)
    misses = 0
    for _ in range(N):
        token = sampler(node.p, node.law, generator)
        if token is None:
            misses += 1
            token = int(torch.multinomial(node.residual(), 1, generator=generator))
        counts[token] += 1
    return counts / N, misses


def _assert_close_to_residual(node: khisti_lazy._Node, freq: torch.Tensor) -> None:
    law = node.residual()  # [V]
    tolerance = 5 * torch.sqrt(law * (1 - law) / N) + 0.002
    worst = int(torch.argmax((freq - law).abs() - tolerance))
    assert bool(((freq - law).abs() <= tolerance).all()), (worst, float(freq[worst]), float(law[worst]))


CASES = {
    "integral, k = 4, V = 60": (lambda: _laws(1, 60, 1.0), 4, "integral"),
    "integral, peaked, k = 8, V = 40": (lambda: _laws(2, 40, 2.5), 8, "integral"),
    "enumeration, k = 2, V = 30": (lambda: _laws(3, 30, 1.5), 2, "enumerate"),
}


@pytest.mark.parametrize("case", CASES)
def test_the_drawn_token_has_the_built_residuals_law(case):
    laws, k, route = CASES[case]
    node = _node(*laws(), k)
    assert (node.law._binned is not None) == (route == "integral")  # the route the case is named after
    alpha = float(torch.minimum(node.p, node.law.full()).sum())
    assert 0.05 < alpha < 0.95  # a residual worth sampling, and proposals that are kept and that miss
    freq, misses = _frequencies(node, khisti_lazy.residual_token, seed=7)
    _assert_close_to_residual(node, freq)
    assert misses < N * (alpha ** khisti_lazy.TRIES) * 3 + 20  # the fallback is the exception


def _broken_keeps_without_dividing_by_p(p, law, generator, tries=khisti_lazy.TRIES):
    """Keeps x with probability (p - r)_+ instead of (p - r)_+ / p: tokens are then weighted by p once more."""
    cdf = torch.cumsum(p, 0)
    for _ in range(tries):
        x = min(int(torch.searchsorted(cdf, torch.rand((), generator=generator, dtype=F64) * cdf[-1], right=True)),
                p.shape[0] - 1)
        if float(torch.rand((), generator=generator, dtype=F64)) < float(p[x]) - law.at(x):
            return x
    return None


def _broken_proposes_uniformly(p, law, generator, tries=khisti_lazy.TRIES):
    """Proposes x uniformly (the keep test still assumes proposals from p)."""
    for _ in range(tries):
        x = int(torch.randint(p.shape[0], (), generator=generator))
        p_x = float(p[x])
        if float(torch.rand((), generator=generator, dtype=F64)) * p_x < p_x - law.at(x):
            return x
    return None


@pytest.mark.parametrize("broken", [_broken_keeps_without_dividing_by_p, _broken_proposes_uniformly])
def test_broken_samplers_fail_the_same_check(broken):
    laws, k, _ = CASES["integral, k = 4, V = 60"]
    node = _node(*laws(), k)
    freq, _ = _frequencies(node, broken, seed=7)
    with pytest.raises(AssertionError):
        _assert_close_to_residual(node, freq)


def test_a_residual_with_no_mass_gives_up_instead_of_looping():
    """p = q: r = p exactly where k E[w/(w+S)] = w = 1 for every token, so (p - r)_+ is ~0 everywhere."""
    q = torch.softmax(torch.randn(50, generator=torch.Generator().manual_seed(4), dtype=F64), 0)
    node = _node(q, q, 3)
    assert float(node.law.positive_part(q).sum()) < 1e-12
    assert khisti_lazy.residual_token(node.p, node.law, torch.Generator().manual_seed(0)) is None
    assert math.isclose(float(node.residual().sum()), 1.0)  # the caller's fallback: the built residual (p)
