"""FASTEST: the fastest lossless configuration measured with `python -m decoding bench speed`.

A (pair kind, DecodeConfig) tuple for outside checks that time specscope on their own prompts:
`pair = load_pair(FASTEST[0]); engine.generate(pair, FASTEST[1].with_(temperature=...), prompt)`.
record=False is the fast path (no per-node records, no theory); the verifier is lossless, so the
output law is the target's at any temperature. Importing this module loads no model and no torch.
"""

from __future__ import annotations

from decoding.run.config import DecodeConfig

FASTEST: tuple[str, DecodeConfig] = (
    "embedded",
    DecodeConfig(verifier="sd", branching=(1, 1, 1, 1), temperature=0.0, record=False),
)
