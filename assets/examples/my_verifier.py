"""Recursive rejection sampling with replacement, written from scratch as a custom verifier (correct).

k i.i.d. drafts are tested in draw order against a residual r that starts at p: candidate x passes with
probability min(1, r(x)/q(x)); after each rejection r <- norm((r - q)_+). When every draft is
rejected, the token is drawn from the last r. Lossless (docs/verifiers.md §3).

Try it:  python -m decoding certify --verifier-file assets/examples/my_verifier.py
         ./specscope app --verifier-file assets/examples/my_verifier.py
"""

import torch

from decoding.verify.verdict import NodeVerdict

LAW = "iid"  # the candidates are k independent draws from q
NAME = "my_rrs"
TITLE = "My RRS (custom example)"


def _residual(r, q):
    """norm((r - q)_+); p itself when it holds no mass (then rejection had probability 0)."""
    rest = torch.clamp(r - q, min=0.0)
    total = float(rest.sum())
    return rest / total if total > 1e-12 else None


def conditional(p, q, candidates):
    """Exact law: accept[i] = P(candidate i is accepted); residual = law of the token when none is."""
    p, q = p.double() / p.sum(), q.double() / q.sum()
    accept = torch.zeros(len(candidates), dtype=torch.float64)  # [k]
    r, stay = p, 1.0
    for i, x in enumerate(candidates):
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
    """One random run of the same rule, drawing its uniforms from `generator` only."""
    p, q = p.double() / p.sum(), q.double() / q.sum()
    r = p
    for i, x in enumerate(candidates):
        a = min(1.0, float(r[x]) / float(q[x])) if q[x] > 0 else 0.0
        if float(torch.rand((), generator=generator, dtype=torch.float64)) < a:
            return NodeVerdict(accepted=i, token=int(x))
        r = _residual(r, q)
        if r is None:
            r = p
            break
    token = int(torch.multinomial(r, 1, generator=generator))
    return NodeVerdict(accepted=None, token=token, residual=r)
