"""MUSEUM: huggingface/transformers PR #28508 ("Fix `_speculative_sampling` implementation", merged). LOSSY; the
code claimed lossless.

Before the PR, `_speculative_sampling` "accepts the draft model tokens all the time due to faulty test of the
number of matches (`n_matches`)" (the PR's description): every drafted token is kept, so what comes out at a drafted
position is the assistant's own sample, i.e. q. Behind it sat a second bug the PR also removed: the rejection
residual was `torch.clamp(p - q, min=0).softmax(dim=-1)`, a softmax of the clamped difference rather than its
normalization ("the paper normalizes this vector, as opposed to a softmax", the review). It was masked: with every
draft accepted, no residual was ever drawn. `residual` below is that softmax, returned by `conditional` for the
record; the acceptance of 1 gives it no weight. Fix: accept min(1, p/q), residual norm((p - q)_+) (the registry's
`sd`), which the regression test `test_speculative_sampling` pins: draft 5 against a target one-hot at 8 is
rejected and 8 comes out.
"""

import torch

from decoding.verify.verdict import NodeVerdict

LAW = "iid"  # the assistant samples its candidates (do_sample=True)
NAME = "museum_hf_28508_always_accept"
TITLE = "transformers #28508: every draft accepted (faulty n_matches), softmax residual (museum)"
MAX_CANDIDATES = 1
LOSSLESS = True  # what the code claimed (its leaf bonus is a draw from p); certify says otherwise


def residual(p, q):
    """The pre-#28508 residual [V]: softmax(clamp(p - q, 0)), not (p - q)_+ / sum (masked by the acceptance)."""
    p, q = p.double() / p.sum(), q.double() / q.sum()
    return torch.softmax(torch.clamp(p - q, min=0.0), dim=0)


def conditional(p, q, candidates):
    return torch.tensor([1.0], dtype=torch.float64), residual(p, q)  # [1], [V]; n_matches: every draft kept


def verify(p, q, candidates, generator):
    return NodeVerdict(accepted=0, token=int(candidates[0]))
