"""MUSEUM: antirez/ds4 PR #482 ("DSpark B2 rejection sampling + adaptive block sizing", open). LOSSY; the PR
claimed lossless at any temperature.

A review of the PR found `b2_rejection_sample` computing p/q against the drafter's softmax while the draft
tokens come from `sample_argmax`: the same law as an argmax draft tested with a sampled draft's q (accept
min(1, p(x)/q(x)), residual norm((p - q)_+)), on every position of the DSpark block. Fix: sample the block's
tokens from q (the registry's `sd`), or keep argmax drafts and test them as one-hot (`pointmass`, top-1).
"""

import torch

from decoding.verify.verdict import NodeVerdict

LAW = "topk"  # sample_argmax drafts
NAME = "museum_ds4_482_dspark_b2"
TITLE = "ds4 #482: DSpark argmax drafts tested with p/q (museum)"
MAX_CANDIDATES = 1
LOSSLESS = True  # what the code claimed (its leaf bonus is a draw from p); certify says otherwise


def _residual(p, q):
    rest = torch.clamp(p - q, min=0.0)
    total = float(rest.sum())
    return rest / total if total > 1e-12 else p.clone()


def conditional(p, q, candidates):
    p, q = p.double() / p.sum(), q.double() / q.sum()
    x = int(candidates[0])
    a = min(1.0, float(p[x]) / float(q[x])) if q[x] > 0 else 0.0
    return torch.tensor([a], dtype=torch.float64), _residual(p, q)


def verify(p, q, candidates, generator):
    accept, residual = conditional(p, q, candidates)
    if float(torch.rand((), generator=generator, dtype=torch.float64)) < float(accept[0]):
        return NodeVerdict(accepted=0, token=int(candidates[0]))
    return NodeVerdict(accepted=None, token=int(torch.multinomial(residual, 1, generator=generator)),
                       residual=residual)
