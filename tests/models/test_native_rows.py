"""The compiled few-row product (models/native_rows.py + native_rows.c): the stock product up to float
rounding for every row count (blocks of 6 rows and the rest), any width and output count (zero-padded panels);
compiled once per machine and reused; where it cannot be built it says why, the calibration never offers it,
and a cached plan naming it is measured again."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from decoding.models.lean import few_rows, native_rows

needs_native = pytest.mark.skipif(not native_rows.available(),
                                  reason=f"no native product here: {native_rows.why_unavailable()}")


needs_wide = pytest.mark.skipif(not native_rows.wide_available(), reason="this CPU lacks AVX-512 (F)")
KERNELS = [pytest.param(False, marks=needs_native, id="avx2"), pytest.param(True, marks=needs_wide, id="avx512")]


@pytest.mark.parametrize("wide", KERNELS)
@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("out_features, in_features", [(1000, 48), (32, 576), (37, 13), (16, 1)])
def test_the_native_product_is_the_stock_product(out_features, in_features, threads, wide):
    """On several threads each takes a share of the panels (16 outputs each; 37 outputs make 3 panels: the
    AVX-512 kernel's last one alone); row counts across both kernels' blocks (6 and 12 rows)."""
    torch.manual_seed(out_features)
    w = torch.randn(out_features, in_features)  # [out, in]
    wp = native_rows.panels(w)
    assert wp.shape == (-(-out_features // 16), in_features, 16)
    for rows in (1, 2, 3, 4, 5, 6, 7, 11, 12, 13, 25):
        x = torch.randn(rows, in_features)  # [rows, in]
        got = native_rows.product(wp, x, out_features, threads=threads, wide=wide)  # [rows, out]
        assert got.shape == (rows, out_features)
        torch.testing.assert_close(got, x @ w.T, rtol=1e-5, atol=1e-4)  # sums of up to 576 terms: rounding


@pytest.mark.parametrize("wide", KERNELS)
@pytest.mark.parametrize("threads", [1, 2])
def test_float16_panels_of_a_weight_exact_in_float16_give_its_product(threads, wide):
    """A weight whose values are float16 values (a draft head's): its float16 panels are the same weight, half the
    bytes; the product is the float32 panels' up to the order of the sums (37 outputs: an odd last panel)."""
    torch.manual_seed(3)
    w = torch.randn(37, 576).to(torch.float16).float()  # [out, in], exact in float16
    assert native_rows.exact_in_half(w) and not native_rows.exact_in_half(w + 1e-4)
    wp = native_rows.panels(w, torch.float16)
    assert wp.dtype == torch.float16 and wp.shape == (3, 576, 16)
    for rows in (1, 5, 6, 7, 12, 13):
        x = torch.randn(rows, 576)  # [rows, in]
        got = native_rows.product(wp, x, 37, threads=threads, wide=wide)  # [rows, out]
        torch.testing.assert_close(got, native_rows.product(native_rows.panels(w), x, 37, threads=threads,
                                                            wide=wide), rtol=1e-5, atol=1e-4)
        torch.testing.assert_close(got, x @ w.T, rtol=1e-5, atol=1e-4)
    with pytest.raises(ValueError, match="float32 or float16"):
        native_rows.panels(w, torch.bfloat16)


@needs_native
def test_a_strided_input_and_misfit_panels():
    w, x = torch.randn(40, 24), torch.randn(24, 3).T  # x [3, 24], not contiguous
    torch.testing.assert_close(native_rows.product(native_rows.panels(w), x, 40), x @ w.T, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="do not fit"):
        native_rows.product(native_rows.panels(w), torch.randn(3, 23), 40)
    with pytest.raises(ValueError, match="do not fit"):
        native_rows.product(native_rows.panels(w), torch.randn(3, 24, dtype=torch.float64), 40)


@needs_native
def test_the_wide_kernel_is_refused_where_the_cpu_lacks_avx512(monkeypatch):
    from dataclasses import replace

    no_wide = replace(native_rows._library(), wide=False)  # the loaded library as an AVX2-only CPU sees it
    monkeypatch.setattr(native_rows, "_library", lambda: no_wide)
    assert not native_rows.wide_available() and native_rows.available()
    assert "native512" not in few_rows.available_products() and "native" in few_rows.available_products()
    with pytest.raises(RuntimeError, match="AVX-512"):
        native_rows.product(native_rows.panels(torch.randn(16, 4)), torch.randn(1, 4), 16, wide=True)


def _fresh(monkeypatch, tmp_path, **env):
    """A process state that has not built the library yet, with its cache under tmp_path."""
    monkeypatch.setattr(native_rows, "_state", {})
    monkeypatch.setenv("SPECSCOPE_CACHE", str(tmp_path))
    for name, value in env.items():
        monkeypatch.setenv(name, value)


@needs_native
def test_the_library_is_compiled_once_per_machine_and_reused(monkeypatch, tmp_path):
    _fresh(monkeypatch, tmp_path)
    assert native_rows.available() and native_rows.why_unavailable() is None
    [lib] = (tmp_path / "native").glob("native_rows-*.so")
    made = lib.stat().st_mtime_ns
    monkeypatch.setattr(native_rows, "_state", {})  # a new process: found in the cache, not compiled again
    monkeypatch.setattr(native_rows.subprocess, "run", _only_version(native_rows.subprocess.run))
    assert native_rows.available()
    assert lib.stat().st_mtime_ns == made and list((tmp_path / "native").glob("*.so")) == [lib]


def _only_version(run):
    def guarded(cmd, *args, **kwargs):
        assert cmd[1:] == ["--version"], f"compiled again: {cmd}"
        return run(cmd, *args, **kwargs)
    return guarded


@pytest.mark.parametrize("env, why", [({"SPECSCOPE_NO_NATIVE": "1"}, "SPECSCOPE_NO_NATIVE is set"),
                                      ({"CC": "no-such-compiler-here"}, "no C compiler"),
                                      ({"CC": "false"}, "the C compiler failed")])
def test_without_a_compiler_it_says_why_and_is_not_offered(monkeypatch, tmp_path, env, why):
    _fresh(monkeypatch, tmp_path, **env)
    assert not native_rows.available()
    assert why in native_rows.why_unavailable()
    assert "native" not in few_rows.available_products()
    with pytest.raises(RuntimeError, match="unavailable"):
        native_rows.product(torch.zeros(1, 4, 16), torch.zeros(1, 4), 16)
    with pytest.raises(ValueError, match="need what this torch build lacks"):
        few_rows.PlannedProjection(few_rows.PackedProjection(torch.nn.Linear(4, 16)), {1: "native"})


@needs_native
def test_its_threads_are_torchs_own_openmp_threads():
    """Built with OpenMP, the library runs on the runtime torch loaded (the same soname): a second runtime's
    threads would fight torch's for the cores (a helper thread of its own made a 2-thread forward 1.7x slower)."""
    maps = Path("/proc/self/maps")
    if not maps.is_file():
        pytest.skip("no /proc/self/maps here")
    runtimes = {line.split()[-1] for line in maps.read_text().splitlines() if "libgomp" in line or "libiomp" in line}
    assert len(runtimes) <= 1, runtimes


@needs_native
def test_users_calling_it_at_once_each_get_their_own_product():
    """The app serves several users from one process: their forwards call the kernel from several Python threads
    at once (ctypes lets go of the GIL), each an OpenMP parallel region of its own."""
    from concurrent.futures import ThreadPoolExecutor

    torch.manual_seed(3)
    w = torch.randn(4000, 256)  # [out, in]: a product long enough (~0.5 ms) for calls to overlap
    wp = native_rows.panels(w)
    xs = [torch.randn(rows, 256) for rows in (1, 2, 3, 4, 5, 6, 7, 9) * 2]  # [rows, in] each

    def one(x):
        return [native_rows.product(wp, x, 4000, threads=2) for _ in range(10)]

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(one, xs))
    for x, outs in zip(xs, results, strict=True):
        for got in outs:
            torch.testing.assert_close(got, x @ w.T, rtol=1e-5, atol=1e-4)
