"""StepRecord and the trace: the one plain-data type that crosses from decoding to viz.

Frozen dataclasses of ints, floats, strs, bools, None and tuples only: JSON round-trippable,
a few kB per step. `trace_to_json` / `trace_from_json` are the versioned file format.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
from collections.abc import Callable
from dataclasses import MISSING, dataclass, fields, is_dataclass
from pathlib import Path
from typing import Any, get_args, get_origin, get_type_hints

from decoding.run.compare_schema import CompareRecord
from decoding.verify.origins import BONUS, DRAFT, RESIDUAL, RESIDUAL_HIT  # noqa: F401 - re-exported for viz

TRACE_FORMAT = "specscope-trace"
TRACE_VERSION = 1
MAX_TRACE_BYTES = 50 * 1024 * 1024  # an upload larger than this is refused before it is read
MAX_NESTING = 32  # a real trace nests about 8 deep (steps > visits > updates > residual_top > entry)

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
    """One test of a tree-level verifier (block, traversal, typical_medusa, hsd), in the order it happened:
    block "coin"/"tau", traversal "try"/"delete", typical_medusa "typical"/"choose", hsd
    "ratio"/"stepback"/"final"/"tau", then "emit"."""

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
    """Inverse of to_plain for the record types (type-hint driven, strict: an uploaded trace is
    untrusted, so every value must already have its field's JSON type; a ValueError names the field)."""
    try:
        return _builder(cls)(data)
    except _Bad as err:
        raise ValueError(f"{getattr(cls, '__name__', 'value')}{''.join(err.path)}: {err.problem}") from None


class _Bad(ValueError):
    """A value of the wrong type; `path` grows (".field", "[i]") as the error unwinds."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem, self.path = problem, []


@functools.cache
def _builder(tp: Any) -> Callable[[Any], Any]:
    """A checker-builder for type `tp`, made once per type (per-value type introspection is slow: a large trace
    took tens of seconds that way; docs/speed.md, "Measurements the code's comments cite")."""
    if is_dataclass(tp):
        return _record_builder(tp)
    if get_origin(tp) is tuple:
        args = get_args(tp)
        return _list_builder(_builder(args[0]) if args else _any)
    if get_origin(tp) is dict or tp is dict:
        return _dict_value
    if type(None) in get_args(tp):
        inner = _builder(next(a for a in get_args(tp) if a is not type(None)))
        return lambda data: None if data is None else inner(data)
    return {float: _float_value, int: _int_value, str: _str_value, bool: _bool_value}.get(tp, _any)


def _record_builder(tp: type) -> Callable[[Any], Any]:
    hints = get_type_hints(tp)
    parts = [(f.name, _builder(hints[f.name])) for f in fields(tp)]
    required = [f.name for f in fields(tp) if f.default is MISSING and f.default_factory is MISSING]

    def build(data: Any) -> Any:
        if type(data) is not dict:
            raise _Bad(f"expected an object for {tp.__name__}, got {_kind(data)}")
        missing = [name for name in required if name not in data]
        if missing:
            raise _Bad(f"{tp.__name__} is missing fields: {', '.join(missing)}")
        values = {}
        for name, build_field in parts:
            if name in data:
                try:
                    values[name] = build_field(data[name])
                except _Bad as err:
                    err.path.insert(0, f".{name}")
                    raise
        return tp(**values)
    return build


def _list_builder(inner: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def build(data: Any) -> tuple:
        if type(data) is not list:
            raise _Bad(f"expected a list, got {_kind(data)}")
        try:
            return tuple(map(inner, data))
        except _Bad as err:
            err.path.insert(0, f"[{_first_bad(inner, data)}]")
            raise
    return build


def _first_bad(inner: Callable[[Any], Any], data: list) -> int:
    for i, x in enumerate(data):
        try:
            inner(x)
        except _Bad:
            return i
    return -1


def _any(data: Any) -> Any:
    return data


def _dict_value(data: Any) -> dict:
    if type(data) is not dict:
        raise _Bad(f"expected an object, got {_kind(data)}")
    return dict(data)


def _float_value(data: Any) -> float:
    if type(data) not in (int, float) or not math.isfinite(data):
        raise _Bad(f"expected a finite number, got {_kind(data)}")
    return float(data)


def _int_value(data: Any) -> int:
    if type(data) is not int:
        raise _Bad(f"expected a whole number, got {_kind(data)}")
    return data


def _str_value(data: Any) -> str:
    if type(data) is not str:
        raise _Bad(f"expected text, got {_kind(data)}")
    return data


def _bool_value(data: Any) -> bool:
    if type(data) is not bool:
        raise _Bad(f"expected true/false, got {_kind(data)}")
    return data


def _kind(data: Any) -> str:
    """A short, safe description of a JSON value for a message (never the whole value)."""
    if isinstance(data, (dict, list)):
        return f"{'an object' if isinstance(data, dict) else 'a list'} of {len(data)}"
    text = repr(data)
    return text if len(text) <= 40 else text[:39] + "…"


def trace_to_json(trace: Trace) -> str:
    body = {"format": TRACE_FORMAT, "version": TRACE_VERSION, **to_plain(trace)}
    return json.dumps(body, ensure_ascii=False, allow_nan=False)


def trace_from_json(text: str) -> Trace:
    """Parse and validate a trace file; ValueError with a readable message when it is not one.

    Parsing is plain `json.loads` (data only: nothing in a file is ever evaluated or unpickled),
    after a size cap and a cheap nesting-depth scan, so a hostile file costs at most one linear pass."""
    if len(text) > MAX_TRACE_BYTES:
        raise ValueError(f"the trace has {len(text) / 1e6:.0f} MB of text; the limit is {MAX_TRACE_BYTES // 10**6} MB")
    if nesting_depth(text, MAX_NESTING) > MAX_NESTING:
        raise ValueError(f"the file nests objects/lists more than {MAX_NESTING} deep; a trace never does")
    try:
        body = json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as err:
        raise ValueError(f"not a JSON file: {err}") from None
    except RecursionError:
        raise ValueError(f"the file nests objects/lists more than {MAX_NESTING} deep; a trace never does") from None
    return trace_from_plain(body)


def trace_from_plain(body: Any) -> Trace:
    """Check the format and version, then build the Trace (strict types, named fields)."""
    if not isinstance(body, dict) or body.get("format") != TRACE_FORMAT:
        raise ValueError(f"not a specscope trace (expected format {TRACE_FORMAT!r})")
    if body.get("version") != TRACE_VERSION:
        version = _kind(body.get("version"))
        raise ValueError(f"trace version {version} is not supported (this build reads {TRACE_VERSION})")
    body = {k: v for k, v in body.items() if k not in ("format", "version")}
    try:
        return from_plain(Trace, body)
    except (TypeError, KeyError, IndexError, ValueError) as err:
        raise ValueError(f"malformed trace: {err}") from None


def read_trace_file(path: str | Path) -> Trace:
    """A trace from a file: size checked before reading, UTF-8 only, then trace_from_json."""
    size = os.path.getsize(path)
    if size > MAX_TRACE_BYTES:
        raise ValueError(f"this file is {size / 1e6:.0f} MB; a trace is at most {MAX_TRACE_BYTES // 10**6} MB")
    try:
        body = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ValueError("this file is not a specscope trace (not UTF-8 text)") from None
    return trace_from_json(body)


def _no_constant(name: str) -> Any:
    raise ValueError(f"not a trace: the file holds {name}, which a trace never does (numbers are finite)")


_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_INNERMOST = re.compile(r"\[\]|\{\}")


def nesting_depth(text: str, limit: int) -> int:
    """How deep `text` nests JSON objects/lists, counted up to limit + 1 (so the cost is bounded).

    Strings are dropped, then each pass removes the innermost bracket pairs (C-speed regex), so a
    file nested 10**6 deep is refused after limit + 1 linear passes instead of overflowing a parser."""
    unescaped = text.replace("\\\\", "").replace('\\"', "")  # no quote inside a string is left
    outside = "".join(unescaped.split('"')[::2])  # every other piece lies outside the strings
    brackets = _NOT_BRACKET.sub("", outside)
    if re.search(r"[\[{]{" + str(limit + 1) + "}", brackets):  # the usual attack, found in one pass
        return limit + 1
    depth = 0
    while brackets and depth <= limit:
        brackets, n = _INNERMOST.subn("", brackets)
        if n == 0:
            break  # unbalanced: json.loads will say where
        depth += 1
    return depth


def step_to_dict(step: StepRecord) -> dict:
    return to_plain(step)


def step_from_dict(d: dict) -> StepRecord:
    return from_plain(StepRecord, d)


