"""A few-row product that reads each weight once (native_rows.c), compiled on the machine that runs it.

Why: at this model's size a CPU product is bound by reading the weight. BLAS few-row GEMMs re-pack or re-read
it: with one thread, numpy's OpenBLAS took more than twice as long for 4 rows as for one, and oneDNN, flatter
in the rows, cost more than numpy at one row. The kernel in native_rows.c streams a panel copy of each weight
once for up to 6 rows (docs/speed.md, "Few-row products", its table under "A product compiled here").

It is compiled from the shipped C source with the machine's C compiler (`$CC`, else `cc`), for AVX2 + FMA and
with OpenMP where the compiler has it (a product's panels shared out on the OpenMP runtime torch loaded, whose
soname it links: torch's own threads, not a second pool fighting them for the cores), once per machine: the
library lands in <specscope cache>/native/, named by a digest of the source, the flags and the compiler's
version, and is reused after. Where there is no compiler, the compile fails, the CPU lacks
AVX2 or FMA, or SPECSCOPE_NO_NATIVE is set, `available()` is False and says why (`why_unavailable()`); the
calibration then never times the method. No user input reaches the compiler: it only ever builds this file.

`panels(weight)` makes the kernel's copy of a weight [out, in]: [ceil(out / 16), in, 16], the outputs padded
with zero rows to a multiple of 16; float16 panels (`panels(weight, torch.float16)`) hold a weight whose values
are all float16 values (a draft head's, shipped in float16) in half the bytes, and `exact_in_half(weight)`
says whether it is one. `product(panels, x, out_features)` is x [M, in] @ weight^T -> [M, out];
`product(..., wide=True)` runs the AVX-512 kernel on the same panels (native_rows.c's native_rows_wide: two
panels at once, up to 12 rows a block), where `wide_available()` says the CPU has AVX-512.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

import torch

from decoding.models.cache_dir import cache_root

SOURCE = Path(__file__).with_name("native_rows.c")
FLAGS = ("-O3", "-mavx2", "-mfma", "-mf16c", "-shared", "-fPIC")
OPENMP = "-fopenmp"  # tried first: the products' panels shared out on torch's threads
PANEL = 16  # outputs per panel (native_rows.c's PANEL)
COMPILE_TIMEOUT_S = 120
DISABLE_ENV = "SPECSCOPE_NO_NATIVE"

_lock = threading.Lock()
_state: dict[str, object] = {}  # "lib" (the loaded library's Kernels) or "why" (why there is none); set once


@dataclass(frozen=True)
class Kernels:
    """The loaded library's entry points by (wide, float16 panels), and whether this CPU runs the wide (AVX-512)
    ones: read once at load, not per product."""

    lib: ctypes.CDLL
    by_kind: dict[tuple[bool, bool], object]
    wide: bool


def available() -> bool:
    """Whether the compiled kernel runs here (compiling it the first time)."""
    return _library() is not None


def wide_available() -> bool:
    """Whether the AVX-512 kernel runs here: the library loads and the CPU has AVX-512 (F)."""
    kernels = _library()
    return kernels is not None and kernels.wide


def why_unavailable() -> str | None:
    """Why the kernel does not run here, in words; None when it does."""
    _library()
    return _state.get("why")


def _library() -> Kernels | None:
    with _lock:
        if "lib" not in _state and "why" not in _state:
            try:
                _state["lib"] = _load(_build())
            except (OSError, RuntimeError, subprocess.SubprocessError) as err:
                _state["why"] = str(err)
        return _state.get("lib")


def _compiler() -> str:
    if os.environ.get(DISABLE_ENV):
        raise RuntimeError(f"{DISABLE_ENV} is set")
    cc = shutil.which(os.environ.get("CC", "cc"))
    if cc is None:
        raise RuntimeError(f"no C compiler ({os.environ.get('CC', 'cc')}) on PATH")
    return cc


def _build() -> Path:
    """The compiled library in the cache dir (compiled now unless this source, flags and compiler made it):
    with OpenMP where the compiler has it, else without."""
    cc = _compiler()
    version = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30).stdout
    source, candidates = SOURCE.read_text(), []  # candidates: (flags, library path), OpenMP first
    for flags in ((*FLAGS, OPENMP), FLAGS):
        digest = hashlib.sha256("\0".join([source, " ".join(flags), version]).encode()).hexdigest()[:12]
        candidates.append((flags, cache_root() / "native" / f"native_rows-{digest}.so"))
    built = [lib for _, lib in candidates if lib.is_file()]
    if built:
        return built[0]
    failed = ""
    for flags, lib in candidates:
        lib.parent.mkdir(parents=True, exist_ok=True)
        tmp = lib.with_suffix(f".{os.getpid()}.tmp")
        done = subprocess.run([cc, *flags, "-o", str(tmp), str(SOURCE)], capture_output=True, text=True,
                              timeout=COMPILE_TIMEOUT_S)
        if done.returncode == 0:
            tmp.replace(lib)  # atomic: another process never loads a half-written library
            return lib
        tmp.unlink(missing_ok=True)
        failed = done.stderr.strip()[-300:]
    raise RuntimeError(f"the C compiler failed: {failed}")


def _load(path: Path) -> Kernels:
    lib = ctypes.CDLL(str(path))
    if not lib.native_rows_supported():
        raise RuntimeError("this CPU lacks AVX2, FMA or F16C")
    by_kind = {(False, False): lib.native_rows, (True, False): lib.native_rows_wide,
               (False, True): lib.native_rows_f16, (True, True): lib.native_rows_wide_f16}
    for kernel in by_kind.values():
        kernel.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_long] * 4
        kernel.restype = None
    return Kernels(lib, by_kind, bool(lib.native_rows_wide_supported()))


PANEL_DTYPES = (torch.float32, torch.float16)


def exact_in_half(weight: torch.Tensor) -> bool:
    """Whether every value of the weight is a float16 value (its float16 panels are then the same weight)."""
    w = weight.detach()
    return bool(torch.equal(w.to(torch.float16).to(w.dtype), w))


def panels(weight: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """weight [out, in] -> its panel copy [ceil(out / PANEL), in, PANEL] (`dtype`: float32, or float16 for a
    weight exact in it; zero rows past out)."""
    if dtype not in PANEL_DTYPES:
        raise ValueError(f"panels are float32 or float16, not {dtype}")
    out, k = weight.shape
    padded = -(-out // PANEL) * PANEL
    w = weight.detach().to(dtype)
    if padded != out:
        w = torch.cat([w, w.new_zeros(padded - out, k)])  # [padded, in]
    return w.reshape(padded // PANEL, PANEL, k).transpose(1, 2).contiguous()  # [padded / PANEL, in, PANEL]


def product(wp: torch.Tensor, x: torch.Tensor, out_features: int, threads: int | None = None,
            wide: bool = False) -> torch.Tensor:
    """x [M, in] @ weight^T -> [M, out_features], the weight given as its panels (float32 or float16, CPU), its
    panels shared out on `threads` threads (torch's count by default; one where the library was built without
    OpenMP); `wide`: by the AVX-512 kernel."""
    kernels = _library()
    if kernels is None:
        raise RuntimeError(f"the native few-row product is unavailable: {why_unavailable()}")
    if wide and not kernels.wide:
        raise RuntimeError("the wide native product needs AVX-512, which this CPU lacks")
    x = x.contiguous()
    rows, k = x.shape
    if wp.dim() != 3 or wp.shape[1] != k or wp.shape[2] != PANEL or wp.dtype not in PANEL_DTYPES \
            or x.dtype != torch.float32:
        raise ValueError(f"panels {tuple(wp.shape)} {wp.dtype} do not fit x {tuple(x.shape)} {x.dtype}")
    y = torch.empty(rows, wp.shape[0] * PANEL)  # [M, padded out]
    threads = torch.get_num_threads() if threads is None else threads
    kernel = kernels.by_kind[wide, wp.dtype == torch.float16]
    kernel(x.data_ptr(), wp.data_ptr(), y.data_ptr(), rows, y.shape[1], k, max(1, int(threads)))
    return y if y.shape[1] == out_features else y[:, :out_features]
