"""A frozen, validated decoding configuration, plus named presets.

Validation happens here, once, with messages a user can act on; the engine trusts a DecodeConfig.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

# Bounds that keep one step affordable on a shared CPU Space; raise them for local research runs.
MAX_NODES = 128
MAX_DEPTH = 12
MAX_BRANCH = 16
MAX_NEW_TOKENS = 1024
MAX_TOP_N = 32


@dataclass(frozen=True)
class DecodeConfig:
    verifier: str = "rrs_wor"
    branching: tuple[int, ...] = (3, 2, 2)  # children per node at each depth (used when sequences == 0)
    sequences: int = 0  # K > 0: K independent draft sequences of length `depth`, merged into a trie
    depth: int = 0
    temperature: float = 0.8
    top_k: int = 0
    top_p: float = 1.0
    seed: int = 0
    max_new_tokens: int = 64
    chat: bool = True
    top_n: int = 8  # how many tokens of p and q each node keeps in its record
    record: bool = True  # False: fast path, no per-node tests or theory (benchmarks)
    adaptive: bool = False  # chains only: each step's length (1..len(branching)) chosen from past steps

    def __post_init__(self) -> None:
        from decoding.verify.registry import VERIFIERS  # registry import kept local: config is imported early

        if self.verifier not in VERIFIERS:
            raise ValueError(f"unknown verifier {self.verifier!r}; choose one of: {', '.join(VERIFIERS)}")
        entry = VERIFIERS[self.verifier]
        for k in self.level_widths:
            entry.check_k(k)
        if self.sequences:
            if self.depth < 1:
                raise ValueError("--sequences needs --depth >= 1")
            if entry.law not in ("iid", "any"):
                raise ValueError(
                    f"K independent sequences give i.i.d. candidates; verifier {self.verifier!r} needs "
                    f"the {entry.law!r} law: use a branching tree (e.g. 3,2,2) instead"
                )
        elif not self.branching:
            raise ValueError("the tree needs at least one level, e.g. branching 3,2,2 or a chain 1,1,1,1")
        if self.adaptive and (self.sequences or any(b != 1 for b in self.branching)):
            raise ValueError("adaptive length needs a chain (branching 1,1,...,1): its length is what adapts")
        self._check_ranges()

    def _check_ranges(self) -> None:
        if any(b < 1 or b > MAX_BRANCH for b in self.branching):
            raise ValueError(f"each level's branching must be between 1 and {MAX_BRANCH}, got {self.branching}")
        if self.tree_depth > MAX_DEPTH:
            raise ValueError(f"tree depth {self.tree_depth} exceeds the limit of {MAX_DEPTH}")
        if self.max_tree_nodes > MAX_NODES:
            raise ValueError(f"the tree would have up to {self.max_tree_nodes} nodes; the limit is {MAX_NODES}")
        if not (math.isfinite(self.temperature) and 0 <= self.temperature <= 10):
            raise ValueError(f"temperature must be between 0 and 10, got {self.temperature}")
        if not 0 <= self.top_k <= 1_000_000:
            raise ValueError(f"top-k must be >= 0 (0 = off), got {self.top_k}")
        if not (math.isfinite(self.top_p) and 0 < self.top_p <= 1):
            raise ValueError(f"top-p must be in (0, 1] (1 = off), got {self.top_p}")
        if not 1 <= self.max_new_tokens <= MAX_NEW_TOKENS:
            raise ValueError(f"max new tokens must be between 1 and {MAX_NEW_TOKENS}, got {self.max_new_tokens}")
        if not 1 <= self.top_n <= MAX_TOP_N:
            raise ValueError(f"top-N must be between 1 and {MAX_TOP_N}, got {self.top_n}")
        if not 0 <= self.seed < 2**63:
            raise ValueError(f"seed must be a non-negative integer below 2^63, got {self.seed}")

    @property
    def tree_depth(self) -> int:
        return self.depth if self.sequences else len(self.branching)

    @property
    def level_widths(self) -> tuple[int, ...]:
        """Largest number of candidates at a node of each depth."""
        return (self.sequences,) * self.depth if self.sequences else self.branching

    @property
    def max_tree_nodes(self) -> int:
        """Upper bound on drafted nodes (root excluded)."""
        if self.sequences:
            return self.sequences * self.depth
        total, width = 0, 1
        for b in self.branching:
            width *= b
            total += width
        return total

    def shape_text(self) -> str:
        if self.sequences:
            return f"{self.sequences} sequences x depth {self.depth}"
        return ",".join(str(b) for b in self.branching)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["branching"] = list(self.branching)
        return d

    @staticmethod
    def from_dict(d: dict) -> DecodeConfig:
        d = dict(d)
        d["branching"] = tuple(d.get("branching", (3, 2, 2)))  # a missing `adaptive` (older traces): False
        return DecodeConfig(**d)

    def with_(self, **changes) -> DecodeConfig:
        return replace(self, **changes)


def parse_branching(text: str) -> tuple[int, ...]:
    """'3,2,2' -> (3, 2, 2), with a clear error for anything else."""
    parts = [t.strip() for t in str(text).split(",")]
    if not parts or not all(t.isdigit() for t in parts):
        raise ValueError(f"tree shape must be comma-separated positive integers like 3,2,2; got {text!r}")
    return tuple(int(t) for t in parts)


def presets() -> dict[str, DecodeConfig]:
    """Named starting points for demos (built on call: they validate against the registry)."""
    return {
        "chain of 4 (standard SD)": DecodeConfig(verifier="sd", branching=(1, 1, 1, 1)),
        "3,2,2 tree, RRS without replacement": DecodeConfig(verifier="rrs_wor", branching=(3, 2, 2)),
        "4 sequences x depth 4, SpecTr": DecodeConfig(verifier="spectr", sequences=4, depth=4),
        "binary tree depth 3, SpecHub": DecodeConfig(verifier="spechub", branching=(2, 2, 2)),
        "greedy (T = 0), 3,2,2": DecodeConfig(verifier="greedy", temperature=0.0),
    }
