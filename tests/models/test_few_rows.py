"""Few-row product methods (models/few_rows.py): each computes the stock product up to float rounding, so p
stays the target's; a plan on every product of the lean target gives transformers' logits; the plan chooser
keeps stock on a tie and extends its choice to every row count."""

from __future__ import annotations

import pytest
import torch

from decoding.models.lean import few_rows
from decoding.models.lean import target as lean_target
from decoding.models.lean.few_rows import PRODUCTS, PlannedProjection, apply_plan
from decoding.models.lean.packed_linear import PackedProjection, packed_products, use_packed_projection
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


@pytest.mark.parametrize("pad", [{}, {1: 4, 2: 4, 3: 6}], ids=["unpadded", "padded"])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("method", sorted(PRODUCTS))
def test_every_method_is_the_stock_product(method, bias, pad):
    """Also padded: 1 and 2 rows run as 4, 3 as 6 (zero rows added, their products dropped)."""
    if not PRODUCTS[method].available():
        pytest.skip(f"{method} does not run here")  # the native product without a C compiler
    torch.manual_seed(0)
    linear = torch.nn.Linear(48, 1000, bias=bias)
    proj = PlannedProjection(PackedProjection(linear), {n: method for n in range(1, 9)}, pad)
    for rows in range(1, 9):
        x = torch.randn(1, rows, 48)  # [1, rows, in]
        with torch.inference_mode():
            got = proj(x)
            want = torch.nn.functional.linear(x, linear.weight, linear.bias)
        assert got.shape == want.shape == (1, rows, 1000)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("method", sorted(set(few_rows.available_products()) - {"stock"}))
def test_a_planned_lean_target_gives_the_targets_logits(tiny, method):
    lean = lean_target.LeanFloatLlama(tiny)
    stock_qkv = lean.lean_layers[0].qkv
    apply_plan(lean, {n: method for n in range(1, 9)})
    assert isinstance(lean.head, PlannedProjection)
    assert all(isinstance(getattr(layer, name), PlannedProjection) for layer in lean.lean_layers
               for name in ("qkv", "o", "gate_up", "down"))  # every product, not the head alone
    assert few_rows.plan_of(lean) == {n: method for n in range(1, 9)}
    assert_same_forward(tiny, lean, seed=2, tol=1e-5, during=packed_products)
    assert not isinstance(tiny.lm_head.forward, PlannedProjection)  # transformers' own head is left alone
    apply_plan(lean, {})
    assert lean.head is tiny.lm_head.forward  # an empty plan restores the stock products
    assert lean.lean_layers[0].qkv is stock_qkv and few_rows.plan_of(lean) == {}


@pytest.mark.parametrize("method", sorted(few_rows.COPIES))
def test_a_methods_weight_copy_is_made_once_for_every_plan(method):
    """A calibration swaps plans on every forward: a copy remade per plan (numpy's transposed weight was) made
    its method's forward time the copy, 0.65-0.95 s instead of 0.26 s on a 2-core VM."""
    if method not in few_rows.available_products():
        pytest.skip(f"this torch build has no {method}")
    inner = PackedProjection(torch.nn.Linear(16, 32, bias=False))
    attr = few_rows.COPIES[method]
    with torch.inference_mode():
        PlannedProjection(inner, {1: method})(torch.randn(1, 16))
        copy = getattr(inner, attr)
        PlannedProjection(inner, {1: method, 2: method})(torch.randn(2, 16))
    assert copy is not None and getattr(inner, attr) is copy


def test_release_copies_frees_the_methods_a_plan_does_not_use(tiny):
    lean = lean_target.LeanFloatLlama(tiny)
    few_rows.release_copies(lean)  # the module's model: other tests' plans left copies on it
    methods = [m for m in few_rows.COPIES if m in few_rows.available_products()]
    by_attr = {few_rows.COPIES[m]: m for m in methods}  # one method per copy (both native kernels share one)
    methods = list(by_attr.values())
    x = torch.randn(1, 3, tiny.config.hidden_size)  # [1, 3, hidden]
    for method in methods:
        apply_plan(lean, {3: method})
        with torch.inference_mode():
            lean.lean_layers[0].qkv(x)
    inner = few_rows.unwrapped(lean.lean_layers[0].qkv)
    assert all(getattr(inner, few_rows.COPIES[m]) is not None for m in methods)
    weight_bytes = inner.weight.numel() * inner.weight.element_size()
    assert few_rows.release_copies(lean, keep={methods[0]}) == weight_bytes * (len(methods) - 1)
    assert getattr(inner, few_rows.COPIES[methods[0]]) is not None
    assert all(getattr(inner, few_rows.COPIES[m]) is None for m in methods[1:])
    assert few_rows.release_copies(lean) == weight_bytes
    apply_plan(lean, {3: methods[-1]})  # a released copy is made again when a plan needs it
    with torch.inference_mode():
        torch.testing.assert_close(lean.lean_layers[0].qkv(x), torch.nn.functional.linear(x, inner.weight, inner.bias),
                                   rtol=1e-5, atol=1e-5)
    apply_plan(lean, {})


def test_an_unknown_method_is_refused():
    with pytest.raises(ValueError, match="unknown product method"):
        PlannedProjection(PackedProjection(torch.nn.Linear(4, 4)), {1: "magic"})


def test_the_plan_takes_a_method_only_when_it_clearly_beats_stock():
    measured = {1: {"stock": 12.6, "numpy": 4.6, "split": 12.0}, 2: {"stock": 29.5, "numpy": 28.0, "split": 40.0},
                3: {"stock": 44.3, "numpy": 11.1, "split": 30.0}, 4: {"stock": 10.0, "numpy": 11.0, "split": 12.0}}
    assert products.choose(measured) == {1: "numpy", 3: "numpy"}  # 2: numpy within the 10 % margin


def test_the_choice_made_at_a_measured_size_holds_up_to_the_next_one():
    plan = products.expand({1: "onednn", 4: "numpy"}, measured=(1, 2, 4, 8), up_to=10)
    assert plan == {1: "onednn", 4: "numpy", 5: "numpy", 6: "numpy", 7: "numpy"}  # 2, 3 and 8.. kept stock
    assert products.expand({2: "split"}, measured=(2, 8), up_to=3) == {1: "split", 2: "split", 3: "split"}


def test_a_method_is_not_run_past_its_row_limit():
    """The native product (limit 8 rows) chosen at 8 rows does not stretch to a 22-row tree: above the largest
    timed size the fastest method without a limit takes over, or stock where none beats it."""
    measured = {1: {"stock": 52.0, "onednn": 34.0, "native": 21.0}, 4: {"stock": 81.0, "onednn": 31.0, "native": 26.0},
                8: {"stock": 91.0, "onednn": 39.4, "native": 38.8}}
    plan = products.plan_from(measured, few_rows.row_limits())
    assert few_rows.row_limits()["native"] == 8 and few_rows.row_limits()["onednn"] == few_rows.PLAN_ROWS_MAX
    assert plan == {**{n: "native" for n in range(1, 9)}, **{n: "onednn" for n in range(9, 65)}}
    slow = {**measured, 8: {"stock": 40.0, "onednn": 39.4, "native": 30.0}}  # onednn within the margin at 8
    assert products.plan_from(slow, few_rows.row_limits()) == {n: "native" for n in range(1, 9)}
    assert products.plan_from(measured, {}) == {n: "native" for n in range(1, 65)}  # no limits: as expand does


def test_a_row_count_between_two_timed_sizes_takes_the_method_fastest_on_the_line_between_them():
    """One AMD EPYC core's calibration: the AVX2 kernel 3 % faster at 4 rows, the AVX-512 one 37 % at 8. The
    AVX2 kernel runs 6 rows a block and is steep past 4 (a 6-row forward 33.5 ms where the plan kept it, against
    26 ms for 8 rows by the other): 5-7 rows take the AVX-512 kernel."""
    measured = {1: {"stock": 37.5, "onednn": 23.4, "native": 20.6, "native512": 21.1},
                4: {"stock": 54.5, "onednn": 27.5, "native": 23.5, "native512": 24.2},
                8: {"stock": 63.6, "onednn": 33.2, "native": 41.1, "native512": 26.0}}
    filled = products.interpolate(measured)
    assert filled[6] == pytest.approx({"stock": 59.05, "onednn": 30.35, "native": 32.3, "native512": 25.1})
    plan = products.plan_from(measured, few_rows.row_limits())
    assert [plan[n] for n in range(1, 9)] == ["native"] * 4 + ["native512"] * 4
    assert all(plan[n] == "native512" for n in range(9, 17)) and plan[17] == "onednn"  # its 16-row limit
    dropped = {**measured, 4: {k: v for k, v in measured[4].items() if k != "native512"}}  # not timed at 4
    assert "native512" not in products.interpolate(dropped)[3] and products.plan_from(dropped, {})[5] == "native"


def test_a_pair_describes_the_product_plan_its_p_is_computed_with(tiny, tiny_matching_folders):
    """ModelPair.describe() (what a trace's `models` records) names the lean target's plan while one is on."""
    from dataclasses import replace
    from types import SimpleNamespace

    from decoding.models import pairs

    target, draft = tiny_matching_folders
    lean = lean_target.LeanFloatLlama(tiny)
    pair = replace(pairs.load_pair("custom", target=str(target), draft=str(draft), device="cpu"),
                   new_target=lambda: SimpleNamespace(model=lean))  # a session over this lean target
    assert "products" not in pair.describe() and few_rows.plan_words(lean) is None
    apply_plan(lean, {n: "split" for n in range(1, 3)})
    try:
        assert pair.describe()["products"] == "split for 1-2 rows; stock for 3-64 rows"
    finally:
        apply_plan(lean, {})
    assert "products" not in pair.describe() and few_rows.plan_words(tiny) is None  # not a lean target


def test_a_padded_lean_target_gives_the_targets_logits(tiny):
    lean = lean_target.LeanFloatLlama(tiny)
    pad = {n: 8 for n in range(1, 8)}
    apply_plan(lean, {}, pad)  # stock products, every row count below 8 run as 8
    try:
        assert isinstance(lean.head, PlannedProjection) and few_rows.pad_of(lean) == pad
        assert few_rows.plan_words(lean) == "stock for 1-64 rows; 1-7 rows run as 8"
        assert_same_forward(tiny, lean, seed=3, tol=1e-5, during=packed_products)
    finally:
        apply_plan(lean, {})
    assert lean.head is tiny.lm_head.forward and few_rows.pad_of(lean) == {}


@pytest.mark.parametrize("pad", [{2: 2}, {3: 1}, {1: few_rows.PLAN_ROWS_MAX + 1}, {0: 4}])
def test_a_padding_that_does_not_add_rows_is_refused(pad):
    with pytest.raises(ValueError, match="runs a row count as more rows"):
        PlannedProjection(PackedProjection(torch.nn.Linear(4, 4)), {}, pad)


def test_the_plan_in_words_names_its_padding():
    assert products.describe({n: "onednn" for n in range(1, 65)}, pad={1: 4, 2: 4, 3: 6, 5: 6}) == (
        "onednn for 1-64 rows; 1-2 rows run as 4; 3 rows run as 6; 5 rows run as 6")
    assert products.describe({1: "numpy"}, up_to=3) == "numpy for 1 row; stock for 2-3 rows"


# Two target curves measured with the plan on (ms of one forward by rows; AMD EPYC, 2 cores, torch 2.13):
TWO_THREADS = ((1, 35.3), (2, 40.3), (3, 33.2), (4, 33.7), (6, 33.4), (8, 38.3), (12, 40.7), (16, 46.4))
ONE_THREAD = ((1, 39.1), (2, 67.9), (3, 53.0), (4, 51.7), (6, 48.7), (8, 59.1), (12, 85.3), (16, 82.2))


def test_a_small_size_is_tried_run_as_the_cheapest_larger_size_where_that_one_is_at_most_ten_percent_dearer():
    assert products.pad_trials(TWO_THREADS) == {1: 3, 2: 3, 3: 6, 4: 6}
    assert products.pad_trials(ONE_THREAD) == {2: 6, 3: 6, 4: 6}  # numpy's one row: 6 rows 25 % dearer
    assert products.pad_trials(ONE_THREAD, up_to=16) == {2: 6, 3: 6, 4: 6}  # 12 rows: never run as more than 8
    rising = ((1, 30.0), (2, 34.0), (3, 38.0), (4, 45.0), (8, 80.0))
    assert products.pad_trials(rising) == {} and products.pad_trials(rising, slack=0.2) == {1: 2, 2: 3, 3: 4}


def test_a_padding_is_kept_where_its_own_timing_is_five_percent_faster_and_extends_to_the_rows_above():
    tried = products.pad_trials(ONE_THREAD)
    timed = {2: (66.0, 49.0), 3: (53.0, 51.0), 4: (51.0, 48.0)}  # 3 rows run as 6: 4 % faster, within the margin
    kept = products.kept_pads(tried, timed)
    assert kept == {2: 6, 4: 6}
    sizes = tuple(n for n, _ in ONE_THREAD)
    assert products.expand_pads(kept, sizes, up_to=16) == {2: 6, 4: 6, 5: 6}  # 5 takes 4's, up to 6
    assert products.expand_pads({1: 3, 2: 3}, (1, 2, 3, 4), up_to=8) == {1: 3, 2: 3}


def test_the_numpy_product_runs_numpy_blas_on_the_threads_torch_uses():
    """numpy's OpenBLAS sizes its pool to every core: with torch on 1 thread a one-row forward through the numpy
    product used 2 cores, the native products of 2-7 rows one (models/lean/blas_threads.py)."""
    from decoding.models.lean import blas_threads

    if not blas_threads.controlled():
        pytest.skip("numpy's BLAS is not OpenBLAS here, or threadpoolctl cannot reach it")
    proj = PlannedProjection(PackedProjection(torch.nn.Linear(16, 32, bias=False)), {1: "numpy"})
    before = torch.get_num_threads()
    try:
        for threads in (1, 3, 1):
            blas_threads._blas().limit(limits=7)  # what anything else may have set meanwhile
            blas_threads._state["threads"] = None
            torch.set_num_threads(threads)
            with torch.inference_mode():
                proj(torch.randn(1, 1, 16))
            assert blas_threads.blas_threads() == threads
    finally:
        torch.set_num_threads(before)
        blas_threads.match_torch()


def test_the_native_kernels_share_one_copy_and_keeping_either_keeps_it(tiny):
    """native and native512 read the same panels: a plan that keeps one must not lose the other's copy."""
    assert few_rows.COPIES["native"] == few_rows.COPIES["native512"]
    lean = lean_target.LeanFloatLlama(tiny)
    few_rows.release_copies(lean)
    inner = few_rows.unwrapped(lean.lean_layers[0].qkv)
    inner.native_panels = torch.zeros(1, 1, 16)  # as a native plan leaves it (made without the kernel here)
    for kept in ("native", "native512"):
        assert few_rows.release_copies(lean, keep={kept}) == 0 and inner.native_panels is not None
    assert few_rows.release_copies(lean, keep={"stock"}) == 64 and inner.native_panels is None
