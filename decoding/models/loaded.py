"""The process-wide load cache: models and tokenizers loaded once, shared read-only by every pair and run.

Keyed by (model id, device, dtype). It holds weights only: a `ModelPair` hands out fresh sessions (TreeLMs
with their own KV caches) per run, so runs and users never share state through it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_LOADED: dict[tuple[str, str, str], Any] = {}  # (model id, device, dtype) -> model or tokenizer, read-only
_LOCK = threading.RLock()


def cached(key: tuple[str, str, str], load: Callable[[], T]) -> T:
    """The object under `key`, loaded once per process (concurrent callers wait for one load)."""
    with _LOCK:
        if key not in _LOADED:
            _LOADED[key] = load()
        return _LOADED[key]
