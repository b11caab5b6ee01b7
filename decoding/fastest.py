"""FASTEST: the fastest lossless configuration measured with `python -m bench speed`.

A (pair kind, DecodeConfig) tuple for outside checks that time specscope on their own prompts:
`pair = load_pair(FASTEST[0]); engine.generate(pair, FASTEST[1].with_(temperature=...), prompt)`.
record=False is the fast path (no per-node records, no theory); the verifier is lossless, so the
output law is the target's at any temperature. Importing this module loads no model and no torch.

Why this one, and what else was measured and not kept (sessions 4-10, the commands and the numbers):
docs/speed.md, "The session journal behind FASTEST". It was tuned on one VM; on another machine the
few-row verify can cost twice as much and the same config lose to plain decoding (docs/speed.md, "Cost
of one target forward on a CPU").
"""

from __future__ import annotations

from decoding.run.config import DecodeConfig

FASTEST: tuple[str, DecodeConfig] = (
    "embedded-head",
    DecodeConfig(verifier="sd", branching=(1, 1), temperature=0.0, record=False),
)
