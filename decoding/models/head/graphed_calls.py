"""The fused draft head's calls replayed from CUDA graphs: a step's catch-up and each drafted level, one launch each.

Why: on a GPU a call of the head is about 40 small kernels launched from Python: a drafted level cost 1.8-2.6
ms of host work on an H200, against 3.3 ms for the whole target forward replayed from graphs (docs/speed.md, "A
CUDA check and where the GPU's drafted step goes"). `GraphedHeadCalls` pads a call to a rows bucket (BUCKETS)
and its attention to the whole slot buffer (head_slots.py), and captures one graph per bucket and call kind
(catch-up or level) on each session's slots; the next call of that size copies its inputs into the graph's
and replays it. A longer call (a prompt's catch-up) and every call on a CPU (tests) run the same padded
function eagerly, so the CPU tests check what the GPU replays.

A padded row reads zeros, writes its key and value just past the real rows' slots and sees only its own slot;
its outputs are dropped, and the next call overwrites its slot.

Slots (and the graphs captured on them) are leased per draft session and given back when the session is
dropped (`lease`), so the app's next run replays the graphs it has instead of capturing them again.
"""

from __future__ import annotations

import threading
import warnings
import weakref
from dataclasses import dataclass, replace

import torch

from decoding.models.cuda.capture import capture
from decoding.models.head.head_slots import HeadSlots
from decoding.models.head.lean_fused import HeadCall, LeanFusedHead

BUCKETS = (1, 2, 4, 8, 16)  # rows a call is padded to; a catch-up of more rows runs eagerly
STATIC = ("x", "e", "positions", "write_at", "sees")  # a call's tensors a graph reads (copied in before a replay)


@dataclass
class Captured:
    """A graph, the static call it reads and the outputs it writes (h [bucket, hidden], q [bucket, H])."""

    graph: torch.cuda.CUDAGraph
    inputs: HeadCall
    out: tuple[torch.Tensor, torch.Tensor]


class GraphedHeadCalls:
    """`run` for FusedHeadTreeLM (fused_drafter.py): a call of `head` padded to its bucket, replayed from a graph
    on a GPU (`graphs`; switched off for good if a capture fails), run eagerly elsewhere. Holds the spare slots of
    dropped sessions."""

    def __init__(self, head: LeanFusedHead, graphs: bool | None = None) -> None:
        self.head = head
        self.graphs = head.module.fuse.weight.device.type == "cuda" if graphs is None else graphs
        self.spare: list[HeadSlots] = []
        self._lock = threading.Lock()

    def lease(self, session: object) -> HeadSlots:
        """Slots for a new draft `session`: a dropped session's (with their graphs) when there are any; they
        come back to the spare list when `session` is dropped."""
        with self._lock:
            slots = self.spare.pop() if self.spare else None
        if slots is None:
            c = self.head.config
            slots = HeadSlots(c.heads, c.head_dim, self.head.module.fuse.weight.device)
        slots.forget(0)
        weakref.finalize(session, self.spare.append, slots)
        return slots

    def __call__(self, slots: HeadSlots, rows: HeadCall) -> tuple[torch.Tensor, torch.Tensor]:
        """What LeanFusedHead.call returns for `rows`."""
        n = rows.x.shape[0]
        bucket = next((b for b in BUCKETS if b >= n), None)
        if bucket is None:
            return self.head.call(slots, rows)
        padded = self._padded(slots, rows, bucket)
        h, q = self._replay(slots, padded, bucket) if self.graphs else self._every_row(slots, padded)
        return h[:n].clone(), (q[n - 1: n] if rows.from_taps else q[:n]).clone()

    def _padded(self, slots: HeadSlots, rows: HeadCall, bucket: int) -> HeadCall:
        """`rows` padded to `bucket` rows and their mask widened to the whole buffer [bucket, capacity]."""
        n, first = rows.x.shape[0], rows.first  # a call's rows take consecutive slots
        slots.reserve(first + bucket)
        dev = rows.x.device
        sees = torch.zeros(bucket, slots.capacity, dtype=torch.bool, device=dev)
        sees[:n, : rows.sees.shape[-1]] = rows.sees
        pad = torch.arange(n, bucket, device=dev)
        sees[pad, first + pad] = True  # a padded row sees its own slot only
        grow = lambda t: torch.cat([t, t.new_zeros(bucket - n, *t.shape[1:])])  # noqa: E731  [bucket, ..]
        return replace(rows, x=grow(rows.x), e=grow(rows.e), positions=grow(rows.positions),
                       write_at=torch.arange(first, first + bucket, device=dev), sees=sees)

    def _every_row(self, slots: HeadSlots, rows: HeadCall) -> tuple[torch.Tensor, torch.Tensor]:
        """The call with q's logits for every row (a graph's outputs have one shape whatever the real rows)."""
        h = self.head.states(slots, rows)
        return h, self.head.logits(h)

    def _replay(self, slots: HeadSlots, rows: HeadCall, bucket: int) -> tuple[torch.Tensor, torch.Tensor]:
        key = (bucket, rows.from_taps)
        captured = slots.graphs.get(key)
        if captured is None:
            try:
                captured = slots.graphs[key] = self._capture(slots, rows)  # it ran this call's inputs
            except RuntimeError as err:  # a driver or build that cannot capture: the same calls, eagerly
                warnings.warn(f"CUDA graph capture failed ({err}); the draft head runs without graphs", stacklevel=2)
                self.graphs = False
                return self._every_row(slots, rows)
        else:
            for name in STATIC:
                getattr(captured.inputs, name).copy_(getattr(rows, name))
        captured.graph.replay()
        return captured.out

    def _capture(self, slots: HeadSlots, rows: HeadCall) -> Captured:
        """A graph of `_every_row` on static copies of `rows`; the warm-up runs compute this very call (the same
        slots get the same keys and values), so the replay that follows is the call's result."""
        static = replace(rows, **{name: getattr(rows, name).clone() for name in STATIC})
        graph, out = capture(lambda: self._every_row(slots, static), rows.x.device, slots)
        return Captured(graph, static, out)
