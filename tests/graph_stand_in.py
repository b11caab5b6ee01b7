"""A stand-in for CUDA graphs on a CPU: what a capture returns and what a replay does, so the replay paths
(cuda/graphed_target.py, head/graphed_calls.py) run in the CPU tests. tests/test_cuda.py runs the real ones."""

from __future__ import annotations

from dataclasses import fields, is_dataclass

import torch


class StandInGraph:
    """A replay runs the captured call again on its static inputs and writes into the outputs the capture returned
    (the tensors a caller reads after a replay), as a CUDA graph's replay does."""

    def __init__(self, call) -> None:
        self.call, self.out, self.replays = call, call(), 0

    def replay(self) -> None:
        self.replays += 1
        for kept, fresh in zip(tensors_of(self.out), tensors_of(self.call()), strict=True):
            kept.copy_(fresh)


def tensors_of(out) -> list[torch.Tensor]:
    """The tensors of a call's output: a tuple's, or a dataclass's tensor fields."""
    values = [getattr(out, f.name) for f in fields(out)] if is_dataclass(out) else list(out)
    return [v for v in values if isinstance(v, torch.Tensor)]


def stand_in_capture(captured: list[StandInGraph]):
    """A `capture(call, device, owner)` (cuda/capture.py) that records each stand-in graph in `captured`."""
    def capture(call, device, owner):
        graph = StandInGraph(call)
        captured.append(graph)
        return graph, graph.out

    return capture
