"""Few-row product methods (models/few_rows.py): each computes the stock product up to float rounding, so p
stays the target's; a plan on the lean target gives transformers' logits; the plan chooser keeps stock on a tie."""

from __future__ import annotations

import pytest
import torch

from decoding.models import few_rows, lean_target
from decoding.models.few_rows import PRODUCTS, PlannedProjection, apply_plan
from decoding.models.packed_linear import PackedProjection, packed_products, use_packed_projection
from decoding.speed import products
from tests.conftest import save_tiny_llama
from tests.models.test_lean_draft import WORDS, assert_same_forward


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from transformers import AutoModelForCausalLM

    folder = save_tiny_llama(tmp_path_factory.mktemp("tiny-few-rows") / "m", WORDS, seed=5)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    use_packed_projection(model)
    return model


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("method", sorted(PRODUCTS))
def test_every_method_is_the_stock_product(method, bias):
    torch.manual_seed(0)
    linear = torch.nn.Linear(48, 1000, bias=bias)
    proj = PlannedProjection(PackedProjection(linear), {n: method for n in range(1, 9)})
    for rows in range(1, 9):
        x = torch.randn(1, rows, 48)  # [1, rows, in]
        with torch.inference_mode():
            got = proj(x)
            want = torch.nn.functional.linear(x, linear.weight, linear.bias)
        assert got.shape == want.shape == (1, rows, 1000)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("method", ["numpy", "split"])
def test_a_planned_lean_target_gives_the_targets_logits(tiny, method):
    lean = lean_target.LeanFloatLlama(tiny)
    apply_plan(lean, {n: method for n in range(1, 9)})
    assert isinstance(lean.head, PlannedProjection)
    assert_same_forward(tiny, lean, seed=2, tol=1e-5, during=packed_products)
    assert not isinstance(tiny.lm_head.forward, PlannedProjection)  # transformers' own head is left alone
    apply_plan(lean, {})
    assert lean.head is tiny.lm_head.forward  # an empty plan restores the stock head


def test_an_unknown_method_is_refused():
    with pytest.raises(ValueError, match="unknown product method"):
        PlannedProjection(PackedProjection(torch.nn.Linear(4, 4)), {1: "magic"})


def test_the_plan_takes_a_method_only_when_it_clearly_beats_stock():
    measured = {1: {"stock": 12.6, "numpy": 4.6, "split": 12.0}, 2: {"stock": 29.5, "numpy": 28.0, "split": 40.0},
                3: {"stock": 44.3, "numpy": 11.1, "split": 30.0}, 4: {"stock": 10.0, "numpy": 11.0, "split": 12.0}}
    assert products.choose(measured) == {1: "numpy", 3: "numpy"}  # 2: numpy within the 10 % margin


def test_measuring_times_every_method_on_the_real_head(tiny):
    lean = lean_target.LeanFloatLlama(tiny)
    measured = products.measure(lean, rows=(1, 3), repeats=1)
    assert set(measured) == {1, 3} and all(set(v) == set(few_rows.PRODUCTS) for v in measured.values())
    assert all(ms > 0 for v in measured.values() for ms in v.values())
