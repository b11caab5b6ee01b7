"""Run-level comparison: each verifier decodes the whole prompt alone, same seeds, same tree shape.

Block efficiency = tokens per target forward of a run; its mean over seeds gets a t-interval
(seeds are the independent replicates). Acceptance by depth = fraction of steps whose accepted
path reached that depth; expected tokens = mean exact E[tokens | drafted tree] per step.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from decoding.run import engine
from decoding.run.config import DecodeConfig

T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
       10: 2.228, 15: 2.131, 20: 2.086, 30: 2.042}  # two-sided 95 % Student t quantiles by df


@dataclass(frozen=True)
class VerifierRuns:
    key: str
    efficiencies: tuple[float, ...]  # tokens per target forward, one per seed
    mean: float
    ci_low: float
    ci_high: float
    acceptance_by_depth: tuple[float, ...]  # P(path reaches depth d), d = 1..D, over all steps and seeds
    expected_tokens: float  # mean exact E[tokens] per step
    steps: int


def t_quantile(df: int) -> float:
    return T95[max(d for d in T95 if d <= df)] if df >= 1 else math.inf


def mean_ci(values: list[float]) -> tuple[float, float, float]:
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return mean, math.nan, math.nan
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = t_quantile(n - 1) * sd / math.sqrt(n)
    return mean, mean - half, mean + half


def summarise(key: str, traces: list, depth: int) -> VerifierRuns:
    eff = [t.summary.tokens_per_forward for t in traces]
    steps = [s for t in traces for s in t.steps]
    reach = [sum(len(s.accepted_path) - 1 >= d for s in steps) / max(1, len(steps)) for d in range(1, depth + 1)]
    expected = [s.expected_tokens for s in steps if s.expected_tokens is not None]
    mean, lo, hi = mean_ci(eff)
    return VerifierRuns(key, tuple(eff), mean, lo, hi, tuple(reach),
                        sum(expected) / max(1, len(expected)), len(steps))


def compare_runs(pair, config: DecodeConfig, prompt: str, keys: list[str], seeds: list[int],
                 progress: Callable[[str], None] = lambda _: None) -> list[VerifierRuns]:
    """Every key decodes `prompt` once per seed (same seeds for all); one summary per key."""
    out = []
    for key in keys:
        traces = []
        for seed in seeds:
            progress(f"{key}: seed {seed}")
            # efficiency and exact expected tokens need no per-visit alpha*: skip that heavy theory
            traces.append(engine.generate(pair, config.with_(verifier=key, seed=seed), prompt, lazy_theory=True))
        out.append(summarise(key, traces, config.tree_depth))
    return out


def runs_json(results: list[VerifierRuns]) -> dict:
    return {r.key: {"block_efficiency": r.mean, "ci95": [r.ci_low, r.ci_high], "per_seed": list(r.efficiencies),
                    "acceptance_by_depth": list(r.acceptance_by_depth), "expected_tokens_per_step": r.expected_tokens,
                    "steps": r.steps}
            for r in results}
