"""FASTEST: the fastest lossless configuration measured with `python -m decoding bench speed`.

A (pair kind, DecodeConfig) tuple for outside checks that time specscope on their own prompts:
`pair = load_pair(FASTEST[0]); engine.generate(pair, FASTEST[1].with_(temperature=...), prompt)`.
record=False is the fast path (no per-node records, no theory); the verifier is lossless, so the
output law is the target's at any temperature. Importing this module loads no model and no torch.

Tried for a cheaper draft (h-draft, 2026-11-23, 2-core CPU under load 10-12 from other jobs, so
every timing there is noisy):
- "embedded-fast" (fast_draft.py): the int8 self-draft with an lm_head over the first 16384 ids
  (q = 0 beyond; agreement with the target's argmax .770 -> .770, alpha .787 -> .769). In one
  interleaved run (`bench speed --pair embedded --also-pairs embedded-fast --configs sd:1,1,1,1
  --paths fast --prompts 2 --repeats 1 --max-new-tokens 32 --threads 1`) its fast path ran at
  0.94x [0.91-0.97] (T = 0) and 0.99x [0.92-1.06] (T = 0.8) of this pair's: no measurable gain, so
  FASTEST keeps the embedded pair until an idle-machine run says otherwise.
- SmoothQuant int8 down_proj: agreement .770 -> .660 (alpha .5) / .723 (alpha .7): more tokens per
  step lost than the ~15 % of draft time it saves.
- Weight-only int8/int4 kernels (`_weight_int8pack_mm`, `_weight_int4pack_mm_for_cpu`): 4-8x slower
  than float32 for one row on this CPU; layer skipping: useless for this model (RUNTIME_NOTES.md).
- Python overhead of the fast path (cProfile, 40 tokens, chain of 4, T = 0.8): 98 % of the step
  is inside the two models' forwards; outside them ~1.5 % (warp, judge, commit): nothing to gain.

Idle machine, same day (`bench speed --pair embedded --also-pairs embedded-fast --configs sd:1,1,1,1
rrs_wor:3,2,2 --paths fast,recorded --prompts 3 --repeats 2 --max-new-tokens 40 --threads 2`): this
configuration ran at 0.58x plain generate() at T = 0 and 0.68x at T = 0.8 (rrs_wor 3,2,2: 0.46x / 0.62x;
embedded-fast: 1.00x / 0.89x of the embedded pair's speed), 0.92x / 1.25x of transformers' assisted
generation. So it is the fastest measured, not faster than plain decoding: a cached single-token forward
of the int8 draft took 48 ms against the target's 57 ms on that machine (0.85, not RUNTIME_NOTES' 0.58).
"""

from __future__ import annotations

from decoding.run.config import DecodeConfig

FASTEST: tuple[str, DecodeConfig] = (
    "embedded",
    DecodeConfig(verifier="sd", branching=(1, 1, 1, 1), temperature=0.0, record=False),
)
