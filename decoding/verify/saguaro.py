"""Saguaro sampling: SSD's draft law, which bends q so that a rejection's token lands in a precomputed cache
(docs/verifiers.md §23).

Speculative speculative decoding (Kumar, Dao, May 2026, arXiv 2603.03251; code tanishqkumar/ssd, read at 6ed3022)
drafts while the target verifies: for every outcome the verify may have (accepted length i, the token y emitted
after it) the drafter precomputes the next speculation, but only for F tokens per position, the draft's top-F at
position i without its own drafted token x_{i+1} (at the last position, after a fully accepted chain, the top-F):
`get_forked_recovery_tokens_from_logits`. A step whose y is among them is a cache hit. Under plain SD a rejection's
y ~ norm((p - q)_+) avoids exactly the tokens q favours, so it misses the cache. Saguaro sampling draws the drafts
from q' instead: q with its top tokens multiplied by C and renormalised (`apply_sampler_x_rescaling`, `sampler_x`;
C < 1 moves residual mass onto the cached tokens, C = 1 is SD), and verifies against q' (`verify.py` applies the
same rescale to probs_q). SD against the law the drafts were drawn from: lossless for any C > 0.

Transcribed: the rescaled set is `torch.topk(probs, F + 1)`, F + 1 tokens (the code comments "topF" but takes F + 1:
the drafted token is usually one of the top ones and the F cached at a rejection are then the rest); ties here go to
the lower id (`laws.top_order`), where torch.topk's order is unspecified. The cache order is the draft's logits,
i.e. q's, so the cached set is read from q, not q'.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from decoding.verify import laws
from decoding.verify.entry import Verifier
from decoding.verify.registry import VERIFIERS

SD = VERIFIERS["sd"]


def check_settings(fan_out: int, scale: float) -> None:
    if isinstance(fan_out, bool) or not isinstance(fan_out, int) or fan_out < 1:
        raise ValueError(f"Saguaro's fan-out F must be a whole number >= 1, got {fan_out!r}")
    if not (isinstance(scale, (int, float)) and math.isfinite(scale) and scale > 0):
        raise ValueError(f"Saguaro's scale C must be a finite number > 0, got {scale!r}")


def rescaled(q: torch.Tensor, fan_out: int, scale: float) -> torch.Tensor:
    """q' [V]: q's top F + 1 tokens (SSD's topk(F + 1)) times C, renormalised (float64)."""
    q = q.to(torch.float64)
    weights = q.clone()
    weights[laws.top_order(q, fan_out + 1)] *= scale
    return weights / weights.sum()


def cached(q: torch.Tensor, fan_out: int, drafted: int | None) -> list[int]:
    """The F tokens the drafter precomputes for a position: q's top F without the token drafted there (None: the
    position after a fully accepted chain, where nothing is excluded)."""
    order = laws.top_order(q, fan_out + (drafted is not None))
    return [t for t in order if t != drafted][:fan_out]


class SaguaroLaw(laws.IID):
    """k i.i.d. draws from q' (SSD drafts one token per position: k = 1 on its chains). Not a registry law (it has
    settings); its str names them, which is what a record keeps."""

    name, iid_compatible, max_k = "saguaro", False, 1  # k >= 2 would need its own optimum route (verify/optimal.py)

    def __init__(self, fan_out: int, scale: float) -> None:
        check_settings(fan_out, scale)
        self.fan_out, self.scale = fan_out, float(scale)

    def __str__(self) -> str:
        return f"saguaro(F={self.fan_out}, C={self.scale:g})"

    def __repr__(self) -> str:
        return f"SaguaroLaw({self.fan_out}, {self.scale!r})"

    def single_draw(self, q: torch.Tensor) -> torch.Tensor:
        return rescaled(q, self.fan_out, self.scale)

    def _sample(self, q, k, generator):
        return super()._sample(rescaled(q, self.fan_out, self.scale), k, generator)

    def _enumerate(self, q, k):
        return super()._enumerate(rescaled(q, self.fan_out, self.scale), k)

    def _inclusion(self, q, k):
        return laws.iid_hit(rescaled(q, self.fan_out, self.scale).clamp(max=1.0), k)


def entry(fan_out: int = 3, scale: float = 0.5, *, verified_against_q_prime: bool = True) -> Verifier:
    """SD verifying drafts of the Saguaro law against q' (lossless); `verified_against_q_prime=False` is the mistake
    to avoid, the same drafts tested with the raw q (certified lossy in the tests)."""
    law = SaguaroLaw(fan_out, scale)

    def law_q(q: torch.Tensor) -> torch.Tensor:
        return rescaled(q, fan_out, scale) if verified_against_q_prime else q

    def verify(p, q, candidates: Sequence[int], generator):
        return SD.verify(p, law_q(q), candidates, generator)

    def conditional(p, q, candidates: Sequence[int]):
        return SD.conditional(p, law_q(q), candidates)

    def acceptance(p, q, k):  # SD's closed form against the law the drafts came from
        return float(torch.minimum(p, rescaled(q, fan_out, scale)).sum())

    return Verifier(name="saguaro" if verified_against_q_prime else "saguaro_raw_q",
                    title=f"SD on Saguaro drafts ({law})", lossless=verified_against_q_prime, law=law,
                    max_candidates=1, description="One draft from q' (q's top F + 1 tokens times C, renormalised), "
                    "accepted with min(1, p/q'); else a sample of norm((p - q')_+).",
                    paper="Kumar, Dao, May 2026 (SSD), arXiv 2603.03251", verify=verify, conditional=conditional,
                    acceptance=acceptance if verified_against_q_prime else None,
                    bonus_from_p=True)  # SSD draws the bonus from p: the raw variant too (else its leaf is argmax p)


@dataclass(frozen=True)
class NodeHit:
    """At one node whose draft x ~ q' is verified by SD against q': acceptance = sum min(p, q'); rejection_hit =
    P(x rejected and the emitted y in the cache of x's position); rejection = P(x rejected); bonus_hit = P(y in
    the cache) when the node is the chain's end (y ~ p, cache q's top F)."""

    acceptance: float
    rejection: float
    rejection_hit: float
    bonus_hit: float

    @property
    def hit_given_rejection(self) -> float | None:
        return self.rejection_hit / self.rejection if self.rejection > 0 else None


def node_hit(p: torch.Tensor, q: torch.Tensor, fan_out: int, scale: float) -> NodeHit:
    """Exact, by a sum over the drafts: sum_x q'(x) (1 - min(1, p(x)/q'(x))) r(S(x)), r = norm((p - q')_+) and
    S(x) = q's top F without x."""
    check_settings(fan_out, scale)
    p, q = p.to(torch.float64), q.to(torch.float64)
    q_prime = rescaled(q, fan_out, scale)
    acceptance = float(torch.minimum(p, q_prime).sum())
    excess = (p - q_prime).clamp(min=0)
    residual = excess / excess.sum() if float(excess.sum()) > 0 else p
    hit = 0.0
    for x in torch.nonzero(q_prime > 0).flatten().tolist():
        reject = float(q_prime[x]) - min(float(q_prime[x]), float(p[x]))  # q'(x) (1 - min(1, p(x)/q'(x)))
        if reject > 0:
            hit += reject * float(residual[cached(q, fan_out, x)].sum())
    bonus = float(p[cached(q, fan_out, None)].sum())
    return NodeHit(acceptance, 1.0 - acceptance, hit, bonus)
