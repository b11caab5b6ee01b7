"""The lab at one node: a verifier's exact output law against p, its acceptance against the bounds,
and a Monte-Carlo histogram from its real `verify`, as plain data for the viz (no tensors leave here).

Also the sequence-level view of a tree shape on a tiny language (certify's numbers, one language).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from decoding.lab import certify as certify_mod
from decoding.lab.custom import is_custom
from decoding.lab.language import TinyLanguage
from decoding.lab.trees import candidate_tuples
from decoding.verify.entry import Verifier
from decoding.verify.optimal import membership_bound, optimal_acceptance
from decoding.verify.sampling import make_generator

F64 = torch.float64


@dataclass(frozen=True)
class NodeReport:
    verifier: str
    title: str
    claims_lossless: bool
    custom: bool
    k: int
    p: tuple[float, ...]  # target law
    output: tuple[float, ...]  # exact law of the emitted token, mixed over every candidate tuple
    tv: float  # TV(output, p)
    acceptance: float  # exact P(emitted token is a candidate)
    alpha_star: float  # optimal acceptance for this candidate law (F4)
    membership: float  # membership bound (F3)
    sampled: tuple[float, ...]  # Monte-Carlo frequencies of the emitted token from the real verify
    samples: int
    sampled_tv: float  # TV(sampled, output): large when verify disagrees with conditional


def exact_node_law(entry: Verifier, p: torch.Tensor, q: torch.Tensor, k: int) -> tuple[torch.Tensor, float]:
    """([V] output law, acceptance): the entry's conditional mixed over every tuple of its law."""
    out = torch.zeros_like(p)  # [V]
    accepted = 0.0
    for xs, prob in candidate_tuples(entry, q, k):
        accept, residual = entry.conditional(p, q, list(xs))  # [k], [V]
        accept = accept.to(F64)
        out.index_add_(0, torch.tensor(xs), prob * accept)
        out += prob * (1.0 - float(accept.sum())) * residual.to(F64)
        accepted += prob * float(accept.sum())
    return out, accepted


def sampled_node_law(entry: Verifier, p: torch.Tensor, q: torch.Tensor, k: int, samples: int, seed: int):
    """[V] frequencies of the emitted token over `samples` seeded (draw candidates, verify) runs."""
    generator = make_generator(seed)
    counts = torch.zeros_like(p)  # [V]
    for _ in range(samples):
        verdict = entry.verify(p, q, entry.sample(q, k, generator), generator)
        counts[verdict.token] += 1
    return counts / max(samples, 1)


def node_report(entry: Verifier, p: torch.Tensor, q: torch.Tensor, k: int, samples: int = 2000,
                seed: int = 0) -> NodeReport:
    """Everything the lab shows for one verifier at one node; ValueError (one line) on bad input."""
    entry.check_k(k)
    p, q = p.to(F64) / p.sum(), q.to(F64) / q.sum()
    law = str(entry.law)
    try:
        output, acceptance = exact_node_law(entry, p, q, k)
        sampled = sampled_node_law(entry, p, q, k, samples, seed)
    except ValueError:
        raise
    except Exception as err:  # a custom verifier may raise anything
        raise ValueError(f"verifier {entry.name!r} raised {type(err).__name__}: {err}") from None
    return NodeReport(
        verifier=entry.name, title=entry.title, claims_lossless=entry.lossless, custom=is_custom(entry), k=k,
        p=tuple(p.tolist()), output=tuple(output.tolist()), tv=0.5 * float((output - p).abs().sum()),
        acceptance=acceptance, alpha_star=optimal_acceptance(p, q, k, law),
        membership=membership_bound(p, q, k, law), sampled=tuple(sampled.tolist()), samples=samples,
        sampled_tv=0.5 * float((sampled - output).abs().sum()),
    )


@dataclass(frozen=True)
class SequenceReport:
    verifier: str
    shape: tuple[int, ...]
    sequences: tuple[str, ...]  # padded sequences, as vocabulary text
    got: tuple[float, ...]  # the verifier's padded emitted law
    want: tuple[float, ...]  # the target's joint law
    tv: float
    lossless: bool
    expected_tokens: float
    root_acceptance: float
    alpha_star: float
    worst_case: dict
    monte_carlo_flagged: bool


def sequence_report(entry: Verifier, language: TinyLanguage, shape: tuple[int, ...], seed: int = 0,
                    mc_samples: int = 600) -> SequenceReport:
    """certify on one language, reshaped for the bars: every padded sequence, got vs want."""
    cert = certify_mod.certify(entry, [language], shape, seed=seed, mc_trees=1, mc_samples=mc_samples)
    case = cert.cases[0]
    seqs = sorted(set(case.got) | set(case.want))
    return SequenceReport(
        verifier=entry.name, shape=shape, sequences=tuple(language.text(s) for s in seqs),
        got=tuple(case.got.get(s, 0.0) for s in seqs), want=tuple(case.want.get(s, 0.0) for s in seqs),
        tv=case.tv, lossless=cert.lossless, expected_tokens=case.expected_tokens,
        root_acceptance=case.root_acceptance, alpha_star=case.alpha_star, worst_case=cert.worst_case,
        monte_carlo_flagged=any(m.flagged for m in cert.monte_carlo),
    )
