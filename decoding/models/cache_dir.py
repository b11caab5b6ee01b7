"""specscope's cache directory: converted models, compiled kernels, this machine's calibrations.

SPECSCOPE_CACHE when set, else $XDG_CACHE_HOME/specscope, else ~/.cache/specscope.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """The folder every cached file of specscope lives under (read from the environment at each call)."""
    if os.environ.get("SPECSCOPE_CACHE"):
        return Path(os.environ["SPECSCOPE_CACHE"]).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "specscope"
