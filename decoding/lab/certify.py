"""certify: is a verifier lossless on these tiny languages, exactly, and does its `verify` follow its law?

For every language and the tree shape: `exact.check_case` (float64, TOLERANCE 1e-9 in total variation
between the padded emitted law and the target's joint law); then a seeded Monte-Carlo check of the
real `verify` against the exact step law on the most probable trees of the first language. The
verdict is lossless only when both pass. `Certificate.to_json()` is the CLI's contract.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from decoding.lab import exact, montecarlo
from decoding.lab.language import TinyLanguage, random_language
from decoding.lab.trees import drafted_trees
from decoding.verify.entry import Verifier

TOLERANCE = 1e-9  # total variation allowed between the emitted and the target joint law (float64 sums)
DEFAULT_SHAPE = (2, 2)
MC_TREES = 3
MC_SAMPLES = 2000
RANDOM_V = (2, 3, 4)  # vocabulary sizes of --random languages (cycled)
RANDOM_DEPTH = 3  # context depth of --random languages (rows for every prefix up to this length)


@dataclass(frozen=True)
class Certificate:
    verifier: str
    cases: tuple[exact.Case, ...]
    worst_case: dict
    monte_carlo: tuple[montecarlo.MonteCarloCheck, ...]

    @property
    def max_tv(self) -> float:
        return max(c.tv for c in self.cases)

    @property
    def exact_ok(self) -> bool:
        return self.max_tv <= TOLERANCE

    @property
    def lossless(self) -> bool:
        return self.exact_ok and not any(m.flagged for m in self.monte_carlo)

    @property
    def n_trees(self) -> int:
        return sum(c.trees for c in self.cases)

    def to_json(self) -> dict:
        """The contract: verifier, lossless, max_tv, cases (drafted trees checked), worst_case,
        expected_tokens and expected_accepted (per step; the mean over languages when there are several)."""
        return {
            "verifier": self.verifier,
            "lossless": self.lossless,
            "max_tv": self.max_tv,
            "cases": self.n_trees,
            "worst_case": self.worst_case,
            "expected_tokens": exact.mean([c.expected_tokens for c in self.cases]),
            "expected_accepted": exact.mean([c.expected_accepted for c in self.cases]),
        }


def default_shape(entry: Verifier) -> tuple[int, ...]:
    """(2, 2), narrowed to the entry's candidate limit (sd: the chain (1, 1))."""
    top = entry.max_candidates or DEFAULT_SHAPE[0]
    return tuple(min(k, top) for k in DEFAULT_SHAPE)


def random_languages(n: int, seed: int, shape: Sequence[int], law: str) -> list[TinyLanguage]:
    """n seeded context-dependent languages, V cycling through RANDOM_V (at least k for laws of distinct draws)."""
    low = 2 if law == "iid" else max(2, max(shape))
    sizes = [v for v in RANDOM_V if v >= low] or [low]
    depth = max(RANDOM_DEPTH, len(shape))
    return [random_language(seed + i, sizes[i % len(sizes)], depth) for i in range(n)]


def certify(
    entry: Verifier,
    languages: Sequence[TinyLanguage],
    shape: tuple[int, ...] | None = None,
    *,
    seed: int = 0,
    mc_trees: int = MC_TREES,
    mc_samples: int = MC_SAMPLES,
) -> Certificate:
    """Certify `entry` on every language with `shape` (default: default_shape(entry))."""
    if not languages:
        raise ValueError("certify needs at least one language")
    shape = shape or default_shape(entry)
    cases = tuple(exact.check_case(entry, language, shape) for language in languages)
    worst = max(range(len(cases)), key=lambda i: cases[i].tv)
    report = exact.worst_case_report(entry, languages[worst], cases[worst], locate=cases[worst].tv > TOLERANCE)
    checks = monte_carlo(entry, languages[0], shape, seed, mc_trees, mc_samples)
    flagged = [m for m in checks if m.flagged]
    if flagged and report["tv"] <= TOLERANCE:
        report = {"kind": "monte_carlo", "language": languages[0].name, "shape": list(shape),
                  "tree": flagged[0].tree, "p_value": flagged[0].p_value, "empirical_tv": flagged[0].tv,
                  "sequence": flagged[0].worst, "samples": flagged[0].samples}
    return Certificate(entry.name, cases, report, checks)


def monte_carlo(entry: Verifier, language: TinyLanguage, shape: tuple[int, ...], seed: int, trees: int,
                samples: int) -> tuple[montecarlo.MonteCarloCheck, ...]:
    if trees <= 0 or samples <= 0:
        return ()
    chosen = montecarlo.pick_trees(list(drafted_trees(entry, language, shape)), trees)
    return tuple(montecarlo.check_tree(entry, language, d, samples, seed + i) for i, d in enumerate(chosen))


def summary_lines(cert: Certificate) -> list[str]:
    """The human report: verdict, worst case, exact step numbers and the root's acceptance vs alpha*."""
    verdict = "LOSSLESS (certified)" if cert.lossless else "NOT lossless"
    lines = [f"{cert.verifier}: {verdict}; max TV {cert.max_tv:.3g} (tolerance {TOLERANCE:g}) "
             f"over {len(cert.cases)} language(s), {cert.n_trees} drafted trees"]
    for c in cert.cases:
        lines.append(
            f"  {c.language} shape {','.join(map(str, c.shape))}: TV {c.tv:.3g}, E[tokens/step] "
            f"{c.expected_tokens:.6f}, E[accepted] {c.expected_accepted:.6f}, root acceptance "
            f"{c.root_acceptance:.6f} vs alpha* {c.alpha_star:.6f} (membership bound {c.membership:.6f})"
        )
    for m in cert.monte_carlo:
        mark = "DISAGREES with conditional" if m.flagged else "agrees"
        lines.append(f"  Monte Carlo verify ({m.samples} runs, tree {m.tree}): {mark}, p-value {m.p_value:.3g}, "
                     f"empirical TV {m.tv:.3g}")
    if not cert.lossless:
        lines.append(f"  worst case: {cert.worst_case}")
    return lines
