"""StepRecord and the trace: the one plain-data type that crosses from decoding to viz.

Frozen dataclasses of ints, floats, strs, bools, None and tuples only: JSON round-trippable,
a few kB per step. `trace_to_json` / `trace_from_json` are the versioned file format.
"""

from __future__ import annotations

import json
from dataclasses import MISSING, dataclass, fields, is_dataclass
from typing import Any, get_args, get_origin, get_type_hints

from decoding.run.compare_schema import CompareRecord
from decoding.verify.origins import BONUS, DRAFT, RESIDUAL, RESIDUAL_HIT  # noqa: F401 - re-exported for viz

TRACE_FORMAT = "specscope-trace"
TRACE_VERSION = 1

# Node statuses in a step's tree; the emitted token is described by EmittedRecord.kind.
ROOT, ACCEPTED, REJECTED, UNREACHED = "root", "accepted", "rejected", "unreached"
STATUSES = (ROOT, ACCEPTED, REJECTED, UNREACHED)


@dataclass(frozen=True)
class TokenProb:
    token: int
    text: str
    p: float  # target probability (warped)
    q: float  # draft probability (warped); 0.0 where the node has no draft row (a leaf)


@dataclass(frozen=True)
class NodeRecord:
    id: int
    parent: int  # -1 for the root
    token: int
    text: str
    depth: int
    status: str  # one of STATUSES
    p_token: float | None  # p(token | parent's prefix); None for the root
    q_token: float | None  # q(token | parent's prefix); None for the root
    top: tuple[TokenProb, ...]  # top-N of this node's next-token p and q (union, by p then q)
    draws: tuple[int, ...]  # child node of each candidate drawn here, in draw order


@dataclass(frozen=True)
class TestRecord:
    candidate: int  # index into the node's draws; -1 when the test is on no candidate
    token: int
    text: str
    numerator: float
    denominator: float
    threshold: float
    uniform: float
    passed: bool
    label: str


@dataclass(frozen=True)
class UpdateRecord:
    after_test: int
    note: str
    residual_top: tuple[TokenProb, ...]  # p field = residual probability; q field = current draft d (or 0)


@dataclass(frozen=True)
class VisitRecord:
    """Verification at one node on the accepted path."""

    node: int
    candidates: tuple[int, ...]  # candidate tokens, draw order
    accepted: int | None  # index into candidates
    via_residual: bool
    token: int  # emitted at this node (the accepted candidate, or the residual sample)
    tests: tuple[TestRecord, ...]
    updates: tuple[UpdateRecord, ...]
    alpha_exact: float | None  # exact acceptance of this verifier at this node, under its law
    alpha_stderr: float  # 0 when alpha_exact is exact; Monte-Carlo standard error otherwise
    alpha_optimal: float | None  # optimal-transport bound for the law and k


@dataclass(frozen=True)
class EmittedRecord:
    token: int
    text: str
    kind: str  # DRAFT, RESIDUAL, BONUS or RESIDUAL_HIT
    node: int  # tree node it extends (the last accepted node); for DRAFT/RESIDUAL_HIT the node itself


@dataclass(frozen=True)
class TreeEventRecord:
    """One test of a tree-level verifier (block, traversal, typical_medusa), in the order it happened:
    block "coin"/"tau", traversal "try"/"delete", typical_medusa "typical"/"choose", then "emit"."""

    kind: str
    node: int  # the tree node it is about
    token: int
    text: str
    numerator: float | None
    denominator: float | None
    threshold: float | None  # the probability tested (h_i, w(leaf)) or the value computed
    uniform: float | None  # the coin, when one was drawn
    passed: bool | None
    label: str  # what the numbers are
    note: str  # why, in words
    rows: tuple[TokenProb, ...] = ()  # updated target (p field) and draft (q field) rows, or the emission law


@dataclass(frozen=True)
class StepRecord:
    index: int
    verifier: str
    law: str
    nodes: tuple[NodeRecord, ...]
    visits: tuple[VisitRecord, ...]
    accepted_path: tuple[int, ...]  # node ids, root first
    emitted: tuple[EmittedRecord, ...]  # every token this step adds, in order
    expected_tokens: float | None  # exact E[tokens this step] given this drafted tree
    target_forwards: int
    draft_forwards: int
    draft_ms: float
    target_ms: float
    verify_ms: float
    compare: CompareRecord | None = None  # several verifiers on this step (decoding/compare); None otherwise
    tree_events: tuple[TreeEventRecord, ...] = ()  # tree-level verifiers' story (empty for node-level ones)
    record_ms: float = 0.0  # building this record (node records, exact theory, expected tokens): not decoding

    @property
    def decode_ms(self) -> float:
        """The step's decoding time (draft + target + verify), what plain decoding is compared with."""
        return self.draft_ms + self.target_ms + self.verify_ms

    @property
    def n_emitted(self) -> int:
        return len(self.emitted)

    def status_counts(self) -> dict[str, int]:
        counts = {s: 0 for s in STATUSES}
        for node in self.nodes:
            counts[node.status] += 1
        return counts


@dataclass(frozen=True)
class RunSummary:
    steps: int
    new_tokens: int
    target_forwards: int
    draft_forwards: int
    tokens_per_forward: float
    expected_tokens_per_forward: float | None
    seconds: float
    stop_reason: str  # "eos", "max_new_tokens", "context", "stopped"


@dataclass(frozen=True)
class Trace:
    models: dict
    config: dict
    prompt: str
    prompt_ids: tuple[int, ...]
    generated_ids: tuple[int, ...]
    text: str
    steps: tuple[StepRecord, ...]
    summary: RunSummary | None


# ---- JSON ----------------------------------------------------------------------------------------


def to_plain(obj: Any) -> Any:
    """Dataclasses/tuples -> dicts/lists (JSON-ready)."""
    if is_dataclass(obj):
        return {f.name: to_plain(getattr(obj, f.name)) for f in fields(obj)}
    if isinstance(obj, (list, tuple)):
        return [to_plain(x) for x in obj]
    if isinstance(obj, dict):
        return {str(k): to_plain(v) for k, v in obj.items()}
    return obj


def from_plain(cls: type, data: Any) -> Any:
    """Inverse of to_plain for the record types (type-hint driven)."""
    return _build(cls, data)


def _build(tp: Any, data: Any) -> Any:
    origin = get_origin(tp)
    if is_dataclass(tp):
        if not isinstance(data, dict):
            raise ValueError(f"expected an object for {tp.__name__}, got {type(data).__name__}")
        hints = get_type_hints(tp)
        missing = [f.name for f in fields(tp) if f.name not in data and not _has_default(f)]
        if missing:
            raise ValueError(f"{tp.__name__} is missing fields: {', '.join(missing)}")
        present = [f for f in fields(tp) if f.name in data]  # absent optional fields keep their default
        return tp(**{f.name: _build(hints[f.name], data[f.name]) for f in present})
    if origin is tuple:
        args = get_args(tp)
        inner = args[0] if args else Any
        return tuple(_build(inner, x) for x in data)
    if origin is dict or tp is dict:
        return dict(data)
    if _is_optional(tp):
        inner = [a for a in get_args(tp) if a is not type(None)][0]
        return None if data is None else _build(inner, data)
    if tp is float:
        return float(data)
    if tp in (int, str, bool):
        if not isinstance(data, tp if tp is not int else (int,)) or (tp is int and isinstance(data, bool)):
            raise ValueError(f"expected {tp.__name__}, got {data!r}")
        return data
    return data


def _has_default(f: Any) -> bool:
    """Fields added later carry a default, so traces written before them still load."""
    return f.default is not MISSING or f.default_factory is not MISSING


def _is_optional(tp: Any) -> bool:
    return type(None) in get_args(tp)


def trace_to_json(trace: Trace) -> str:
    body = {"format": TRACE_FORMAT, "version": TRACE_VERSION, **to_plain(trace)}
    return json.dumps(body, ensure_ascii=False, allow_nan=False)


def trace_from_json(text: str) -> Trace:
    """Parse and validate a trace file; ValueError with a readable message when it is not one."""
    try:
        body = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"not a JSON file: {err}") from None
    if not isinstance(body, dict) or body.get("format") != TRACE_FORMAT:
        raise ValueError(f"not a specscope trace (expected format {TRACE_FORMAT!r})")
    if body.get("version") != TRACE_VERSION:
        raise ValueError(f"trace version {body.get('version')!r} is not supported (this build reads {TRACE_VERSION})")
    body = {k: v for k, v in body.items() if k not in ("format", "version")}
    try:
        return from_plain(Trace, body)
    except (TypeError, KeyError, IndexError, ValueError) as err:
        raise ValueError(f"malformed trace: {err}") from None


def step_to_dict(step: StepRecord) -> dict:
    return to_plain(step)


def step_from_dict(d: dict) -> StepRecord:
    return from_plain(StepRecord, d)


