"""`Caps`: the limits this server puts on one user's run, set at launch (app.py's --max-* flags).

A public Space and a laptop want different limits, so they are a frozen value built once from the
command line and handed to the page and to the control boundary; no module-level state changes.
The library's own bounds (decoding/run/config.py's MAX_*, engine.MAX_PROMPT_CHARS) are the
defaults and the ceiling: a launch cap can tighten them, never lift them past what DecodeConfig
accepts, so a run the page allows is always one the library runs. The Monte-Carlo walks of a compared
step have no library bound (the compare CLI takes any count) and each costs every compared verifier one more
walk of its tree (a client asking for 100,000 held a server for minutes): their ceiling is the compare
boundary's (MAX_COMPARE_MC) and their default the compare view's slider top (COMPARE_MC).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from decoding.run import config as run_config
from decoding.run import engine

MAX_COMPARE_MC = 100_000  # the most Monte-Carlo walks per compared verifier any server may allow
COMPARE_MC = 2_000  # the default limit on them: the compare view's slider top

# Each cap: (its ceiling, what it limits), one entry per Caps field; the ceiling is also the default but for
# max_compare_mc (COMPARE_MC).
CEILINGS: dict[str, tuple[int, str]] = {
    "max_nodes": (run_config.MAX_NODES, "drafted nodes per tree"),
    "max_depth": (run_config.MAX_DEPTH, "tree depth"),
    "max_branch": (run_config.MAX_BRANCH, "children per node (and K sequences)"),
    "max_new_tokens": (run_config.MAX_NEW_TOKENS, "new tokens per run"),
    "max_prompt_chars": (engine.MAX_PROMPT_CHARS, "prompt characters"),
    "max_compare_mc": (MAX_COMPARE_MC, "Monte-Carlo walks per verifier of a compared step"),
}


@dataclass(frozen=True)
class Caps:
    """Per-run limits; every field is between 1 and its ceiling in CEILINGS (ValueError otherwise)."""

    max_nodes: int = run_config.MAX_NODES
    max_depth: int = run_config.MAX_DEPTH
    max_branch: int = run_config.MAX_BRANCH
    max_new_tokens: int = run_config.MAX_NEW_TOKENS
    max_prompt_chars: int = engine.MAX_PROMPT_CHARS
    max_compare_mc: int = COMPARE_MC

    def __post_init__(self) -> None:
        for f in fields(self):
            ceiling = CEILINGS[f.name][0]
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= ceiling:
                raise ValueError(f"--{f.name.replace('_', '-')} ({CEILINGS[f.name][1]}) must be a whole number "
                                 f"between 1 and {ceiling} (the most a server may allow), got {value!r}")

    def bounds(self) -> dict[str, int]:
        """The largest value of each numeric control these caps bound (Controls field -> maximum)."""
        return {"sequences": self.max_branch, "depth": self.max_depth, "max_new_tokens": self.max_new_tokens}

    def check_prompt(self, prompt: str) -> None:
        if len(prompt) > self.max_prompt_chars:
            raise ValueError(f"the prompt has {len(prompt)} characters; this server's limit is "
                             f"{self.max_prompt_chars}")

    def check_shape(self, shape: run_config.Shape) -> None:
        """A tree shape within the caps: depth, children per node, then total nodes."""
        widths = shape.widths
        if len(widths) > self.max_depth:
            raise ValueError(f"the tree is {len(widths)} levels deep; this server's limit is {self.max_depth}")
        if widths and max(widths) > self.max_branch:
            raise ValueError(f"a node would have {max(widths)} children; this server's limit is "
                             f"{self.max_branch} per node")
        if shape.max_nodes > self.max_nodes:
            raise ValueError(f"the tree would have up to {shape.max_nodes} nodes; this server's limit is "
                             f"{self.max_nodes}")

    def check_compare_mc(self, walks: int) -> None:
        """The compare view's Monte-Carlo walks per verifier within the cap (each walk judges a tree again)."""
        if walks > self.max_compare_mc:
            raise ValueError(f"{walks} Monte-Carlo walks per compared verifier; this server's limit is "
                             f"{self.max_compare_mc}")

    def text(self) -> str:
        """One line for the page, under the controls."""
        return (f"Limits on this server: at most {self.max_nodes} nodes per tree, depth {self.max_depth}, "
                f"{self.max_branch} children per node, {self.max_new_tokens} new tokens, "
                f"{self.max_prompt_chars:,} prompt characters, {self.max_compare_mc:,} Monte-Carlo walks per "
                "compared verifier.")
