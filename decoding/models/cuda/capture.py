"""One CUDA graph of a call: warmed up on a side stream, then captured into its owner's memory pool.

Why here: the graphed target (graphed_target.py) and the draft head's graphed calls (head/graphed_calls.py)
capture alike; the steps are the ones torch's CUDA graph notes ask for (warm-up runs on a side stream before a
capture: library workspaces, lazy kernel loading).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import torch

WARM_UP = 2  # eager runs on a side stream before a capture
Out = TypeVar("Out")


def capture(call: Callable[[], Out], device: torch.device, owner) -> tuple[torch.cuda.CUDAGraph, Out]:
    """(graph, outputs) of `call()`, which reads and writes only static tensors; the warm-up runs compute `call`
    itself (a call that writes a cache writes the same values again). `owner.pool`: the graphs' shared memory
    pool, made at the first capture."""
    side = torch.cuda.Stream(device=device)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side):
        for _ in range(WARM_UP):
            call()
    torch.cuda.current_stream(device).wait_stream(side)
    owner.pool = owner.pool or torch.cuda.graph_pool_handle()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, pool=owner.pool, capture_error_mode="thread_local"):
        out = call()
    return graph, out
