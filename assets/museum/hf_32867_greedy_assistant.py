"""MUSEUM: huggingface/transformers #32867, fixed by PR #33534 (assistant should sample when the main model
samples). LOSSY; the code claimed lossless.

PR #30778 made the assistant decode greedily for speed: its candidate is argmax q. The speculative test still
divided by the assistant's softmax q, as if the candidate had been sampled: accept min(1, p(x)/q(x)), else a
token from norm((p - q)_+). The issue's own two-token example: q = [0.8, 0.2], p = [0.6, 0.4] gives
[0.75, 0.25] instead of [0.6, 0.4]. Fix: sample the assistant (the registry's `sd` on sampled drafts).
"""

import torch

from decoding.verify.verdict import NodeVerdict

LAW = "topk"  # the candidate is the assistant's argmax (top-1 of q), not a sample
NAME = "museum_hf_32867_greedy_assistant"
TITLE = "transformers #32867: greedy assistant tested with its softmax q (museum)"
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
