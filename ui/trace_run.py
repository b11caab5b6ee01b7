"""An imported trace made the session's live run: Step and Run continue it with the tokens the uninterrupted
run would have emitted (issue 28, "runs replay exactly").

Why a replay and not a resume: a trace does not carry the generator's state, and a run rebuilt by one prefill
can continue differently (decoding/run/replay.py says why); re-running the trace's steps from its seed gives
the same KV caches, generator and adaptive statistics, and `replay` CHECKS the tokens it reaches against
the trace's. The trace's settings are read back into page controls and go through the one control boundary
(`ui.session.configure`: the control rules, then this server's caps), so an import never starts a run a Step
could not; what the controls do not hold (the config's `costs`, `drafting`, `adaptive`, `chat`, ...) is
taken from the trace's config, so the continued run decides as the recorded one did.

Every reason a trace cannot be continued (a pair the page cannot load, a verifier this server lacks, a cap,
a trace without what a replay needs, steps that do not re-run to the same tokens) is a `NotContinued`, one
line the page shows: the imported steps still draw, and Step starts a new run.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import gradio as gr

from decoding.models.pairs import PLAN_KEY
from decoding.run import engine, replay
from decoding.run.config import DecodeConfig
from decoding.run.schema import Trace
from ui import decode
from ui.caps import Caps
from ui.session import PAIRS, SHAPES, Configured, Controls, configure

# The config keys the page's controls set (the rest, e.g. costs or adaptive, come from the trace as they are).
CONTROLLED = ("verifier", "branching", "sequences", "depth", "temperature", "top_k", "top_p", "seed",
              "max_new_tokens")
NEEDED = ("verifier", "temperature", "top_k", "top_p", "seed", "max_new_tokens")  # besides a shape


class NotContinued(ValueError):
    """Why this trace cannot be continued here; one line, said after "Step starts a new run: "."""


@dataclass(frozen=True)
class Continued:
    """The imported trace as a live run: the controls it was read into, and the run at its last step."""

    configured: Configured
    run: engine.Run


def continued(trace: Trace, caps: Caps, default: Controls, progress: gr.Progress | None = None) -> Continued:
    """The trace's run, re-run here to its last step; NotContinued with the reason when it cannot be."""
    configured = controls_of(trace, caps, default)
    config = config_of(trace, configured.config)
    if any(step.compare is not None for step in trace.steps):
        raise NotContinued("its steps were compared steps (drafted as a forest), which a replay does not re-run")
    pair = decode.load(configured.controls, progress)
    check_pair(trace, pair.describe())
    if tuple(engine.encode(pair, config, trace.prompt)) != tuple(trace.prompt_ids):
        raise NotContinued("its prompt ids are not this pair's encoding of its prompt")
    state = replace(replay.state_of_trace(trace), config=config.to_dict())
    try:
        run = replay.replay(pair, state, lazy_theory=True)
    except replay.ReplayMismatch as err:
        raise NotContinued(f"re-running its steps here did not reproduce it ({err}): a trace made on another "
                           "machine or with other library versions") from None
    return Continued(configured, run)


def controls_of(trace: Trace, caps: Caps, default: Controls) -> Configured:
    """The page controls the trace was decoded with, through the boundary (control rules, this server's caps).
    Fields the trace does not decide (the shape it does not use, a built-in pair's model boxes) keep the page's
    `default`, so the widgets set from them read back as the same controls."""
    cfg, kind = trace.config, trace.models.get("kind")
    missing = [key for key in NEEDED if key not in cfg] + ([] if "branching" in cfg or "sequences" in cfg
                                                         else ["branching"])
    if not isinstance(kind, str) or missing:
        what = ", ".join(missing) if missing else "its model pair's kind"
        raise NotContinued(f"it does not record {what} (a trace from an older specscope)")
    if kind not in [value for _, value in PAIRS]:
        raise NotContinued(f"the page cannot load its model pair {kind!r} (it offers "
                           f"{', '.join(value for _, value in PAIRS)})")
    sequences = bool(cfg.get("sequences"))
    raw = {**asdict(default), "pair": kind, "prompt": trace.prompt, "verifier": cfg["verifier"],
           "shape": SHAPES[1] if sequences else SHAPES[0]}
    raw |= {name: cfg[name] for name in ("temperature", "top_k", "top_p", "seed", "max_new_tokens")}
    if sequences:
        raw |= {"sequences": cfg["sequences"], "depth": cfg.get("depth")}
    else:
        raw["branching"] = _branching_text(cfg["branching"])
    if kind == "custom":
        raw |= {"target": trace.models.get("target"), "draft": trace.models.get("draft")}
    try:
        return configure(caps, raw)
    except ValueError as err:
        raise NotContinued(str(err)) from None


def _branching_text(levels) -> str:
    if not isinstance(levels, list) or not all(isinstance(b, int) and not isinstance(b, bool) for b in levels):
        raise NotContinued(f"its branching {levels!r} is not a list of whole numbers")
    return ",".join(str(b) for b in levels)


def config_of(trace: Trace, controlled: DecodeConfig) -> DecodeConfig:
    """The trace's own config (costs, drafting, adaptive, ... as recorded), checked to agree with the one the
    controls build on every key the controls set: the run continued is the run the page's controls name."""
    try:
        config = DecodeConfig.from_dict(trace.config)
    except (TypeError, ValueError, KeyError) as err:
        raise NotContinued(f"its configuration cannot be read here ({str(err).splitlines()[0][:120]})") from None
    want, have = controlled.to_dict(), config.to_dict()
    differs = [key for key in CONTROLLED if want.get(key) != have.get(key)]
    if differs:
        raise NotContinued(f"its {differs[0]} {have.get(differs[0])!r} is not one the controls can hold")
    return config


MACHINE_KEYS = ("device", PLAN_KEY)  # what a trace's models say of the machine, not of the pair


def check_pair(trace: Trace, here: dict) -> None:
    """The pair loaded here is the trace's (device and the product plan aside: either changes p by float
    rounding at most, and the replay itself checks that the tokens agree)."""
    recorded = {k: v for k, v in trace.models.items() if k not in MACHINE_KEYS}
    loaded = {k: v for k, v in here.items() if k not in MACHINE_KEYS}
    if recorded != loaded:
        key = next(k for k in sorted(set(recorded) | set(loaded)) if recorded.get(k) != loaded.get(k))
        raise NotContinued(f"the {trace.models.get('kind')} pair here differs from the trace's ({key}: "
                           f"{loaded.get(key)!r} here, {recorded.get(key)!r} in the trace)")
