"""Does a verifier's real `verify` follow its own exact `conditional`? A seeded Monte-Carlo check.

The exact certificate trusts `conditional`; the engine runs `verify`. A user's verify that disagrees
with their conditional passes the exact check and still biases every real run, so the lab judges a
few drafted trees many times (`entry.judge`, the engine's call) and runs a Pearson chi-square test of
the emitted sequences against the exact step law. Small expected counts are pooled; a sequence the
exact law gives probability 0 lands in the pool too, so an impossible outcome fails at once.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from scipy.stats import chi2

from decoding.lab.exact import outcomes_of
from decoding.lab.language import Prefix, TinyLanguage
from decoding.lab.trees import DraftedTree, describe
from decoding.verify.entry import Verifier
from decoding.verify.sampling import make_generator
from decoding.verify.step_law import emitted_law

P_VALUE = 1e-6  # flag below this: a correct verify fails one tree in a million (seeded, so reproducible)
MIN_EXPECTED = 5.0  # Pearson's rule: pool categories expected fewer times than this


@dataclass(frozen=True)
class MonteCarloCheck:
    tree: dict[str, list[str]]  # prefix text -> candidates (describe)
    samples: int
    p_value: float
    tv: float  # empirical TV between the sampled and the exact emitted law
    worst: str  # the emitted sequence with the largest |empirical - exact|

    @property
    def flagged(self) -> bool:
        return self.p_value < P_VALUE


def sample_emitted(entry: Verifier, drafted: DraftedTree, samples: int, seed: int) -> Counter:
    """Emitted sequences (accepted path + last token) of `samples` seeded runs of the real verify."""
    generator = make_generator(seed)
    counts: Counter = Counter()
    for _ in range(samples):
        try:
            walk = entry.judge(drafted.tree, drafted.p, drafted.q, generator)
        except Exception as err:  # a user's verify may raise anything
            raise ValueError(f"verifier {entry.name!r}: verify raised {type(err).__name__}: {err}") from None
        counts[tuple(walk.tokens)] += 1
    return counts


def check_tree(
    entry: Verifier, language: TinyLanguage, drafted: DraftedTree, samples: int, seed: int
) -> MonteCarloCheck:
    exact = emitted_law(outcomes_of(entry, drafted), drafted.tree)
    counts = sample_emitted(entry, drafted, samples, seed)
    keys = set(exact) | set(counts)
    gaps = {s: counts.get(s, 0) / samples - exact.get(s, 0.0) for s in keys}
    worst = max(keys, key=lambda s: abs(gaps[s]))
    return MonteCarloCheck(
        tree=describe(drafted.tree, language),
        samples=samples,
        p_value=pearson_p_value(counts, exact, samples),
        tv=0.5 * sum(abs(g) for g in gaps.values()),
        worst=language.text(worst),
    )


def pearson_p_value(counts: Counter, exact: dict[Prefix, float], samples: int) -> float:
    """Chi-square goodness of fit; categories expected < MIN_EXPECTED times are pooled into one."""
    observed, expected = [], []
    pool_o, pool_e = 0.0, 0.0
    for s in set(exact) | set(counts):
        o, e = float(counts.get(s, 0)), samples * exact.get(s, 0.0)
        if e >= MIN_EXPECTED:
            observed.append(o)
            expected.append(e)
        else:
            pool_o, pool_e = pool_o + o, pool_e + e
    if pool_o > 0 and pool_e <= 0:
        return 0.0  # an outcome the exact law forbids
    if pool_e > 0:
        observed.append(pool_o)
        expected.append(pool_e)
    if len(expected) < 2:
        return 1.0
    stat = sum((o - e) ** 2 / e for o, e in zip(observed, expected, strict=True))
    return float(chi2.sf(stat, len(expected) - 1))


def pick_trees(trees: list[DraftedTree], count: int) -> list[DraftedTree]:
    """The `count` most probable drafted trees (the cases users hit most), ties in enumeration order."""
    return sorted(trees, key=lambda d: -d.prob)[:count]
