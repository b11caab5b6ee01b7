"""How long a ZeroGPU call may hold the GPU, computed from the work it is given (decoding/models/hub/space.gpu
passes these to `spaces.GPU(duration=...)` as functions of the call's arguments), instead of a fixed 60 s.

Why: on ZeroGPU a call asks for its duration up front; the GPU is taken away when it runs out, and a shorter
request queues ahead of longer ones. A Step of a 1-node tree and a compared Step of a 3,2,2 forest with
Monte-Carlo walks are very different amounts of work. Model loading is never inside a timed call (ui/decode.py
loads the pair first), and neither is the lazy theory of a shown step (CPU-only: ui/decode.fill_shown).

The numbers are generous upper bounds, not predictions: a tree level's forward on a GPU takes 3-21 ms
(docs/speed.md, measured on an H100 with and without CUDA graphs; ZeroGPU runs without them), here 0.25 s
each; a Monte-Carlo walk of a compared verifier a few ms on the CPU, here 5 ms a node visited.
"""

from __future__ import annotations

import math

from decoding.run.config import DecodeConfig

FLOOR_S = 10  # the GPU attached and the pair's weights moved onto it on a cold call, with room to spare
CEILING_S = 300  # never ask for more than this (a longer Run is many calls, one per step)
FORWARD_S = 0.25  # one forward of a few rows (a draft level, the target's tree), bounded from above
ROWS_PER_FORWARD = 8  # each 8 rows more cost about one more forward (a 16-row verify: 1.33-1.7x one row there)
WALK_NODE_S = 0.005  # one node visited by a compared verifier's Monte-Carlo walk


def _bounded(seconds: float) -> int:
    return int(min(CEILING_S, max(FLOOR_S, math.ceil(FLOOR_S + seconds))))


def step_seconds(run) -> int:
    """A Step of `run` (engine.Run, or a CompareRun with its verifiers and Monte-Carlo draws): its draft levels
    (one forward each per candidate law drafted), the target's one forward, and the compared walks."""
    config: DecodeConfig = run.config
    widths = config.level_widths or (1,)
    parents = [math.prod(widths[:i]) for i in range(len(widths))]  # rows of each draft level's forward
    laws = len(set(getattr(run, "groups", ()) or ())) or 1  # a compared Step drafts one tree per candidate law
    draft = laws * sum(_forward(rows) for rows in parents)
    target = _forward(laws * (config.max_tree_nodes + 1))  # the whole tree (or forest) in one forward
    walks = len(getattr(run, "keys", ())) * int(getattr(run, "mc_draws", 0)) * len(widths)
    return _bounded(draft + target + walks * WALK_NODE_S)


def _forward(rows: int) -> float:
    return FORWARD_S * (1 + rows / ROWS_PER_FORWARD)


def baseline_seconds(pair, prompt_ids, n_tokens: int, config) -> int:
    """The target alone decoding `n_tokens`: one forward a token."""
    return _bounded(max(0, int(n_tokens)) * _forward(1))
