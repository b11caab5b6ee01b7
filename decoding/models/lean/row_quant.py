"""int8 dynamic products with ONE activation scale PER ROW, so a row's output never depends on its batch.

Why: fbgemm's dynamic int8 product (`quantized.linear_dynamic`) quantizes its whole input with one scale
from the input's min and max. A row's q then depended on which other rows shared its forward: a run rebuilt
from its plain state (one prefill of the context) drew from a q that differed from the uninterrupted run's
(the context's keys and values had been built a tree level at a time), up to 0.25 in one probability, so
the same seed continued differently.

The trick keeps the fast fused op: each row is divided by its own max |x| (then every entry is in [-1, 1],
the row's largest exactly +-1), and one GUARD row holding -1 and +1 is appended, so the input's min and
max are exactly -1 and 1 whatever the batch: the op's scale and zero point are the same constants for
every call. Each row is then quantized on that fixed grid (elementwise), its integer products are summed
exactly (int32), and the output row is multiplied back by the row's max |x|. A row's output is a
function of that row alone, bit for bit (tests/models/test_row_quant.py), and no coarser than before: a
row's grid spans its own range instead of the batch's.
"""

from __future__ import annotations

import warnings

import torch

TINY = 1e-30  # an all-zero row stays all zero (0 / TINY = 0)


def guard_row(width: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """[1, width]: -1 and +1 (the fixed min and max of every normalised input), zeros elsewhere."""
    guard = torch.zeros(1, width, dtype=dtype)
    guard[0, 0], guard[0, -1] = -1.0, 1.0
    return guard


def per_row(product, x: torch.Tensor) -> torch.Tensor:
    """`product` (a dynamic int8 linear: [n, in] -> [n, out]) applied with each row of x [..., in] quantized
    on its own scale; [..., out]."""
    rows = x.reshape(-1, x.shape[-1])  # [n, in]
    scale = rows.abs().amax(-1, keepdim=True).clamp(min=TINY)  # [n, 1]
    guarded = torch.cat([rows / scale, guard_row(rows.shape[-1], rows.dtype)])  # [n + 1, in]; guard last
    out = product(guarded)[:-1] * scale  # [n, out]
    return out.reshape(*x.shape[:-1], out.shape[-1])


class PerRowLinear(torch.nn.Module):
    """A quantized dynamic Linear (torch.ao) whose activations are quantized per row (see the module docstring)."""

    def __init__(self, inner: torch.nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return per_row(self.inner, x)


def per_row_activations(model: torch.nn.Module) -> torch.nn.Module:
    """Wrap every quantized dynamic Linear of `model` (in place) so its activations get one scale per row."""
    from torch.ao.nn.quantized.dynamic import Linear as DynamicLinear

    targets = [(name, module) for name, module in model.named_modules() if isinstance(module, DynamicLinear)]
    for name, module in targets:
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, child, PerRowLinear(module))
    return model


def int8_linears(model, keep_float: tuple[str, ...] = ()) -> torch.nn.Module:
    """int8 per-output-channel dynamic weights on every nn.Linear of `model` whose name does not end with
    one of `keep_float` (in place)."""
    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

    spec = {name: per_channel_dynamic_qconfig for name, module in model.named_modules()
            if isinstance(module, torch.nn.Linear) and not (keep_float and name.endswith(keep_float))}
    with warnings.catch_warnings():  # torch.ao.quantization is deprecated, and still the simplest tool here
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        warnings.filterwarnings("ignore", message=".*deprecated.*", category=UserWarning)
        return quantize_dynamic(model, spec, dtype=torch.qint8, inplace=True)
