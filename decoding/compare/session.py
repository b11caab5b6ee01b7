"""The compare step loop: draft per-law trees -> score the forest once -> every verifier judges -> commit.

A CompareRun is an engine Run whose step drafts one tree per candidate law of the selected
verifiers and scores all of them in ONE target forward over their forest. The run verifier
(config.verifier) decides the emitted text and the KV commit (its accepted path mapped to forest
ids); every other verifier judges the same step with the same judge coins (its generator starts
from the run generator's state: common random numbers for the tests too) and is only recorded.
"""

from __future__ import annotations

import time
from dataclasses import replace

import torch

from decoding.compare import judging
from decoding.compare.drafting import ForestDraft, draft_forest
from decoding.compare.selection import check_selection, groups_of, tree_group
from decoding.models.target import score_tree
from decoding.run import engine
from decoding.run import recorder as recording
from decoding.run.compare_schema import CompareRecord
from decoding.run.config import DecodeConfig
from decoding.run.schema import StepRecord
from decoding.run.scored import ScoredTree
from decoding.verify.registry import VERIFIERS
from decoding.verify.sampling import warp
from decoding.verify.step_law import expected_tokens
from decoding.verify.tree import DraftTree
from decoding.verify.walk import Walk

MC_DRAWS = 400


class CompareRun(engine.Run):
    """Several verifiers on every step; `keys` in display order (the run verifier is config.verifier)."""

    def __init__(self, pair, config: DecodeConfig, state: engine.RunState, keys: list[str],
                 mc_draws: int = MC_DRAWS) -> None:
        check_selection(keys, config)
        super().__init__(pair, config, state)
        self.keys = list(dict.fromkeys([config.verifier, *keys]))
        self.groups = groups_of(self.keys, config.verifier, config)
        self.mc_draws = mc_draws

    def _draft_score_verify(self) -> tuple[StepRecord, list[int], list[int], DraftTree]:
        """Every law's tree drafted, the forest scored in one target forward, every verifier judging;
        the run verifier's path is committed (the engine's `step` does the rest, OOM handling included)."""
        cfg, root = self.config, self._context()[-1]
        t0 = time.perf_counter()
        drafted = draft_forest(self.draft, root, cfg, self.groups, self.generator)
        draft_ms = engine._ms_since(t0)
        t0, f0 = time.perf_counter(), self.target.forwards
        p_forest = warp(score_tree(self.target, drafted.forest.tree), cfg.temperature, cfg.top_k, cfg.top_p)
        target_ms, target_forwards = engine._ms_since(t0), self.target.forwards - f0  # p_forest: [F, V]
        t0 = time.perf_counter()
        walks = self._judge_all(drafted, p_forest)
        verify_ms = engine._ms_since(t0)
        times = recording.StepTimes(draft_ms, target_ms, verify_ms, drafted.forwards, target_forwards)
        record = self._run_record(drafted, p_forest, walks[cfg.verifier], times)
        record = replace(record, compare=self._compare_record(drafted, p_forest, walks))
        run_t = self.groups.index(self._group(cfg.verifier))
        path = drafted.forest.to_forest(run_t, walks[cfg.verifier].path)
        return record, list(walks[cfg.verifier].tokens), path, drafted.forest.tree

    def _group(self, key: str) -> str:
        return tree_group(key, self.config.verifier, self.config)

    def _judge_all(self, drafted: ForestDraft, p_forest: torch.Tensor) -> dict[str, Walk]:
        """The run verifier judges with the run generator; the others from a copy of its state."""
        state = self.generator.get_state()
        walks = {}
        for key in [k for k in self.keys if k != self.config.verifier] + [self.config.verifier]:
            t = self.groups.index(self._group(key))
            p, q, _ = drafted.rows(t, p_forest)  # [N, V], [N, V]
            gen = self.generator
            if key != self.config.verifier:
                gen = torch.Generator(device="cpu")
                gen.set_state(state)
            walks[key] = VERIFIERS[key].judge(drafted.trees[t], p, q, gen)
        return walks

    def _run_record(self, drafted: ForestDraft, p_forest, walk: Walk, times) -> StepRecord:
        t = self.groups.index(self._group(self.config.verifier))
        tree, entry = drafted.trees[t], self.entry
        p, q, has_q = drafted.rows(t, p_forest)
        return recording.step_record(
            ScoredTree(tree, p, q, has_q), walk, entry, index=len(self._state.steps),
            expected=expected_tokens(entry.step_law(tree, p, q)), times=times, top_n=self.config.top_n,
            text=self.pair.token_text, with_theory=True,
        )

    def _compare_record(self, drafted: ForestDraft, p_forest, walks: dict[str, Walk]) -> CompareRecord:
        seed = self.config.seed * 1_000_003 + len(self._state.steps)
        verdicts = tuple(
            judging.verdict(VERIFIERS[key], self._group(key), self.groups.index(self._group(key)), drafted,
                            p_forest, walks[key], self.pair.token_text, self.mc_draws, seed + i)
            for i, key in enumerate(self.keys)
        )
        return CompareRecord(self.config.verifier, len(drafted.forest.tree), verdicts)


def start(pair, config: DecodeConfig, prompt: str, keys: list[str], mc_draws: int = MC_DRAWS) -> CompareRun:
    """A compare run from the first step (same state as engine.start)."""
    check_selection(keys, config)
    run = engine.start(pair, config, prompt)
    return CompareRun(pair, config, run.state, keys, mc_draws)
