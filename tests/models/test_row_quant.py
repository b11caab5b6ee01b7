"""row_quant.py: a row's int8 product is the same bits alone or in any batch (the guard row fixes the op's
activation scale), and it is no worse an approximation of the float product than one scale per batch."""

from __future__ import annotations

import torch

from decoding.models.lean.row_quant import PerRowLinear, int8_linears, per_row, per_row_activations


def _packed_product(in_features: int = 96, out_features: int = 40, seed: int = 0):
    torch.manual_seed(seed)
    linear = torch.nn.Linear(in_features, out_features, bias=False)
    packed = int8_linears(torch.nn.Sequential(linear))[0]._packed_params._packed_params
    return linear.weight.detach(), lambda x: torch.ops.quantized.linear_dynamic(x, packed, reduce_range=True)


def _rows(n: int, width: int = 96, seed: int = 1) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(1, n, width, generator=g) * torch.rand(1, n, 1, generator=g) * 8  # [1, n, in]: mixed scales


def test_a_row_gives_the_same_bits_alone_and_in_any_batch() -> None:
    _, product = _packed_product()
    x = _rows(37)  # [1, 37, in]
    batched = per_row(product, x)  # [1, 37, out]
    alone = torch.cat([per_row(product, x[:, i: i + 1]) for i in range(37)], dim=1)
    assert torch.equal(batched, alone)
    reordered = per_row(product, x[:, [5, 0, 36]])  # any companions, any order
    assert torch.equal(reordered, batched[:, [5, 0, 36]])
    assert not torch.equal(product(x[0]), torch.cat([product(x[0, i: i + 1]) for i in range(37)]))  # the old way


def test_per_row_scales_approximate_the_float_product_no_worse() -> None:
    weight, product = _packed_product()
    x = _rows(64)[0]  # [64, in]
    exact = x @ weight.T  # [64, out]
    err_row = float((per_row(product, x) - exact).norm() / exact.norm())
    err_batch = float((product(x) - exact).norm() / exact.norm())
    assert err_row <= err_batch and err_row < 0.05


def test_an_all_zero_row_stays_zero_and_modules_are_wrapped() -> None:
    _, product = _packed_product()
    x = torch.zeros(2, 96)
    x[1, 3] = 2.0
    out = per_row(product, x)  # [2, out]
    assert torch.equal(out[0], torch.zeros_like(out[0])) and bool(out[1].abs().sum() > 0)
    model = int8_linears(torch.nn.Sequential(torch.nn.Linear(96, 8), torch.nn.ReLU(), torch.nn.Linear(8, 4)))
    wrapped = per_row_activations(model)
    assert isinstance(wrapped[0], PerRowLinear) and isinstance(wrapped[2], PerRowLinear)
    y = _rows(5)[0]
    assert torch.equal(wrapped(y)[2:3], wrapped(y[2:3]))
