"""MUSEUM: ml-explore/mlx-swift-lm PR #459 ("MTP speculative decoding: preserve the target distribution when
sampling", open). LOSSLESS: the exhibit is the claim, not the rule.

`MTPSpeculativeTokenIterator.speculateRound` (Libraries/MLXLMCommon, read at commit 0140ab2b) samples the drafts
with the request's sampler, samples the target at every verify position, accepts a draft only when it equals
the target's own sample, and always emits the target's sample at the first mismatch. The PR says this "does not
preserve the target distribution". Exactly: the emitted token is the target's sample whatever happens, so the
law is p (TV 0); what the rule loses is acceptance, sum_x p(x) q(x), which the PR states correctly. Its fix
(min(1, p/q) and the residual, the registry's `sd`) is a speed fix.
"""

import torch

from decoding.verify.verdict import NodeVerdict

LAW = "iid"  # the drafter samples with the request's sampler
NAME = "museum_mlx_swift_459_strict"
TITLE = "mlx-swift-lm #459: accept iff the target's own sample equals the draft (museum; lossless)"
MAX_CANDIDATES = 1
LOSSLESS = True  # certified: the emitted token is always the target's own sample


def conditional(p, q, candidates):
    p = p.double() / p.sum()
    x = int(candidates[0])
    rest = p.clone()
    rest[x] = 0.0
    total = float(rest.sum())
    return torch.tensor([float(p[x])], dtype=torch.float64), rest / total if total > 1e-12 else p.clone()


def verify(p, q, candidates, generator):
    p = p.double() / p.sum()
    y = int(torch.multinomial(p, 1, generator=generator))  # the target's own sample
    if y == int(candidates[0]):
        return NodeVerdict(accepted=0, token=y)
    return NodeVerdict(accepted=None, token=y)
