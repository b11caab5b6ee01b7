"""RRS with replacement, written against the EARLIER README: AcceptTest with a threshold (8 positional values),
ResidualUpdate with the `residual=` keyword. A user's file like this must keep loading (issue 28, item 5)."""

import torch

from decoding.verify.verdict import AcceptTest, NodeVerdict, ResidualUpdate

LAW = "iid"
NAME = "earlier_rrs"


def _next(r, q):
    rest = torch.clamp(r - q, min=0.0)
    total = float(rest.sum())
    return rest / total if total > 1e-12 else None


def conditional(p, q, candidates):
    p, q = p.double() / p.sum(), q.double() / q.sum()
    accept = torch.zeros(len(candidates), dtype=torch.float64)
    r, stay = p, 1.0
    for i, x in enumerate(candidates):
        a = min(1.0, float(r[x]) / float(q[x])) if q[x] > 0 else 0.0
        accept[i] = stay * a
        stay *= 1.0 - a
        if stay <= 0.0:
            return accept, torch.zeros_like(p)
        r = _next(r, q)
        if r is None:
            return accept, p.clone()
    return accept, r


def verify(p, q, candidates, generator):
    p, q = p.double() / p.sum(), q.double() / q.sum()
    r, tests, updates = p, [], []
    for i, x in enumerate(candidates):
        num, den = float(r[x]), float(q[x])
        threshold = min(1.0, num / den) if den > 0 else 0.0
        u = float(torch.rand((), generator=generator, dtype=torch.float64))
        passed = u <= threshold
        tests.append(AcceptTest(i, int(x), num, den, threshold, u, passed, "r(x)/q(x)"))  # the earlier form
        if passed:
            return NodeVerdict(accepted=i, token=int(x), tests=tuple(tests), updates=tuple(updates))
        r = _next(r, q)
        if r is None:
            r = p
            break
        updates.append(ResidualUpdate(after_test=len(tests) - 1, residual=r))  # the earlier keyword
    token = int(torch.multinomial(r, 1, generator=generator))
    return NodeVerdict(accepted=None, token=token, tests=tuple(tests), updates=tuple(updates), residual=r)
