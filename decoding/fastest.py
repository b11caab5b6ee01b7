"""FASTEST: the fastest lossless configuration measured with `python -m decoding bench speed`.

A (pair kind, DecodeConfig) tuple for outside checks that time specscope on their own prompts:
`pair = load_pair(FASTEST[0]); engine.generate(pair, FASTEST[1].with_(temperature=...), prompt)`.
record=False is the fast path (no per-node records, no theory); the verifier is lossless, so the
output law is the target's at any temperature. Importing this module loads no model and no torch.

What made it faster (idle 2-core CPU, `python -m decoding bench forwards --rounds 5 --calls 10`, ms per
forward from a 200-token cache, interleaved): the draft now runs through lean_draft.py (same int8 draft
law: fused q/k/v and gate/up int8 products, direct fbgemm calls, in-place key/value buffers) at 39 ms
against transformers' 52 ms (0.67 vs 0.88 of a 59 ms one-token target forward); the verify forward's
few-row products go through MKL's pre-packed GEMM (packed_linear.py): 5 rows 116 -> 94 ms, 22 rows
222 -> 144 ms. With both, the shorter chain wins: a draft forward still costs 2/3 of a target forward.

Idle machine, 2026-11-23 (`python -m decoding bench speed --pair embedded --configs sd:1,1 sd:1,1,1
sd:1,1,1,1 rrs_wor:3,2,2 --temperatures 0,0.8 --paths fast,recorded --prompts 3 --repeats 2
--max-new-tokens 40 --threads 2`), x plain generate() (median [min-max] over 6 paired runs):
sd 1,1: 0.93x [0.85-1.17] at T = 0, 0.84x [0.71-1.00] at T = 0.8 (1.29x / 1.46x transformers' assisted
generation with the same draft); sd 1,1,1: 0.91x / 0.83x; sd 1,1,1,1: 0.81x / 0.86x (before the lean
draft and the packed verify: 0.58x / 0.68x); rrs_wor 3,2,2: 0.62x / 0.62x. With one torch thread
(`--configs sd:1,1 sd:1,1,1 --paths fast --threads 1`, same prompts): sd 1,1 1.01x [0.89-1.07] / 0.93x,
sd 1,1,1 1.04x [0.89-1.25] / 0.93x. So this is the fastest measured: level with plain decoding at
T = 0 on one thread, still below it at T = 0.8 and on two threads.

Tried and not kept: a head over the first 16384 ids (embedded-fast: q = 0 beyond, alpha .787 -> .769):
38.4 vs 39.4 ms per draft forward, no measurable gain; SmoothQuant int8 down_proj (agreement .770 ->
.660-.723, more tokens per step lost than the draft time it saves); weight-only int8/int4 kernels (4-8x
slower than float32 for one row here); layer skipping (useless for this model, RUNTIME_NOTES.md); a
hand-written grouped attention and torch's fused rms_norm in the lean draft (no gain, within noise);
W @ x.T for few-row products (replaced by the packed GEMM, better from 2 rows on).
"""

from __future__ import annotations

from decoding.run.config import DecodeConfig

FASTEST: tuple[str, DecodeConfig] = (
    "embedded",
    DecodeConfig(verifier="sd", branching=(1, 1), temperature=0.0, record=False),
)
