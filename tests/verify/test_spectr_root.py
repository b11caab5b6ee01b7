"""spectr's rho* by bucket sums and an in-bucket solve (rules/spectr.py) at vocabulary sizes where buckets
hold many tokens. Oracle: plain bisection of f on [1, k] with beta summed directly (rho_by_bisection), and
the definition itself: f(rho) <= 0 at the rho used (lossless), f > 0 just below it (not needlessly large)."""

from __future__ import annotations

import pytest
import torch

from decoding.verify.rules import spectr
from tests.verifier_oracles import rho_by_bisection

F64 = torch.float64


def _f(p: torch.Tensor, q: torch.Tensor, rho: float, k: int) -> float:
    b = spectr.beta(p, q, rho)
    return 1.0 - (1.0 - b) ** k - rho * b


def _laws(V: int, scale: float, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    p = torch.softmax(scale * torch.randn(V, generator=g, dtype=F64), 0)
    q = torch.softmax(scale * torch.randn(V, generator=g, dtype=F64), 0)
    return p, q


@pytest.mark.parametrize("k", [2, 3, 8])
@pytest.mark.parametrize("scale", [0.2, 1.0, 3.0])
def test_rho_is_the_bisection_root_on_large_vocabularies(k, scale):
    for seed in range(3):
        p, q = _laws(6000, scale, seed)
        rho = spectr.division_factor(p, q, k)
        assert rho == pytest.approx(rho_by_bisection(p, q, k), rel=1e-12)
        assert _f(p, q, rho, k) <= 0.0, "rho below rho*: not lossless"
        if rho > 1.0:
            assert _f(p, q, rho * (1 - 1e-9), k) > 0.0, "rho far above rho*"


def test_rho_at_the_edges_of_its_range():
    p, q = _laws(500, 1.0, 0)
    assert spectr.division_factor(p, q.clone(), 1) == 1.0
    assert spectr.division_factor(p, p.clone(), 4) == 1.0  # p = q: plain SD per candidate
    disjoint_p, disjoint_q = torch.zeros(6, dtype=F64), torch.zeros(6, dtype=F64)
    disjoint_p[:3], disjoint_q[3:] = 1 / 3, 1 / 3
    assert spectr.division_factor(disjoint_p, disjoint_q, 3) == 1.0  # beta = 0: f = 0 everywhere
    point_q = torch.zeros(500, dtype=F64)
    point_q[7] = 1.0  # q a point mass that p mostly misses: the root sits at (or near) k
    rho = spectr.division_factor(p, point_q, 5)
    assert rho == pytest.approx(rho_by_bisection(p, point_q, 5), rel=1e-12)
    assert _f(p, point_q, rho, 5) <= 0.0
