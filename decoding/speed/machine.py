"""What identifies a machine for speed (a calibration measured here holds only here), and its cache file.

The key: the CPU model (or the GPU's name), the torch build (version, MKL, oneDNN, CUDA), the threads torch uses and
the pair (for a pair whose draft is the shipped head, the head's weights too: a retrained head drafts at another
cost and acceptance). Any change makes a new key and so a new calibration; the file is a small JSON in the specscope
cache dir (SPECSCOPE_CACHE, else $XDG_CACHE_HOME/specscope, else ~/.cache/specscope), under speed/.
"""

from __future__ import annotations

import functools
import hashlib
import json
import platform
import re
from pathlib import Path

import torch

from decoding.models.cache_dir import cache_root
from decoding.models.head import weights as draft_head
from decoding.models.head.ranked_ids import IDS

HEAD_KINDS = ("embedded-head",)  # pairs whose draft is the shipped head (its digest is in every key)


def cpu_model() -> str:
    """`lscpu`'s model name, read from /proc/cpuinfo (Linux), else what platform says."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        found = re.search(r"^model name\s*:\s*(.+)$", text, re.MULTILINE)
        if found:
            return found.group(1).strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def device_name(device: str) -> str:
    if device.startswith("cuda") and torch.cuda.is_available():
        return torch.cuda.get_device_name(torch.device(device))
    return cpu_model()


def machine_key(pair_kind: str, device: str = "cpu", threads: int | None = None) -> dict:
    return {
        "device": device,
        "model": device_name(device),
        "torch": torch.__version__,
        "mkl": bool(torch.backends.mkl.is_available()),
        "mkldnn": bool(torch.backends.mkldnn.is_available()),
        "cuda": torch.version.cuda or "",
        "threads": int(threads if threads is not None else torch.get_num_threads()),
        "pair": pair_kind,
    } | ({"head": head_digest()} if pair_kind in HEAD_KINDS else {})


def head_digest(folder: Path = draft_head.HEAD_DIR) -> str:
    """sha256 of the shipped head's weights, and of the ids it scores where its folder ranks them
    (ranked_ids.py): a retrained head, or the same head scoring other ids, is another draft. Each file hashed
    once per version (its size and modification time), not at every load of the pair (each Step loads it: 6 ms
    for 9.8 MB)."""
    weights = _digest(folder / draft_head.WEIGHTS)
    if not (folder / IDS).exists():
        return weights  # a head without a ranking: the key it always had
    return hashlib.sha256(f"{weights} {_digest(folder / IDS)}".encode()).hexdigest()[:16]


def _digest(path: Path) -> str:
    stat = path.stat()
    return _file_digest(path, stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=8)
def _file_digest(path: Path, size: int, mtime_ns: int) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def cache_file(key: dict, root: Path | None = None) -> Path:
    return keyed_file(key, f"{key['pair']}-{key['device']}-{key['threads']}t", root)


def keyed_file(key: dict, name: str, root: Path | None = None) -> Path:
    """<specscope cache>/speed/<name>-<digest of key>.json: a readable name, one file per exact key."""
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower())
    return (root or cache_root()) / "speed" / f"{slug}-{digest}.json"


def write_atomic(path: Path, text: str) -> Path:
    """Write `text` to `path` through a temp file and a rename: never a half-written cache."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return path
