"""MUSEUM: jaymody/speculative-sampling #3 ("Question about the code", closed; the author confirms the mistake).
LOSSY; the code claimed lossless.

The example drafts with argmax (greedy) but runs the speculative test with the draft's softmax q: accept
min(1, p(x)/q(x)), else a token from norm((p - q)_+). The proof needs P(draft = x) = q(x), which an argmax draft
breaks. The author's fix: make q the law the draft was taken from, i.e. one-hot at the argmax (temperature 0
for the draft), which is the registry's `pointmass` on the draft's top-1 (or sample the draft: `sd`).
"""

import torch

from decoding.verify.verdict import NodeVerdict

LAW = "topk"  # argmax draft
NAME = "museum_jaymody_3_argmax_draft"
TITLE = "jaymody/speculative-sampling #3: argmax draft tested with softmax q (museum)"
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
