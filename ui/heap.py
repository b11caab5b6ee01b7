"""The server's C heap (glibc malloc): why its resident memory grew with every round of sessions, and the
call that gives the freed part back.

Measured with `python -m tests.soak` (embedded pair, 20 sessions x 10 Steps a round, page leaves between
rounds) and mallinfo2 on the server: the memory malloc held *in use* stayed flat from round to round
(3478, 3498, 3512 MiB), while the *free* memory it kept grew by ~200 MiB a round (445, 624, 855 MiB), and
the resident size with it. glibc raises the size from which it mmaps, up to 32 MiB, each time a large
mmapped block is freed (loading the models frees many); after that the tensor buffers of every step and a
run's KV caches come from the heaps of the per-thread arenas, where a few long-lived small objects pin the
pages around the freed buffers, and glibc only returns the free space at a heap's top.

`release()` (malloc_trim(0)) returns every whole free page inside the heaps; the app calls it after a page
leave, when the page's run has just been freed. With it, and the left pages' records dropped
(ui/page_leave.py), the soak's round 2 ends within 2 % of round 1 (docs/speed.md, "Resident memory").
Fixing glibc's mmap threshold instead (mallopt M_MMAP_THRESHOLD = 256 KiB: every buffer from there on
mmapped, so freeing it gives it back) kept memory flatter still, but made a Step click ~40 % slower (each
step's [N, V] rows mmapped and faulted in afresh), so the app does not. Does nothing where the C library
is not glibc (macOS, musl).
"""

from __future__ import annotations

import ctypes
import ctypes.util
from functools import cache


@cache
def _glibc() -> ctypes.CDLL | None:
    """The C library if it is glibc (it has malloc_trim), else None."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
    return libc if hasattr(libc, "malloc_trim") else None


def release() -> bool:
    """Hand the heaps' free pages back to the system (malloc_trim(0)); whether any were released."""
    libc = _glibc()
    return bool(libc.malloc_trim(0)) if libc is not None else False
