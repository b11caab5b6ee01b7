"""The packed few-row product (models/packed_linear.py) is F.linear up to float rounding, for every row count."""

import pytest
import torch

from decoding.models.lean import packed_linear as pl

pytestmark = pytest.mark.skipif(not pl.mkl_packing_available(), reason="this torch build has no MKL packing")


def _linear(bias: bool, out_f: int = 48, in_f: int = 40) -> torch.nn.Linear:
    torch.manual_seed(0)
    return torch.nn.Linear(in_f, out_f, bias=bias)


@pytest.mark.parametrize("bias", [False, True])
def test_packed_product_equals_linear_for_every_row_count(bias: bool) -> None:
    linear = _linear(bias)
    packed = pl.PackedProjection(linear)
    for rows in range(1, pl.BUCKETS[-1] + 3):
        x = torch.randn(1, rows, linear.in_features)  # [1, rows, in] as a model passes it
        with torch.inference_mode(), pl.packed_products():
            got = packed(x)  # [1, rows, out]
        want = torch.nn.functional.linear(x, linear.weight, linear.bias)
        assert got.shape == want.shape
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_packing_is_used_only_inside_the_block_and_for_bucketed_rows() -> None:
    packed = pl.PackedProjection(_linear(False))
    x = torch.randn(5, 40)
    with torch.inference_mode():
        packed(x)
        assert not packed.packs  # outside packed_products(): plain F.linear
        with pl.packed_products():
            packed(x[:1])
            packed(x[:3])
            assert not packed.packs  # one to three rows: F.linear (cheaper there)
            packed(x)
    assert list(packed.packs) == [pl.bucket_for(5)] == [8]


def test_at_most_max_packs_are_kept_least_recently_used_out() -> None:
    packed = pl.PackedProjection(_linear(True))
    with torch.inference_mode(), pl.packed_products():
        for rows in (4, 5, 9, 4, 17):  # buckets 4, 8, 16, 4 (reused), 32
            packed(torch.randn(rows, 40))
    assert list(packed.packs) == [16, 4, 32][-pl.MAX_PACKS:]


def test_use_packed_projection_routes_float_linears_of_a_model() -> None:
    model = torch.nn.Sequential(_linear(True), torch.nn.ReLU(), _linear(False, out_f=7, in_f=48))
    x = torch.randn(6, 40)
    want = model(x)
    pl.use_packed_projection(model)
    pl.use_packed_projection(model)  # idempotent
    with torch.inference_mode(), pl.packed_products():
        got = model(x)
    assert all(isinstance(m.forward, pl.PackedProjection) for m in model if isinstance(m, torch.nn.Linear))
    assert all(m.forward.packs for m in model if isinstance(m, torch.nn.Linear))
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_a_deepcopied_model_gets_its_own_weights_and_no_packs() -> None:
    import copy

    model = torch.nn.Sequential(_linear(True))
    pl.use_packed_projection(model)
    with torch.inference_mode(), pl.packed_products():
        model(torch.randn(3, 40))
    clone = copy.deepcopy(model)  # raised on the opaque packed tensors before __deepcopy__
    assert clone[0].forward.weight is clone[0].weight is not model[0].weight
    assert not clone[0].forward.packs
    with torch.no_grad():
        clone[0].weight.add_(1.0)  # the clone's forward reads the clone's weight
    x = torch.randn(3, 40)
    with torch.inference_mode(), pl.packed_products():
        torch.testing.assert_close(clone(x), torch.nn.functional.linear(x, clone[0].weight, clone[0].bias))
