"""ui/heap.py on glibc: after `tune()`, a buffer of MMAP_THRESHOLD or more is mmapped (so freeing it gives
its memory back) even after a larger block was freed, which without `tune()` raises glibc's threshold to
that block's size and sends the next buffers to the heap; `release()` answers without harm."""

from __future__ import annotations

import ctypes

import pytest

from ui import heap


class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                      "fsmblks", "uordblks", "fordblks", "keepcost")]


def mmapped_bytes(libc: ctypes.CDLL) -> int:
    libc.mallinfo2.restype = MallInfo2
    return libc.mallinfo2().hblkhd


glibc = heap._glibc()
pytestmark = pytest.mark.skipif(glibc is None or not hasattr(glibc, "mallinfo2"), reason="glibc 2.33+ only")


def test_after_tune_a_freed_large_block_does_not_send_the_next_buffers_to_the_heap():
    libc = glibc
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    assert heap.tune()
    libc.free(libc.malloc(8 << 20))  # an 8 MiB mmapped block freed: glibc's dynamic threshold would rise to 8 MiB
    before = mmapped_bytes(libc)
    buffer = libc.malloc(2 * heap.MMAP_THRESHOLD)  # e.g. a tree step's logits rows
    try:
        assert mmapped_bytes(libc) - before >= 2 * heap.MMAP_THRESHOLD, "the buffer came from the heap"
    finally:
        libc.free(buffer)
    assert mmapped_bytes(libc) == before  # and freeing it handed it back
    heap.release()
