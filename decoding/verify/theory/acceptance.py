"""The value every acceptance route returns: theory (generic routes) and theory_wor (rrs_wor) share it.

Its own module so that theory_wor need not import theory, which calls it (no import cycle).
"""

from __future__ import annotations

from dataclasses import dataclass

METHODS = ("closed_form", "enumeration", "monte_carlo")


@dataclass(frozen=True)
class Acceptance:
    """Acceptance probability at one node; stderr is 0.0 unless method == "monte_carlo"."""

    value: float
    stderr: float
    method: str

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"unknown method {self.method!r}; known: {', '.join(METHODS)}")
