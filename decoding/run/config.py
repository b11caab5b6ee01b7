"""A frozen, validated decoding configuration (its draft shape a type: Branching or Sequences).

Validation happens here, once, with messages a user can act on; the engine trusts a DecodeConfig.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace

from decoding.run.costs import StepCosts

# Bounds that keep one step affordable on a shared CPU Space; raise them for local research runs.
MAX_NODES = 128
MAX_DEPTH = 12
MAX_BRANCH = 16
MAX_NEW_TOKENS = 1024
MAX_TOP_N = 32
MAX_TOP_K = 1_000_000  # far above any vocabulary: a top-k of at least V keeps every token


@dataclass(frozen=True)
class Branching:
    """A tree drafted level by level: a node at depth d draws levels[d] candidates with the verifier's law."""

    levels: tuple[int, ...]

    @property
    def widths(self) -> tuple[int, ...]:
        return self.levels

    @property
    def max_nodes(self) -> int:
        total, width = 0, 1
        for b in self.levels:
            width *= b
            total += width
        return total

    def text(self) -> str:
        return ",".join(str(b) for b in self.levels)

    def check(self) -> None:
        if not self.levels:
            raise ValueError("the tree needs at least one level, e.g. branching 3,2,2 or a chain 1,1,1,1")
        if any(b < 1 or b > MAX_BRANCH for b in self.levels):
            raise ValueError(f"each level's branching must be between 1 and {MAX_BRANCH}, got {self.levels}")


@dataclass(frozen=True)
class Sequences:
    """K independent draft sequences of length `depth`, merged into a trie (children are i.i.d. draws)."""

    k: int
    depth: int

    @property
    def widths(self) -> tuple[int, ...]:
        return (self.k,) * self.depth

    @property
    def max_nodes(self) -> int:
        return self.k * self.depth

    def text(self) -> str:
        return f"{self.k} sequences x depth {self.depth}"

    def check(self) -> None:
        if self.depth < 1:
            raise ValueError("--sequences needs --depth >= 1")


Shape = Branching | Sequences


def shape_of(branching=None, sequences: int = 0, depth: int = 0) -> Shape:
    """The shape the flat keys of old callers and old traces describe (sequences > 0 wins)."""
    if sequences:
        return Sequences(int(sequences), int(depth))
    return Branching(tuple(int(b) for b in (branching if branching is not None else (3, 2, 2))))


@dataclass(frozen=True)
class _Settings:
    verifier: str = "rrs_wor"
    shape: Shape = Branching((3, 2, 2))
    temperature: float = 0.8
    top_k: int = 0
    top_p: float = 1.0
    seed: int = 0
    max_new_tokens: int = 48  # the page's, the CLI's and the API's default budget (ui/session.Controls reads it)
    chat: bool = True
    top_n: int = 8  # how many tokens of p and q each node keeps in its record
    record: bool = True  # False: fast path, no per-node tests or theory (benchmarks)
    adaptive: bool = False  # chains only: each step's length (1..len(branching)) chosen from past steps
    fuzzy_threshold: float | None = None  # fuzzy's JS threshold T (nats); None: rules/fuzzy.DEFAULT_THRESHOLD
    cactus_delta: float | None = None  # cactus's per-candidate budget delta; None: rules/cactus.DEFAULT_DELTA
    costs: StepCosts | None = None  # this machine's calibrated costs: adaptive decides from them (run/costs.py)
    drafting: bool = True  # False: the target alone, one one-row target forward a step (no draft is asked)
    min_confidence: float = 0.0  # a drafted node gets children only where the draft's own probability of its
    # path is at least this (EAGLE-2's dynamic depth, run/confidence.py); 0: every node of the shape

    def __post_init__(self) -> None:
        from decoding.verify.registry import lookup  # registry import kept local: config is imported early

        entry = lookup(self.verifier)
        if not isinstance(self.shape, Branching | Sequences):
            raise ValueError(f"the draft shape must be Branching(levels) or Sequences(k, depth), got {self.shape!r}")
        self._fill_fuzzy_threshold()
        self._fill_cactus_delta()
        self.shape.check()
        for k in self.level_widths:
            entry.check_k(k)
        if isinstance(self.shape, Sequences) and not entry.law.iid_compatible:
            raise ValueError(
                f"K independent sequences give i.i.d. candidates; verifier {self.verifier!r} needs "
                f"the {str(entry.law)!r} law: use a branching tree (e.g. 3,2,2) instead"
            )
        if self.costs is not None and not isinstance(self.costs, StepCosts):
            raise ValueError(f"costs must be a StepCosts (decoding.run.costs), got {type(self.costs).__name__}")
        if self.adaptive and not (isinstance(self.shape, Branching) and set(self.shape.levels) == {1}):
            raise ValueError("adaptive length needs a chain (branching 1,1,...,1): its length is what adapts")
        self._check_ranges()

    def _fill_fuzzy_threshold(self) -> None:
        """None becomes the rule's default, so traces record the value used; a bad value is one line."""
        from decoding.verify.rules.fuzzy import DEFAULT_THRESHOLD  # local: config is imported early (no torch)

        self._fill_budget("fuzzy_threshold", DEFAULT_THRESHOLD, "the fuzzy threshold is a JS divergence in nats, "
                          ">= 0 (ln 2 = 0.693 accepts every candidate)")

    def _fill_cactus_delta(self) -> None:
        """None becomes the rule's default; a bad value is one line (docs/verifiers.md §18)."""
        from decoding.verify.rules.cactus import DEFAULT_DELTA  # local: config is imported early (no torch)

        self._fill_budget("cactus_delta", DEFAULT_DELTA, "the cactus delta is a divergence budget, a finite "
                          "number >= 0 (0 is plain SD)")

    def _fill_budget(self, name: str, default: float, what: str) -> None:
        """A lossy rule's budget field: None becomes `default`; anything but a finite number >= 0 is refused in
        one line that starts with `what`."""
        if getattr(self, name) is None:
            object.__setattr__(self, name, default)
        v = getattr(self, name)
        if isinstance(v, bool) or not isinstance(v, int | float) or not (math.isfinite(v) and v >= 0):
            raise ValueError(f"{what}; got {v!r}")
        object.__setattr__(self, name, float(v))

    def _check_ranges(self) -> None:
        if self.tree_depth > MAX_DEPTH:
            raise ValueError(f"tree depth {self.tree_depth} exceeds the limit of {MAX_DEPTH}")
        if self.max_tree_nodes > MAX_NODES:
            raise ValueError(f"the tree would have up to {self.max_tree_nodes} nodes; the limit is {MAX_NODES}")
        if not (math.isfinite(self.temperature) and 0 <= self.temperature <= 10):
            raise ValueError(f"temperature must be between 0 and 10, got {self.temperature}")
        if not 0 <= self.top_k <= MAX_TOP_K:
            raise ValueError(f"top-k must be between 0 (off) and {MAX_TOP_K}, got {self.top_k}")
        if not (math.isfinite(self.top_p) and 0 < self.top_p <= 1):
            raise ValueError(f"top-p must be in (0, 1] (1 = off), got {self.top_p}")
        if not 1 <= self.max_new_tokens <= MAX_NEW_TOKENS:
            raise ValueError(f"max new tokens must be between 1 and {MAX_NEW_TOKENS}, got {self.max_new_tokens}")
        if not 1 <= self.top_n <= MAX_TOP_N:
            raise ValueError(f"top-N must be between 1 and {MAX_TOP_N}, got {self.top_n}")
        if isinstance(self.min_confidence, bool) or not isinstance(self.min_confidence, int | float) or not (
                math.isfinite(self.min_confidence) and 0 <= self.min_confidence <= 1):
            raise ValueError("the minimum confidence is a probability in [0, 1] (0 = off), "
                             f"got {self.min_confidence!r}")
        object.__setattr__(self, "min_confidence", float(self.min_confidence))
        if not 0 <= self.seed < 2**63:
            raise ValueError(f"seed must be a non-negative integer below 2^63, got {self.seed}")


class DecodeConfig(_Settings):
    """A validated configuration: the verifier, the draft `shape` (Branching or Sequences), the warp, the seed.

    The flat keywords of older callers, `branching=`, `sequences=` and `depth=`, still build the
    shape (DecodeConfig(sequences=4, depth=4) is DecodeConfig(shape=Sequences(4, 4))), and the JSON
    keeps those flat keys, so old traces load and old readers keep working.
    """

    def __init__(self, *args, branching=None, sequences: int = 0, depth: int = 0, **settings) -> None:
        if branching is not None or sequences or depth:
            if "shape" in settings:
                raise ValueError("give the draft shape once: shape=, or branching= / sequences= and depth=")
            settings["shape"] = shape_of(branching, sequences, depth)
        super().__init__(*args, **settings)

    @property
    def tree_depth(self) -> int:
        return len(self.level_widths)

    @property
    def level_widths(self) -> tuple[int, ...]:
        """Largest number of candidates at a node of each depth."""
        return self.shape.widths

    @property
    def max_tree_nodes(self) -> int:
        """Upper bound on drafted nodes (root excluded)."""
        return self.shape.max_nodes

    # flat views of the shape, as the JSON writes them (0 / () where the shape has no such key)
    @property
    def branching(self) -> tuple[int, ...]:
        return self.shape.levels if isinstance(self.shape, Branching) else ()

    @property
    def sequences(self) -> int:
        return self.shape.k if isinstance(self.shape, Sequences) else 0

    @property
    def depth(self) -> int:
        return self.shape.depth if isinstance(self.shape, Sequences) else 0

    def shape_text(self) -> str:
        return self.shape.text()

    def to_dict(self) -> dict:
        flat = {"verifier": self.verifier, "branching": list(self.branching), "sequences": self.sequences,
                "depth": self.depth}  # the keys and order traces have always had
        rest = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("verifier", "shape")}
        for key, default in _WRITTEN_WHEN_SET.items():  # absent at their default: older readers see no new key
            if rest[key] == default:
                del rest[key]
        from decoding.verify.rules.cactus import DEFAULT_DELTA  # local, as in _fill_cactus_delta

        if self.verifier != "cactus" and self.cactus_delta == DEFAULT_DELTA:  # written for a cactus run or when set
            del rest["cactus_delta"]
        if self.costs is not None:
            rest["costs"] = self.costs.to_dict()
        return {**flat, **rest}

    @staticmethod
    def from_dict(d: dict) -> DecodeConfig:
        d = dict(d)
        shape = shape_of(d.pop("branching", None), d.pop("sequences", 0), d.pop("depth", 0))
        if d.get("costs") is not None:
            if not isinstance(d["costs"], dict):
                raise ValueError("costs: expected an object")
            d["costs"] = StepCosts.from_dict(d["costs"])
        return DecodeConfig(shape=shape, **d)

    def entry(self):
        """The registry entry this config runs, with the parameters it sets (fuzzy's threshold)."""
        from decoding.verify.registry import VERIFIERS

        return VERIFIERS[self.verifier].configured(self)

    def with_(self, **changes) -> DecodeConfig:
        return replace(self, **changes)


_WRITTEN_WHEN_SET = {"costs": None, "drafting": True, "min_confidence": 0.0}


def parse_branching(text: str, field: str = "tree shape") -> tuple[int, ...]:
    """'3,2,2' -> (3, 2, 2): the one tree-shape parser (the page, links, the CLIs, the lab, the bench). Spaces
    around a count are allowed; anything else that is not a positive whole number is refused with one line naming
    `field` as the caller shows it (the page's "tree shape", a CLI's flag). Limits (MAX_BRANCH) are the config's."""
    parts = [t.strip() for t in str(text).split(",")]
    if not all(t.isdigit() and int(t) > 0 for t in parts):
        raise ValueError(f"{field} must be comma-separated positive integers like 3,2,2 or 1,1,1; got {text!r}")
    return tuple(int(t) for t in parts)


