"""A rule file written as its paper reads (rules/rrs_wor.py, rules/khisti_is.py) and its fast twin under rules/fast/
(what the registry runs) are one verifier: on many random nodes, under the same seed, the same selection, the same
tests (token, uniform, decision, numbers), the same accepted candidate and token, the same shown rows (read late and
backwards, so a stale replay shows), and the same exact conditional law.

Tolerances: rrs_wor's twin tracks r unnormalised and d's mass by subtraction (relative 1e-14); khisti_is's twin
fits r per log-weight bin where the textbook sums every e^{-t w} (both ~1e-13 of k q(y)). Seeds where a uniform
falls within that of a threshold would decide differently; none does here (the tests are seeded, so this is
checked, not hoped). One difference by design: when khisti_is rejects, the twin draws the residual token by
rejection from p, the textbook from the built residual, so the two tokens are not compared one to one; the twin's
token must lie in the textbook residual's support, and its law is the exact conditional law compared below (and
tests/verify/test_khisti_residual_token.py checks that sampler by Monte Carlo).

Broken variants of the twins (each must make the comparison fail, test_broken_fast_twins_fail): a stale replayed
row, a stale undrawn mass, a repeated candidate tested as if still undrawn, khisti_is's residual taken against q
instead of r (the paper's pitfall), r(y) taken 1 % high.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial

import pytest
import torch

from decoding.verify.registry import VERIFIERS
from decoding.verify.rules import khisti_is, rrs_wor
from decoding.verify.rules.common import conditional_chain, prepare, verify_chain
from decoding.verify.rules.fast import khisti_lazy, rrs_wor_rows
from decoding.verify.verdict import NodeVerdict
from tests.verifier_oracles import adversarial_pairs, dirichlet_pair, mixed_law

F64 = torch.float64
NODES = 150  # random nodes per rule
REL = 1e-10  # relative agreement of numbers and rows (measured: <= 1.2e-13, khisti_is's denominators)
ABS = 1e-12  # absolute agreement, in probability units (measured: rows <= 1e-13, laws <= 6e-14)


@dataclass(frozen=True)
class Textbook:
    verify: Callable[..., NodeVerdict]
    conditional: Callable[..., tuple[torch.Tensor, torch.Tensor]]


TEXTBOOK = {
    "rrs_wor": Textbook(partial(verify_chain, rrs_wor.chain), partial(conditional_chain, rrs_wor.chain)),
    "khisti_is": Textbook(khisti_is.verify, khisti_is.conditional),
}


def _random_pair(g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """p and q [V] over vocabularies from 5 to 300, near or far apart, some with zeros (a top-k warp) in either."""
    V = [5, 9, 16, 40, 120, 300][int(torch.randint(6, (1,), generator=g))]
    scale = [0.5, 1.5, 3.0, 5.0][int(torch.randint(4, (1,), generator=g))]
    logits_q = torch.randn(V, generator=g, dtype=F64) * scale
    logits_p = logits_q + torch.randn(V, generator=g, dtype=F64) * scale * float(torch.rand(1, generator=g))
    for logits in (logits_p, logits_q):
        if float(torch.rand(1, generator=g)) < 0.3:  # a top-k warp: zeros outside the k most likely
            keep = max(2, V // 3)
            logits[torch.argsort(logits)[:-keep]] = -float("inf")
    return torch.softmax(logits_p, 0), torch.softmax(logits_q, 0)


def _nodes(key: str) -> list[tuple[str, torch.Tensor, torch.Tensor, list[int], int]]:
    """(name, p, q, candidates, seed): random nodes, the adversarial pairs, and (rrs_wor) hand-made candidates
    the sampler never draws (a repeat, a q = 0 token)."""
    g = torch.Generator().manual_seed(2027)
    entry, nodes = VERIFIERS[key], []
    for n in range(NODES):
        p, q = _random_pair(g)
        k = min(1 + n % 8, p.shape[0])
        nodes.append((f"random{n}", p, q, entry.sample(q, k, g), n))
    for name, p, q in adversarial_pairs(8):
        for k in (2, 4):
            nodes.append((f"{name} k={k}", p, q, entry.sample(q, k, g), k))
    q0 = torch.softmax(torch.randn(12, generator=g, dtype=F64), 0)
    q0[[2, 5, 9]] = 0.0  # q = 0 tokens (p > 0 there), a repeated candidate and a q = 0 candidate
    p0 = torch.softmax(torch.randn(12, generator=g, dtype=F64), 0)
    p0[[0, 1, 4, 7]] *= 1e-3  # p small on the drawable candidates: the chain runs on to the repeats
    for seed in range(5):
        nodes.append((f"repeats{seed}", p0 / p0.sum(), q0 / q0.sum(), [1, 4, 1, 5, 7, 4, 0], seed))
    return nodes


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= ABS + REL * max(abs(a), abs(b))


def _rows_close(a: torch.Tensor | None, b: torch.Tensor | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return bool(((a - b).abs() <= ABS + REL * torch.maximum(a.abs(), b.abs())).all())


def _differences(fast: NodeVerdict, book: NodeVerdict, key: str) -> list[str]:
    """What differs between the twin's verdict and the textbook's (empty: the same verdict)."""
    out = []
    if (fast.accepted, fast.via_residual, fast.notes) != (book.accepted, book.via_residual, book.notes):
        out.append(f"accepted/notes {fast.accepted, fast.notes} vs {book.accepted, book.notes}")
    drawn_alike = key == "rrs_wor" or fast.accepted is not None
    if drawn_alike and fast.token != book.token:
        out.append(f"token {fast.token} vs {book.token}")
    if len(fast.tests) != len(book.tests):
        return out + [f"{len(fast.tests)} tests vs {len(book.tests)}"]
    for i, (a, b) in enumerate(zip(fast.tests, book.tests, strict=True)):
        if (a.candidate, a.token, a.uniform, a.passed, a.label) != (b.candidate, b.token, b.uniform, b.passed, b.label):
            out.append(f"test {i}: {a} vs {b}")
        elif not (_close(a.numerator, b.numerator) and _close(a.denominator, b.denominator)):
            out.append(f"test {i} numbers: {a.numerator}/{a.denominator} vs {b.numerator}/{b.denominator}")
    if len(fast.updates) != len(book.updates):
        return out + [f"{len(fast.updates)} updates vs {len(book.updates)}"]
    for i in reversed(range(len(fast.updates))):  # late and backwards: a replay must restart, not go on
        a, b = fast.updates[i], book.updates[i]
        if a.after_test != b.after_test or not _rows_close(a.residual, b.residual):
            out.append(f"update {i}: residual row")
        if not _rows_close(a.draft, b.draft):
            out.append(f"update {i}: draft row")
    if key == "rrs_wor" and not _rows_close(fast.residual, book.residual):
        out.append("final residual row")
    if not drawn_alike and float(book.updates[-1].residual[fast.token]) <= 0:
        out.append(f"residual token {fast.token} outside the textbook residual's support")
    return out


def _law_pieces(law: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """[k + V] P(candidate i accepted), then P(no candidate accepted and y emitted): the exact law, with the residual
    weighted by the mass that reaches it (a residual normalised from a tiny mass carries that mass's rounding)."""
    accept, residual = law
    return torch.cat([accept, (1.0 - float(accept.sum())) * residual])


def _mismatches(key: str) -> Iterator[str]:
    """Every node where the registry's verify or conditional differs from the textbook's, as found."""
    entry, book = VERIFIERS[key], TEXTBOOK[key]
    for name, p, q, xs, seed in _nodes(key):
        fast = entry.verify(p, q, xs, torch.Generator().manual_seed(seed))
        slow = book.verify(p, q, xs, torch.Generator().manual_seed(seed))
        yield from (f"{name}: {d}" for d in _differences(fast, slow, key))
        if not _rows_close(*(_law_pieces(c(p, q, xs)) for c in (entry.conditional, book.conditional))):
            yield f"{name}: conditional law"


def test_the_registry_runs_the_fast_twins():
    assert rrs_wor.FAST is rrs_wor_rows and khisti_is.FAST is khisti_lazy
    assert VERIFIERS["rrs_wor"].verify.args == (rrs_wor_rows.chain,)
    assert VERIFIERS["khisti_is"].verify is khisti_lazy.verify
    assert VERIFIERS["khisti_is"].acceptance is khisti_lazy.acceptance


def test_the_importance_weights_are_the_same_numbers():
    """Selection draws from beta = w[xs] / sum: the twins must share w bit for bit, conventions included (0 off q's
    support, where p/q overflows and at or below W_LO; capped at W_CAP)."""
    p = torch.tensor([0.2, 0.2, 1e-15, 0.2, 0.2, 0.2, 0.0, 0.0], dtype=F64)
    q = torch.tensor([0.3, 0.0, 0.2, 1e-320, 0.1, 1e-306, 0.4, 0.0], dtype=F64)  # q(3): p/q overflows to inf
    expected = torch.tensor([0.2 / 0.3, 0.0, 0.0, 0.0, 2.0, 1e300, 0.0, 0.0], dtype=F64)
    assert torch.equal(khisti_is.sir_weights(p, q), expected)
    assert torch.equal(khisti_lazy.sir_weights(p, q), expected)
    for _, p, q, xs, _ in _nodes("khisti_is"):
        p, q, _ = prepare(p, q, xs)
        assert torch.equal(khisti_is.sir_weights(p, q), khisti_lazy.sir_weights(p, q))


@pytest.mark.parametrize("key", sorted(TEXTBOOK))
def test_fast_twin_gives_the_textbook_verdicts_and_laws(key):
    assert list(_mismatches(key)) == []


def test_the_nodes_exercise_both_outcomes_and_every_path():
    """The comparison means something only if the nodes reach rejections, acceptances and, for khisti_is, both
    ways r is computed (enumeration, integral) and the fit behind an undecided bracket."""
    for key in TEXTBOOK:
        verdicts = [VERIFIERS[key].verify(p, q, xs, torch.Generator().manual_seed(s)) for _, p, q, xs, s in _nodes(key)]
        assert sum(v.accepted is None for v in verdicts) >= 20 and sum(v.accepted is not None for v in verdicts) >= 20
    laws = [_induced(p, q, len(xs)) for _, p, q, xs, _ in _nodes("khisti_is")]
    assert sum(law._binned is not None for law in laws) >= 30  # the integral path, not only enumeration


def _induced(p: torch.Tensor, q: torch.Tensor, k: int) -> khisti_lazy.InducedLaw:
    p, q, _ = prepare(p, q, [0])
    return khisti_lazy.InducedLaw(q, khisti_lazy.sir_weights(p, q), k)


@pytest.mark.parametrize("key", sorted(TEXTBOOK))
def test_the_textbook_rules_are_lossless(monkeypatch, key):
    """The textbook is the twin's oracle, so it is itself proved: its exact law mixed over every candidate tuple is p
    (khisti_is through its integral too, by lowering the enumeration limit)."""
    g = torch.Generator().manual_seed(11)
    cases = [dirichlet_pair(g, V, 0.7, sparse=V % 2 == 0) for V in (3, 4, 5)] + [pq for _, *pq in adversarial_pairs(4)]
    for limit in (khisti_is.ENUMERATION_LIMIT, 0) if key == "khisti_is" else (None,):
        if limit is not None:
            monkeypatch.setattr(khisti_is, "ENUMERATION_LIMIT", limit)
        for p, q in cases:
            for k in (2, 3):  # k above q's support too (rrs_wor's uniform fallback)
                law = mixed_law(TEXTBOOK[key].conditional, p, q, k, VERIFIERS[key].law.name)
                assert float((law - p).abs().max()) < 1e-11


def _stale_replay(self, i):
    """_Shown.residual that goes on from the last row built even when an earlier row is asked for."""
    if self._r is None:
        self._r, self._done = rrs_wor_rows._Residual(self.p), 0
    while self._done <= i:
        base, scale, total, x = self.log[self._done]
        self._r.update(base, scale)
        self._r.settle(total)
        self._r.freeze(x)
        self._done += 1
    return torch.mul(self._r.u, 1.0 / self._r.total, out=self.rows.take())


def _stale_mass(self, drawn):
    """_Undrawn.drop that marks the token drawn but leaves q's undrawn mass as it was: d is no longer a law."""
    if self.mass is None:
        self.mass = float(self.q.sum())
    self.drawn.add(drawn[-1])
    self.scale = 1.0 / self.mass


BROKEN = {
    "stale replayed row": ("rrs_wor", rrs_wor_rows._Shown, "residual", _stale_replay),
    "stale undrawn mass": ("rrs_wor", rrs_wor_rows._Undrawn, "drop", _stale_mass),
    "repeat tested as undrawn": ("rrs_wor", rrs_wor_rows._Undrawn, "at",
                                 lambda self, x: float(self.base[x]) * self.scale),
    "residual against q, not r": ("khisti_is", khisti_lazy.InducedLaw, "positive_part",
                                  lambda self, p: torch.sub(p, self.q).clamp_(min=0.0)),
    "r(y) 1 % high": ("khisti_is", khisti_lazy.InducedLaw, "bounds",
                       lambda self, token: (self.at(token) * 1.01,) * 2),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_fast_twins_fail(monkeypatch, name):
    key, where, attribute, value = BROKEN[name]
    monkeypatch.setattr(where, attribute, value)
    assert next(_mismatches(key), None) is not None, f"broken variant '{name}' went unnoticed"
