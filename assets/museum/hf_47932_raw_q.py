"""MUSEUM: huggingface/transformers #47932 (closed; proposed fix PR #47961). LOSSY; documented as lossless.

Three candidate generators sampled their tokens from the processor-applied draft law q (top_k = 50 by default)
but returned the raw logits, so `_speculative_sampling` tested against q_raw: on the kept tokens
q_raw = Z q, Z the raw mass top-k keeps. The test min(1, p/q_raw) is inflated by exactly 1/Z, and the residual
norm((p - q_raw)_+) is built from mass the drafter never proposes. KEPT below is Z for the museum's toy (the
issue's median, 0.8815); the raw tail 1 - Z sits on the tokens top-k removed (spread evenly: where it sits does
not matter while the target's warp removes them too). Fix: return the processed q (the registry's `sd`).
"""

import torch

from decoding.verify.verdict import NodeVerdict

LAW = "iid"  # sampled from the processed q
NAME = "museum_hf_47932_raw_q"
TITLE = "transformers #47932: sampled from top-k q, tested with the raw q (museum)"
MAX_CANDIDATES = 1
LOSSLESS = True  # what the code claimed (its leaf bonus is a draw from p); certify says otherwise
KEPT = 0.8815  # Z: the raw draft mass on the tokens top-k keeps


def raw_q(q):
    """q_raw [V]: Z q on q's support, the removed raw mass 1 - Z evenly on the rest."""
    q = q.double() / q.sum()
    kept = q > 0
    out = KEPT * q
    rest = int((~kept).sum())
    if rest:
        out[~kept] = (1.0 - KEPT) / rest
    return out


def conditional(p, q, candidates):
    p = p.double() / p.sum()
    raw = raw_q(q)
    x = int(candidates[0])
    a = min(1.0, float(p[x]) / float(raw[x])) if raw[x] > 0 else 0.0
    rest = torch.clamp(p - raw, min=0.0)
    total = float(rest.sum())
    return torch.tensor([a], dtype=torch.float64), rest / total if total > 1e-12 else p.clone()


def verify(p, q, candidates, generator):
    accept, residual = conditional(p, q, candidates)
    if float(torch.rand((), generator=generator, dtype=torch.float64)) < float(accept[0]):
        return NodeVerdict(accepted=0, token=int(candidates[0]))
    return NodeVerdict(accepted=None, token=int(torch.multinomial(residual, 1, generator=generator)),
                       residual=residual)
