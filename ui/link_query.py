"""A shareable link's query <-> a demo: the controls, how many Steps to run, the compared verifiers, the tab.

Keys: `pair, prompt, verifier, tree` (or `sequences` and `depth`), `temperature, top_k, top_p, seed,
max_new_tokens, steps, compare` (comma-separated keys), `tab`; `target` and `draft` for a custom pair.
Every value goes through the control boundary (`ui.session.read_value` with the launch caps, then the
same checks a Step makes): a bad or unknown value is a one-line notice and its default, never a crash, and
a link never runs more than the caps allow (`steps` is at most the caps' max new tokens: a step emits at
least one token). A link holds only what decides the run: the shape it does not use and, for a built-in
pair, the model boxes are left out (`canonical`), so controls -> link -> controls is the identity on them.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, replace
from urllib.parse import quote, urlencode

from decoding.run.config import Branching, parse_branching
from decoding.verify.registry import VERIFIERS, lookup, unknown_verifier
from ui.caps import Caps
from ui.session import PAIRS, SHAPES, Controls, field_spec, read_value

TABS = ("compare", "stats", "trace", "lab", "speed", "museum", "help")  # the page's tab ids (gr.Tab(id=...))
FIELD_OF = {"pair": "pair", "target": "target", "draft": "draft", "prompt": "prompt", "verifier": "verifier",
            "tree": "branching", "sequences": "sequences", "depth": "depth", "temperature": "temperature",
            "top_k": "top_k", "top_p": "top_p", "seed": "seed", "max_new_tokens": "max_new_tokens"}
KEYS = (*FIELD_OF, "steps", "compare", "tab")
PAGE_KEYS = ("present", "__theme")  # how the page looks (assets/present.js, Gradio's theme), not the demo: no notice


@dataclass(frozen=True)
class Link:
    controls: Controls
    steps: int = 0
    compare: tuple[str, ...] = ()
    tab: str = ""


def canonical(controls: Controls) -> Controls:
    """The controls with what does not decide the run set to its default (the unused shape, model boxes)."""
    d = Controls()
    sequences = controls.shape == SHAPES[1]
    custom = controls.pair == "custom"
    return replace(controls, branching=d.branching if sequences else controls.branching,
                   sequences=controls.sequences if sequences else d.sequences,
                   depth=controls.depth if sequences else d.depth,
                   target=controls.target if custom else "", draft=controls.draft if custom else "")


def link_query(link: Link) -> str:
    """The query string (no leading "?") of a demo, every value written so it reads back exactly."""
    c = canonical(link.controls)
    items: list[tuple[str, str]] = [("pair", c.pair)]
    if c.pair == "custom":
        items += [("target", c.target), ("draft", c.draft)]
    items += [("prompt", c.prompt), ("verifier", c.verifier)]
    items += ([("sequences", str(c.sequences)), ("depth", str(c.depth))] if c.shape == SHAPES[1]
              else [("tree", c.branching)])
    items += [("temperature", repr(c.temperature)), ("top_k", str(c.top_k)), ("top_p", repr(c.top_p)),
              ("seed", str(c.seed)), ("max_new_tokens", str(c.max_new_tokens)), ("steps", str(link.steps))]
    if link.compare:
        items.append(("compare", ",".join(link.compare)))
    if link.tab:
        items.append(("tab", link.tab))
    return urlencode(items, quote_via=quote, safe=",")


def read_link(query: Mapping[str, str], default: Controls, caps: Caps) -> tuple[Link, list[str]]:
    """A query -> (the demo it describes, one notice per value refused and replaced by its default)."""
    notices = [f"the link's key {key!r} is not one of: {', '.join(KEYS)}; ignored" for key in query
               if key not in KEYS and key not in PAGE_KEYS]
    values = {}
    for key, name in FIELD_OF.items():
        if key in query:
            try:
                values[name] = _field(name, query[key], default, caps)
            except ValueError as err:
                notices.append(f"link {key}: {err}; using {getattr(default, name)!r}")
    shape = SHAPES[1] if ("sequences" in query or "depth" in query) else SHAPES[0] if "tree" in query else default.shape
    controls = replace(default, **values, shape=shape)
    steps = _steps(query.get("steps"), caps, notices)
    compare = _compare(query.get("compare"), notices)
    tab = query.get("tab") or ""
    if tab and tab not in TABS:
        notices.append(f"link tab: {tab!r} is not one of: {', '.join(TABS)}; ignored")
        tab = ""
    try:
        controls.config(caps)
    except ValueError as err:
        notices.append(f"the link's settings cannot run: {err}; nothing was run")
        steps = 0
    return Link(controls, steps, compare, tab), notices


def _field(name: str, raw: str, default: Controls, caps: Caps):
    """One link value through the control boundary, then the check a Step would make on it."""
    value = read_value(field_spec(name, caps), raw, getattr(default, name))
    if name == "pair" and value not in [v for _, v in PAIRS]:
        raise ValueError(f"unknown model pair {value!r}; choose one of: {', '.join(v for _, v in PAIRS)}")
    if name == "verifier":
        lookup(value)
    if name == "branching":
        shape = Branching(parse_branching(value))
        shape.check()
        caps.check_shape(shape)
    if name == "prompt":
        caps.check_prompt(value)
    return value


def _steps(raw: str | None, caps: Caps, notices: list[str]) -> int:
    if raw is None:
        return 0
    try:
        steps = read_value(replace(field_spec("max_new_tokens", caps), label="steps", minimum=0), raw, 0)
    except ValueError as err:
        notices.append(f"link steps: {err}; nothing was run")
        return 0
    return steps


def _compare(raw: str | None, notices: list[str]) -> tuple[str, ...]:
    keys = tuple(dict.fromkeys(k.strip() for k in (raw or "").split(",") if k.strip()))
    unknown = [k for k in keys if k not in VERIFIERS]
    if unknown:
        notices.append(f"link compare: {unknown_verifier(unknown[0])}; "
                       "compare is off")
        return ()
    return keys


def cli_command(controls: Controls) -> str:
    """The `python -m decoding generate` line that decodes the same text (runs are seeded)."""
    c = canonical(controls)
    pair = ["--target", c.target, "--draft", c.draft] if c.pair == "custom" else ["--pair", c.pair]
    shape = (["--sequences", str(c.sequences), "--depth", str(c.depth)] if c.shape == SHAPES[1]
             else ["--tree", c.branching])
    args = ["python", "-m", "decoding", "generate", *pair, "--prompt", c.prompt, "--verifier", c.verifier, *shape,
            "--temperature", repr(c.temperature), "--top-k", str(c.top_k), "--top-p", repr(c.top_p),
            "--seed", str(c.seed), "--max-new-tokens", str(c.max_new_tokens)]
    return shlex.join(args)
