"""MUSEUM: tanishqkumar/ssd, ssd/utils/verify.py (sync path at temperature > 0). LOSSY; the code claimed lossless.

The draft x is sampled from q, but rows without a cache hit (every row on the sync path, where `cache_hits` is
None) skip the ratio test: x is accepted only when it equals argmax p, and a rejected row draws its token from p
itself (no residual). So the emitted law is q(a*) δ_{a*} + (1 - q(a*)) p with a* = argmax p: argmax p comes out
too often. Fix (PR #24, open): sync proposals do come from q, so they take the ratio test min(1, p/q) and the
residual norm((p - q)_+) (the registry's `sd`).

    python -m decoding certify --verifier-file assets/museum/ssd_sync_greedy.py   # exit 3
    ./specscope museum                                                            # the exhibit's numbers
"""

import torch

from decoding.verify.verdict import NodeVerdict

LAW = "iid"  # the draft really is a sample of q
NAME = "museum_ssd_sync_greedy"
TITLE = "SSD sync path: greedy acceptance of a sampled draft (museum)"
MAX_CANDIDATES = 1
LOSSLESS = True  # what the code claimed (its leaf bonus is a draw from p); certify says otherwise


def conditional(p, q, candidates):
    p = p.double() / p.sum()
    best = int(torch.argmax(p))
    accept = torch.tensor([1.0 if int(candidates[0]) == best else 0.0], dtype=torch.float64)  # [1]
    return accept, p.clone()  # rejected: a fresh draw from p, the bug


def verify(p, q, candidates, generator):
    p = p.double() / p.sum()
    if int(candidates[0]) == int(torch.argmax(p)):
        return NodeVerdict(accepted=0, token=int(candidates[0]))
    return NodeVerdict(accepted=None, token=int(torch.multinomial(p, 1, generator=generator)), residual=p)
