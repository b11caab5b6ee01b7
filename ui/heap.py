"""The server's C heap (glibc malloc): why its resident memory grew with every round of sessions, and the
two calls that keep it flat.

Measured with `python -m tests.soak` (embedded pair, 20 sessions x 10 Steps a round, page leaves between
rounds) and mallinfo2 on the server: the memory malloc held *in use* stayed flat from round to round
(3478, 3498, 3512 MiB), while the *free* memory it kept grew by ~200 MiB a round (445, 624, 855 MiB), and
the resident size with it. The cause is glibc's dynamic mmap threshold: each time a large mmapped block
is freed (loading the models frees many), glibc raises the size from which it mmaps, up to 32 MiB. After
that every tensor buffer below 32 MiB (a tree's logits rows, a run's KV caches, activations) comes from
the heaps of the per-thread arenas, where a few long-lived small objects pin the pages around the freed
buffers: the free memory is never handed back, and the next round fragments more of it.

`tune()` fixes the threshold at MMAP_THRESHOLD (which also switches the dynamic raise off): buffers of
that size or more are mmapped and go back to the system when torch frees them. `release()`
(malloc_trim) returns the free pages still inside the heaps; the app calls it after a page leave, when
a left page's run has just been freed. Both do nothing where the C library is not glibc (macOS, musl).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
from functools import cache

M_MMAP_THRESHOLD = -3  # mallopt's parameter number (glibc <malloc.h>)
MMAP_THRESHOLD = 256 * 1024  # bytes: glibc's own starting value is 128 KiB; a tree step's logits (~1 MB) stay above
_LOG = logging.getLogger("specscope.heap")


@cache
def _glibc() -> ctypes.CDLL | None:
    """The C library if it is glibc (it has both mallopt and malloc_trim), else None."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
    has_both = hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim")
    return libc if has_both else None


def tune(threshold: int = MMAP_THRESHOLD) -> bool:
    """Fix malloc's mmap threshold at `threshold` bytes for this process; whether it was set (glibc only).

    Call it once, early in the serving process (app.main): it changes where later allocations come from."""
    libc = _glibc()
    if libc is None:
        return False
    done = bool(libc.mallopt(M_MMAP_THRESHOLD, int(threshold)))
    if not done:
        _LOG.warning("mallopt(M_MMAP_THRESHOLD, %d) was refused: the heap keeps glibc's dynamic threshold", threshold)
    return done


def release() -> bool:
    """Hand the heap's free pages back to the system (malloc_trim(0)); whether any were released."""
    libc = _glibc()
    return bool(libc.malloc_trim(0)) if libc is not None else False
