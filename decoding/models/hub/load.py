"""Loading transformers models and tokenizers from a hub id or a local folder, with readable errors.

Every error a user can cause (missing folder, no such model offline, not a causal LM, two models
with different vocabularies) becomes a one-line `ModelLoadError`. Nothing here keeps state:
`models.py` owns the process-wide load cache.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import torch


class ModelLoadError(ValueError):
    """A model pair that cannot be loaded, for a reason the user can fix; the message is one line."""


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0] if text else type(err).__name__


def looks_like_path(spec: str) -> bool:
    """A folder path rather than a hub id ('org/name' has exactly one slash and no leading . / ~)."""
    return spec.startswith((".", "~", "/")) or "\\" in spec or spec.count("/") > 1


def resolve_spec(spec: str) -> tuple[str, bool]:
    """(hub id or absolute folder, is_local). A path-like spec that is no folder is an error."""
    spec = str(spec).strip()
    if not spec:
        raise ModelLoadError("a model is named by an empty string")
    folder = Path(spec).expanduser()
    if folder.is_dir():
        return str(folder.resolve()), True
    if looks_like_path(spec):
        raise ModelLoadError(f"model folder not found: {spec} (no such directory)")
    return spec, False


def offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() not in ("", "0", "false", "no", "off")


def _source_kwargs(spec: str, is_local: bool) -> dict:
    return {"local_files_only": True} if is_local or offline() else {}


def _explain(spec: str, is_local: bool, what: str, err: BaseException) -> ModelLoadError:
    if not is_local and offline() and isinstance(err, OSError):
        return ModelLoadError(f"{spec!r} is neither a local folder nor in the local hub cache, and the hub "
                              f"is offline (HF_HUB_OFFLINE is set)")
    return ModelLoadError(f"could not load {what} of {spec!r}: {_first_line(err)}")


def resolve_device(device: str) -> str:
    """'auto' -> cuda, then mps, then cpu; a forced device must exist."""
    device = (device or "auto").strip().lower()
    has_mps = getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available()
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "mps" if has_mps else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ModelLoadError(f"device {device!r} was asked for, but torch sees no CUDA GPU here")
    if device == "mps" and not has_mps:
        raise ModelLoadError("device 'mps' was asked for, but torch sees no Apple GPU here")
    if device != "cpu" and not device.startswith(("cuda", "mps")):
        raise ModelLoadError(f"unknown device {device!r}; use auto, cpu, cuda, cuda:N or mps")
    return device


def default_dtype(device: str) -> torch.dtype:
    """bfloat16 on a GPU, float32 on the CPU."""
    return torch.float32 if device == "cpu" else torch.bfloat16


def load_tokenizer(spec: str):
    from transformers import AutoTokenizer

    name, is_local = resolve_spec(spec)
    try:
        return AutoTokenizer.from_pretrained(name, **_source_kwargs(name, is_local))
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise _explain(spec, is_local, "the tokenizer", err) from err


def load_causal_lm(spec: str, device: str, dtype: torch.dtype, progress: Callable[[str], None]):
    """A causal LM in eval mode on `device` (device_map='auto' on CUDA, so a big model spreads over GPUs)."""
    from transformers import AutoModelForCausalLM

    name, is_local = resolve_spec(spec)
    progress(f"loading {spec} ({device}, {str(dtype).removeprefix('torch.')})")
    placement = {"device_map": "auto"} if device.startswith("cuda") else {}
    try:
        model = AutoModelForCausalLM.from_pretrained(name, dtype=dtype, **placement, **_source_kwargs(name, is_local))
    except ValueError as err:
        if "Unrecognized configuration class" in str(err):
            raise ModelLoadError(f"{spec!r} is not a causal language model ({_first_line(err)[:160]})") from err
        raise _explain(spec, is_local, "the model", err) from err
    except (OSError, KeyError, TypeError) as err:
        raise _explain(spec, is_local, "the model", err) from err
    if not placement and device != "cpu":
        model = model.to(device)
    return model.eval()


def id_to_token(tokenizer) -> list[str | None]:
    """Token string of every id (None for an id with no token)."""
    vocab = tokenizer.get_vocab()
    table: list[str | None] = [None] * (max(vocab.values(), default=-1) + 1)
    for token, i in vocab.items():
        table[i] = token
    return table


def check_same_vocab(target_name: str, target_tok, draft_name: str, draft_tok) -> None:
    """Refuse a draft whose tokenizer maps any id to another token than the target's."""
    t, d = id_to_token(target_tok), id_to_token(draft_tok)
    if t == d:
        return
    n_t, n_d, n = len(t), len(d), max(len(t), len(d))
    t, d = t + [None] * (n - n_t), d + [None] * (n - n_d)
    first = next(i for i in range(n) if t[i] != d[i])
    t_str, d_str = t[first], d[first]
    raise ModelLoadError(
        f"draft {draft_name!r} and target {target_name!r} do not share a vocabulary: token id {first} is "
        f"{t_str!r} in the target but {d_str!r} in the draft ({n_t} vs {n_d} ids)"
    )
