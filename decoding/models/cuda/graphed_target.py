"""The target of a llama-style model on a GPU: the lean forward with its calls replayed from CUDA graphs.

Why: a 135M-parameter model is far too small to keep a GPU busy. Through transformers one forward
launches ~1000 small kernels from Python, and on an H100/H200 the launches, not the arithmetic, set its time
whatever the rows. A CUDA graph records one call's kernels once and replays them with one launch: about a
fifth of the time for one row on an H100 (docs/speed.md, "Measured on a GPU with CUDA graphs").
`GraphedLlama` runs the shared lean forward (lean_llama.py: the model's norms and rotary; q/k/v and
gate/up fused into one product each on stacked weight copies, or, for a large model, three and two
products on its own weights) on a `Slots` buffer (slot_cache.py) and captures one graph per rows bucket
(BUCKETS): a call of n rows is padded to the next bucket and replayed. Longer calls (a prompt's prefill)
and calls on a CPU run the same function eagerly. p is the model's up to float rounding (tests compare it
with transformers' forward and greedy decoding with `generate()`).

A padded row sees only its own slot (its output is dropped); its key and value land past the filled
length, where the next call overwrites them and no mask lets a real row read them.
"""

from __future__ import annotations

import importlib.util
import os
import threading
import warnings
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from decoding.models.cuda.capture import WARM_UP, capture  # noqa: F401  (WARM_UP: still importable here)
from decoding.models.cuda.slot_cache import SlotCache, Slots
from decoding.models.lean.llama import LeanLayer, LeanLlama, LeanOutput, call_defaults, fused

BUCKETS = (1, 2, 4, 8, 16, 32, 64)  # rows a graph is captured for; a call takes the smallest that fits


def _linear(weight: torch.Tensor):
    return lambda x: F.linear(x, weight)  # [.., in] -> [.., out]


def _stacked(*weights: torch.Tensor):
    """Products that read the same input, each with the model's own weight, outputs side by side (no copy)."""
    weights = tuple(w.detach() for w in weights)
    return lambda x: torch.cat([F.linear(x, w) for w in weights], dim=-1)  # [.., in] -> [.., sum of outs]


def _layer(layer, fuse: bool) -> LeanLayer:
    attn, mlp = layer.self_attn, layer.mlp
    joined = (lambda *w: _linear(fused(*w))) if fuse else _stacked
    return LeanLayer(
        input_norm=layer.input_layernorm,
        qkv=joined(attn.q_proj.weight, attn.k_proj.weight, attn.v_proj.weight),
        o=_linear(attn.o_proj.weight.detach()),
        post_norm=layer.post_attention_layernorm,
        gate_up=joined(mlp.gate_proj.weight, mlp.up_proj.weight),
        down=_linear(mlp.down_proj.weight.detach()),
    )


@dataclass
class Inputs:
    """One call's inputs at a fixed size: ids, positions [1, rows], mask [1, 1, rows, capacity], write_at [rows]."""

    ids: torch.Tensor
    positions: torch.Tensor
    mask: torch.Tensor
    write_at: torch.Tensor

    def fill(self, other: Inputs) -> None:
        for name in ("ids", "positions", "mask", "write_at"):
            getattr(self, name).copy_(getattr(other, name))


@dataclass
class Captured:
    """A graph and the static tensors it reads and writes."""

    graph: torch.cuda.CUDAGraph
    inputs: Inputs
    out: LeanOutput


class GraphedLlama(LeanLlama):
    """The target's forward on its own device (see the module docstring); read-only after construction except
    `spare`, the slots of dropped sessions waiting for the next one (taken under a lock, given back when a
    session's cache is dropped), and `graphs`, switched off for good if a capture ever fails."""

    def __init__(self, target, padded: bool | None = None, fuse: bool = True) -> None:
        """fuse: q/k/v and gate/up as one product each on stacked copies of their weights (2/3 of the model's
        size more; False: three and two products on the model's own weights, a few more kernels a layer)."""
        super().__init__(target)  # refuses a target that is not llama-style
        self._device, self._dtype = target.lm_head.weight.device, target.lm_head.weight.dtype
        self.fuse = fuse
        self.lean_layers = [_layer(layer, fuse) for layer in target.model.layers]
        self.head = _linear(target.lm_head.weight.detach())  # [.., hidden] -> [.., V]
        self.graphs = self._device.type == "cuda"  # replay calls from graphs (else run them eagerly)
        self.padded = self.graphs if padded is None else padded  # pad calls to BUCKETS (tests pad on a CPU)
        self.spare: list[Slots] = []
        self._lock = threading.Lock()

    @property
    def device(self) -> torch.device:
        return self._device

    @property
    def dtype(self) -> torch.dtype:
        return self._dtype

    def new_cache(self) -> SlotCache:
        """A session's cache: a dropped session's slots (and their graphs) when there are any."""
        with self._lock:
            slots = self.spare.pop() if self.spare else None
        if slots is None:
            slots = Slots(len(self.lean_layers), self.kv_heads, self.head_dim, self._dtype, self._device)
        slots.length = 0
        return SlotCache(slots, self.spare)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                position_ids: torch.Tensor | None = None, past_key_values: SlotCache | None = None,
                use_cache: bool = True, logits_to_keep: int = 1, taps: tuple[int, ...] = (),
                feature_rows: int | None = None) -> LeanOutput:
        """What LeanLlama.forward takes and returns; the rows are written at the cache's next slots (a call with
        taps replays its own graph: one per rows bucket and taps)."""
        cache = past_key_values if past_key_values is not None else self.new_cache()
        slots, n = cache.slots, input_ids.shape[1]
        bucket = next((b for b in BUCKETS if b >= n), None) if self.padded else None
        inputs = self._inputs(slots, input_ids, attention_mask, position_ids, bucket or n)
        taps = tuple(taps)
        out = self._replay(slots, bucket, inputs, taps) if bucket and self.graphs else self._eager(slots, inputs, taps)
        slots.length += n
        keep = slice(n - logits_to_keep, n)
        rows = slice(n - max(feature_rows or logits_to_keep, logits_to_keep), n)
        tapped = out.taps[:, rows].clone() if out.taps is not None else None
        return LeanOutput(logits=out.logits[:, keep].clone(), features=out.features[:, rows].clone(), taps=tapped)

    def _inputs(self, slots: Slots, ids: torch.Tensor, mask: torch.Tensor | None, positions: torch.Tensor | None,
                rows: int) -> Inputs:
        """The call's inputs padded to `rows`, the key columns widened to the whole capacity."""
        n, filled, dev = ids.shape[1], slots.length, self._device
        slots.reserve(filled + rows)
        positions, mask = call_defaults(n, filled, positions, mask, dev)
        wide = torch.full((1, 1, rows, slots.capacity), torch.finfo(self._dtype).min, dtype=self._dtype, device=dev)
        wide[..., :n, : filled + n] = mask.to(device=dev, dtype=self._dtype)
        pad = torch.arange(n, rows, device=dev)
        wide[0, 0, pad, filled + pad] = 0  # a padded row sees its own slot only
        padded = torch.zeros(1, rows, dtype=torch.long, device=dev)
        positions_padded = padded.clone()
        padded[:, :n], positions_padded[:, :n] = ids, positions
        return Inputs(padded, positions_padded, wide, torch.arange(filled, filled + rows, device=dev))

    def _eager(self, slots: Slots, inputs: Inputs, taps: tuple[int, ...] = ()) -> LeanOutput:
        slots.write_at = inputs.write_at
        return LeanLlama.forward(self, inputs.ids, inputs.mask, inputs.positions, slots,
                                 logits_to_keep=inputs.ids.shape[1], taps=taps)

    def _replay(self, slots: Slots, bucket: int, inputs: Inputs, taps: tuple[int, ...] = ()) -> LeanOutput:
        key = (bucket, taps) if taps else bucket
        captured = slots.graphs.get(key)
        if captured is None:
            try:
                captured = slots.graphs[key] = self._capture(slots, inputs, taps)  # it ran this call's inputs
            except RuntimeError as err:  # a driver or build that cannot capture: the same forward, eagerly
                warnings.warn(f"CUDA graph capture failed ({err}); the target runs without graphs", stacklevel=2)
                self.graphs = self.padded = False  # later calls: eager and unpadded
                return self._eager(slots, inputs, taps)
        else:
            captured.inputs.fill(inputs)
        captured.graph.replay()
        return captured.out

    def _capture(self, slots: Slots, inputs: Inputs, taps: tuple[int, ...] = ()) -> Captured:
        """A graph of `_eager` on static copies of `inputs`; the warm-up runs compute this very call (the same
        slots get the same keys and values), so the replay that follows is the call's result."""
        static = Inputs(*(t.clone() for t in (inputs.ids, inputs.positions, inputs.mask, inputs.write_at)))
        graph, out = capture(lambda: self._eager(slots, static, taps), self._device, slots)
        return Captured(graph, static, out)


def supports_graphs(model) -> bool:
    """Whether `model` is a llama-style model wholly on one CUDA device (what GraphedLlama runs; a model spread
    over several GPUs by device_map keeps transformers' forward), and graphs are allowed here (graphs_allowed)."""
    from decoding.models.lean.llama import supports

    devices = {p.device for p in model.parameters()}
    return len(devices) == 1 and next(iter(devices)).type == "cuda" and supports(model) and graphs_allowed()


def graphs_allowed() -> bool:
    """False where SPECSCOPE_CUDA_GRAPHS=0, and on ZeroGPU (the `spaces` package: each GPU call may run in
    another process, so a graph captured in one call cannot serve the next)."""
    return os.environ.get("SPECSCOPE_CUDA_GRAPHS", "1").strip() != "0" and not on_zerogpu()


def on_zerogpu() -> bool:
    """Whether the `spaces` package (ZeroGPU's) is installed; read here, not from hub/space.py, which sits above."""
    return importlib.util.find_spec("spaces") is not None
