"""Per-user plain data (`Session`) and the control-value boundary (`configure`, built on `Controls.from_raw`).

The browser sends what its widgets hold, not what the handlers want: `null` for a hidden or
cleared textbox (the first-click bug: `str(None)` became the model name "None"), floats from a
gr.Number, numbers as strings through the API, NaN. `Controls.from_raw` is the one place these
become typed values; every handler calls it, nothing downstream sees a raw front-end value.

Decisions, for every field in FIELDS: a missing text (None) is the empty string, so a hidden box
never becomes a model name, and an empty prompt or branching is refused downstream with its own
message; a missing choice (pair, verifier, shape) takes its default; a missing number (None or a
blank string: a cleared gr.Number) takes the field's default; a number given as a string is
parsed; a whole-number field accepts 3.0 but not 3.5; NaN, infinities and text that is not a
number are refused; a value outside the widget's range is refused with a message naming the range
(never clamped: a silently changed setting would make the run differ from what the user asked).

`configure(caps, raw)` is the one function every handler that builds a run goes through (Step, Run,
the compare view's Step, "Compare whole runs", its "select every lossless verifier" button, the MCP
step tool, an imported trace that is continued: ui/trace_run.py): the control-value rules above, then
the server's launch caps on the tree shape. Its result, `Configured`, is what `ui.decode.open_run` takes,
so no handler can start a run that skipped the caps. The compare view's options are not controls: its
Monte-Carlo walks are read next to them, within the same caps (ui/compare.py's `selected`, `default_draws`).
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass, field, fields, replace
from typing import Any

from decoding.run import engine
from decoding.run.config import MAX_TOP_K, Branching, DecodeConfig, Sequences, parse_branching
from decoding.run.schema import Trace
from decoding.verify.registry import lookup
from ui.caps import Caps
from viz import stats

PAIRS = (("embedded: SmolLM2-135M + its int8 self-draft", "embedded"),
         ("embedded-head: SmolLM2-135M + a trained draft head (fastest model draft)", "embedded-head"),
         ("lookup: SmolLM2-135M + prompt-lookup draft", "lookup"),
         ("toy: a 12-word language (instant)", "toy"),
         ("custom: two hub ids or local folders", "custom"))
SHAPES = ("branching per level", "K sequences x depth")


@dataclass(frozen=True)
class Field:
    """How one control's raw value is read: its kind, its user-facing name and its widget's range."""

    kind: type  # str, int or float
    label: str
    minimum: float | None = None
    maximum: float | None = None
    choice: bool = False  # a radio or dropdown: a missing value means its default, not ""


FIELDS: dict[str, Field] = {
    "pair": Field(str, "model pair", choice=True),
    "target": Field(str, "target model"), "draft": Field(str, "draft model"),
    "prompt": Field(str, "prompt"), "verifier": Field(str, "verifier", choice=True),
    "shape": Field(str, "tree shape", choice=True),
    "branching": Field(str, "branching"),
    "sequences": Field(int, "K sequences", 1), "depth": Field(int, "depth", 1),
    "temperature": Field(float, "temperature", 0.0, 2.0), "top_k": Field(int, "top-k", 0, MAX_TOP_K),
    "top_p": Field(float, "top-p", 0.05, 1.0), "seed": Field(int, "seed", 0),
    "max_new_tokens": Field(int, "max new tokens", 1),
}  # sequences, depth and max_new_tokens get their maximum from the launch Caps (field_spec)


def field_spec(name: str, caps: Caps) -> Field:
    """FIELDS[name] with the maximum the launch caps set (the widget's range and the check agree)."""
    maximum = caps.bounds().get(name)
    return FIELDS[name] if maximum is None else replace(FIELDS[name], maximum=maximum)


_DEFAULT = DecodeConfig()  # the page's defaults are the config's: one place for each (a test holds them equal)


@dataclass(frozen=True)
class Controls:
    """The control values, typed; field order is the order of the app's control widgets."""

    pair: str = "embedded"
    target: str = ""
    draft: str = ""
    prompt: str = "Why is the sky blue?"
    verifier: str = _DEFAULT.verifier
    shape: str = SHAPES[0]
    branching: str = ",".join(map(str, _DEFAULT.shape.widths))
    sequences: int = 4
    depth: int = 4
    temperature: float = _DEFAULT.temperature
    top_k: int = _DEFAULT.top_k
    top_p: float = _DEFAULT.top_p
    seed: int = _DEFAULT.seed
    max_new_tokens: int = _DEFAULT.max_new_tokens

    @classmethod
    def from_raw(cls, *values: Any, caps: Caps | None = None, **named: Any) -> Controls:
        """The boundary: raw front-end values (positional in field order, or by name) -> Controls.

        Numbers are checked against FIELDS and the launch `caps`, the prompt against its length cap.
        ValueError with a one-line message a user can act on when a value cannot be read.
        """
        caps = caps or Caps()
        names = [f.name for f in fields(cls)]
        if len(values) > len(names):
            raise ValueError(f"expected at most {len(names)} control values, got {len(values)}")
        raw = {**dict(zip(names, values, strict=False)), **named}
        unknown = sorted(set(raw) - set(names))
        if unknown:
            raise ValueError(f"unknown control {unknown[0]!r}")
        defaults = cls()
        controls = cls(**{name: read_value(field_spec(name, caps), raw.get(name), getattr(defaults, name))
                          for name in names})
        caps.check_prompt(controls.prompt)
        return controls

    def within(self, caps: Caps) -> Controls:
        """These controls with each capped number lowered to its cap: the page's starting values (a Space
        launched with --max-branch 3 would otherwise show K sequences = 4 and refuse its own default)."""
        return replace(self, **{name: min(getattr(self, name), top) for name, top in caps.bounds().items()})

    def config(self, caps: Caps | None = None) -> DecodeConfig:
        """A validated DecodeConfig within the launch `caps`; ValueError with a readable message otherwise."""
        lookup(self.verifier)
        sequences = self.shape == SHAPES[1]
        shape = Sequences(self.sequences, self.depth) if sequences else Branching(parse_branching(self.branching))
        shape.check()  # the library's own message first (e.g. a level of 0 children)
        (caps or Caps()).check_shape(shape)
        return DecodeConfig(verifier=self.verifier, shape=shape, temperature=self.temperature, top_k=self.top_k,
                            top_p=self.top_p, seed=self.seed, max_new_tokens=self.max_new_tokens)


@dataclass(frozen=True)
class Configured:
    """Controls read through the boundary and the DecodeConfig they build, within the launch caps."""

    controls: Controls
    config: DecodeConfig


def configure(caps: Caps, raw: dict[str, Any]) -> Configured:
    """THE boundary: raw control values by field name -> (Controls, DecodeConfig) within `caps`.

    A ValueError with a one-line message when a value cannot be read or the run would exceed a cap;
    every handler that starts a run calls this (through `Views.configure`), so each refuses alike."""
    controls = Controls.from_raw(caps=caps, **raw)
    return Configured(controls, controls.config(caps))


def read_value(spec: Field, value: Any, default: Any) -> Any:
    """One raw value -> its typed value (see the module docstring for the rules)."""
    if spec.kind is str:
        if value is None:
            return default if spec.choice else ""
        return value if isinstance(value, str) else str(value)
    if value is None or (isinstance(value, str) and not value.strip()):
        return default
    number = _number(value, spec.label)
    if spec.kind is int:
        if number != int(number):
            raise ValueError(f"{spec.label} must be a whole number, got {value!r}")
        number = int(number)
    _check_range(spec, number)
    return number


def _number(value: Any, label: str) -> float:
    if isinstance(value, bool):
        raise ValueError(f"{label} must be a number, got {value!r}")
    try:
        number = float(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError):
        raise ValueError(f"{label} must be a number, got {value!r}") from None
    if not math.isfinite(number):
        raise ValueError(f"{label} must be a finite number, got {value!r}")
    return number


def _check_range(spec: Field, number: float) -> None:
    low, high = spec.minimum, spec.maximum
    if (low is not None and number < low) or (high is not None and number > high):
        span = (f"between {shown_number(low)} and {shown_number(high)}" if high is not None
                else f"at least {shown_number(low)}")
        raise ValueError(f"{spec.label} must be {span}, got {shown_number(number)}")


def shown_number(number: float) -> str:
    """A number as a user typed it: whole numbers in full (1000000, not 1e+06), others short."""
    return str(int(number)) if number == int(number) and abs(number) < 1e18 else f"{number:g}"


def new_key() -> str:
    """A random id naming one session's live run in the server's cache (never a user's identity)."""
    return secrets.token_hex(8)


@dataclass(frozen=True)
class Session:
    """Everything one user's page shows, as plain deep-copyable data (kept in gr.State)."""

    run: engine.RunState | None = None  # a live run that Step/Run can continue
    trace: Trace | None = None  # what the views show: the live run's trace, or an imported one
    controls: Controls | None = None  # the controls the live run was started with
    baseline: stats.BaselineNumbers | None = None
    key: str = field(default_factory=new_key, compare=False)

    @property
    def steps(self) -> tuple:
        return self.trace.steps if self.trace is not None else ()


def new_session() -> Session:
    """A fresh Session (gr.State calls this per page, so no two pages share a key)."""
    return Session()
