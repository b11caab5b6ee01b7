"""ui/heap.py on glibc: `release()` gives back free heap memory that glibc keeps by itself (freed blocks
below a block still in use, which a heap's top trim cannot reach)."""

from __future__ import annotations

import ctypes
from pathlib import Path

import pytest

from ui import heap

glibc = heap._glibc()
pytestmark = pytest.mark.skipif(glibc is None, reason="glibc only (malloc_trim)")
BLOCK, BLOCKS = 32 * 1024, 1024  # 32 MiB in blocks below any mmap threshold glibc uses: they come from the heap


def resident_anon_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1])
    raise AssertionError("no RssAnon line")


def test_release_gives_back_freed_blocks_that_glibc_kept():
    libc = glibc
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    blocks = [libc.malloc(BLOCK) for _ in range(BLOCKS)]
    for block in blocks:
        ctypes.memset(block, 1, BLOCK)  # resident
    pin = libc.malloc(BLOCK)  # in use above them: glibc's own trim of the heap's top cannot reach them
    try:
        for block in blocks:
            libc.free(block)
        kept = resident_anon_kib()
        heap.release()
        given_back = kept - resident_anon_kib()
    finally:
        libc.free(pin)
    assert given_back >= 0.75 * BLOCK * BLOCKS / 1024, f"only {given_back} KiB of {BLOCK * BLOCKS // 1024} given back"
