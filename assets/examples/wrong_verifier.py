"""A SUBTLY WRONG recursive rejection sampler: it skips duplicate drafts (docs/verifiers.md §11.3, §13).

With i.i.d. drafts the same token can be drawn twice. This version tests a repeated token only once
and does not update the residual for the repeat ("it was already rejected, why test it again?").
But each draw is a separate proposal from q: skipping its residual update leaves r too close to p, so
tokens that the draft over-proposes come out too often. verify and conditional agree with each other,
so the Monte-Carlo check passes; only the exact certificate catches it (on 3+ tokens: with two, the
residual after a rejection already excludes the repeated token, and the bug is harmless):

    python -m decoding certify --verifier-file assets/examples/wrong_verifier.py   # exit 3, TV > 0
"""

import torch

from decoding.verify.verdict import NodeVerdict

LAW = "iid"
NAME = "wrong_rrs_dedup"
TITLE = "RRS that skips duplicate drafts (wrong on purpose)"


def _residual(r, q):
    rest = torch.clamp(r - q, min=0.0)
    total = float(rest.sum())
    return rest / total if total > 1e-12 else None


def _tests(candidates):
    """Indices of the draws that get a test: the first draw of each token only (the bug)."""
    seen, keep = set(), []
    for i, x in enumerate(candidates):
        if int(x) not in seen:
            seen.add(int(x))
            keep.append(i)
    return keep


def conditional(p, q, candidates):
    p, q = p.double() / p.sum(), q.double() / q.sum()
    accept = torch.zeros(len(candidates), dtype=torch.float64)
    r, stay = p, 1.0
    for i in _tests(candidates):
        x = candidates[i]
        a = min(1.0, float(r[x]) / float(q[x])) if q[x] > 0 else 0.0
        accept[i] = stay * a
        stay *= 1.0 - a
        if stay <= 0.0:
            return accept, torch.zeros_like(p)
        r = _residual(r, q)
        if r is None:
            return accept, p.clone()
    return accept, r


def verify(p, q, candidates, generator):
    p, q = p.double() / p.sum(), q.double() / q.sum()
    r = p
    for i in _tests(candidates):
        x = candidates[i]
        a = min(1.0, float(r[x]) / float(q[x])) if q[x] > 0 else 0.0
        if float(torch.rand((), generator=generator, dtype=torch.float64)) < a:
            return NodeVerdict(accepted=i, token=int(x))
        r = _residual(r, q)
        if r is None:
            r = p
            break
    return NodeVerdict(accepted=None, token=int(torch.multinomial(r, 1, generator=generator)), residual=r)
