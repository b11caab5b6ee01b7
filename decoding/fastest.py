"""FASTEST: the fastest lossless configuration measured with `python -m bench speed`; `fastest()`: the fastest
lossless configuration on THIS machine, chosen from its calibrated costs (decoding/speed).

A (pair kind, DecodeConfig) tuple for outside checks that time specscope on their own prompts:
`pair = load_pair(FASTEST[0]); engine.generate(pair, FASTEST[1].with_(temperature=...), prompt)`.
record=False is the fast path (no per-node records, no theory); the verifier is lossless, so the
output law is the target's at any temperature. Importing this module loads no model and no torch.

Why this one, and what else was measured and not kept (sessions 4-10, the commands and the numbers):
docs/speed.md, "The session journal behind FASTEST". It was tuned on one VM; on another machine the
few-row verify can cost twice as much and the same config lose to plain decoding (docs/speed.md, "Cost
of one target forward on a CPU"). Hence `fastest(pair_kind=None)`: it calibrates the pair on the machine at
hand (once; cached per machine, decoding/speed/calibrate.py), predicts every draft shape's tokens per second
from those costs and the pair's exact acceptance (decoding/speed/chooser.py), and returns the fastest, or
the target alone (`drafting=False`) when no shape is predicted 5 % faster (chooser.MARGIN). FASTEST stays
the default without calibration.
"""

from __future__ import annotations

from decoding.run.config import DecodeConfig

FASTEST: tuple[str, DecodeConfig] = (
    "embedded-head",
    DecodeConfig(verifier="sd", branching=(1, 1), temperature=0.0, record=False),
)

PAIRS_TRIED = ("embedded-head", "embedded")  # fastest() without a pair: the trained head, then the int8 self-draft


def fastest(pair_kind: str | None = None, *, temperature: float = 0.0, force: bool = False,
            progress=None) -> tuple[str, DecodeConfig]:
    """(pair kind, DecodeConfig): the fastest lossless configuration on this machine at `temperature`
    (calibrated and cached; `force` measures again). Loads the pair(s); use the answer as FASTEST is used.
    The config carries the costs it was chosen from (`DecodeConfig.costs`), so a trace says why."""
    from decoding.speed.choice import best_config

    return best_config((pair_kind,) if pair_kind else PAIRS_TRIED, temperature, force=force, progress=progress)
