"""numpy's BLAS on the threads torch uses (the numpy few-row product's pool, few_rows.py).

Why: numpy's OpenBLAS keeps its own thread pool, sized to every core, whatever `torch.set_num_threads` says.
With torch on 1 thread a one-row target forward through the numpy product ran its products on 2 cores of a
2-core AMD EPYC (the 8192 x 576 product 122 us, 271 us on one thread) while the products of 2-7 rows (the
native kernel, on torch's OpenMP threads) ran on one: the target alone was timed on more cores than the drafted
steps it was compared with, and "1 thread" was not one (docs/speed.md, "The head trained on again").

`match_torch()` sets numpy's BLAS threads to torch's count when they differ (a check per call, the setting only
on a change) through threadpoolctl, which finds the BLAS numpy loaded on any platform; without threadpoolctl,
or where numpy's BLAS is not OpenBLAS, nothing is set (`controlled()` says whether it is).
"""

from __future__ import annotations

import functools
import threading

import torch

_lock = threading.Lock()
_state: dict[str, int | None] = {"threads": None}  # the count set last (None: not yet)


@functools.cache
def _blas():
    """threadpoolctl's controller of numpy's OpenBLAS (found once), or None."""
    try:
        import numpy  # noqa: F401 - numpy loads its BLAS; the controller lists the libraries loaded
        from threadpoolctl import ThreadpoolController

        blas = ThreadpoolController().select(internal_api="openblas")
        return blas if blas.info() else None
    except Exception:  # noqa: BLE001 - no threadpoolctl, or it cannot read this platform's libraries
        return None


def match_torch() -> None:
    """numpy's BLAS threads := torch's, when they differ from what was set last."""
    threads = torch.get_num_threads()
    if _state["threads"] == threads:
        return
    with _lock:
        blas = _blas()
        if blas is not None:
            blas.limit(limits=threads)
        _state["threads"] = threads


def controlled() -> bool:
    """Whether numpy's BLAS threads can be set here."""
    return _blas() is not None


def blas_threads() -> int | None:
    """numpy's BLAS threads now (None where they cannot be read)."""
    blas = _blas()
    return int(blas.info()[0]["num_threads"]) if blas is not None else None
