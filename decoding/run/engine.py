"""The step loop: draft -> score -> verify -> commit -> record, as a generator of StepRecords.

A Run owns its per-run state (two TreeLM sessions with their KV caches, the generator); models
are shared read-only through the ModelPair. `Run.state` is plain data (what the app keeps in
gr.State); `resume` rebuilds a Run from it with one prefill per model.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

import torch

from decoding.models.target import score_tree
from decoding.models.treelm import no_draft
from decoding.run import adaptive
from decoding.run import recorder as recording
from decoding.run.config import Branching, DecodeConfig
from decoding.run.drafting import draft_tree
from decoding.run.schema import RunSummary, StepRecord, Trace
from decoding.run.scored import ScoredTree
from decoding.run.seen import Seen, fixed_depth
from decoding.verify.node_keys import NodeKeys
from decoding.verify.sampling import draw, make_generator, warp
from decoding.verify.step_law import expected_tokens
from decoding.verify.tree import DraftTree
from decoding.verify.walk import Walk

MAX_PROMPT_CHARS = 100_000
LAZY_THEORY_STEPS = 16  # steps whose p/q rows a lazy-theory run keeps for fill_theory


class OutOfMemory(ValueError):
    """The device ran out of memory in a step; the run is unchanged and the next step may retry."""


@dataclass(frozen=True)
class RunState:
    """Plain, deep-copyable state of a run: enough to replay it (steps) and to continue it."""

    pair: dict
    config: dict
    prompt: str
    prompt_ids: tuple[int, ...]
    generated_ids: tuple[int, ...]
    steps: tuple[StepRecord, ...]
    rng_state: bytes
    stop_reason: str | None  # None while it can continue: "eos" | "max_new_tokens" | "context"
    seconds: float


@dataclass(frozen=True)
class Baseline:
    ids: tuple[int, ...]
    seconds: float
    forwards: int


def _ms_since(t0: float) -> float:
    return (time.perf_counter() - t0) * 1000.0


class Run:
    """One speculative-decoding run; iterate it, or call step() until it returns None."""

    def __init__(self, pair, config: DecodeConfig, state: RunState, *, lazy_theory: bool = False,
                 replaying: bool = False) -> None:
        self.pair = pair
        self.config = config
        self.lazy_theory = lazy_theory  # records leave alpha_exact/alpha_optimal None until fill_theory(index)
        self.replaying = replaying  # re-running known steps (run/replay.py): no records, the state keeps its own
        self._theory_rows: dict[int, list[tuple[int, torch.Tensor, torch.Tensor]]] = {}
        self.chain_stats = adaptive.ChainStats()  # past steps only: what config.adaptive decides from
        self.seen = Seen(greedy=config.temperature == 0, depth=fixed_depth(config))  # each filled step's, kept
        self.entry = config.entry()  # with the parameters the config sets (fuzzy threshold)
        self._state = state
        self.generator = torch.Generator(device="cpu")
        with out_of_memory_as_message():
            self._open_sessions()

    def _open_sessions(self) -> None:
        """Fresh TreeLM sessions and generator at the plain state (after a failed step, too)."""
        self.generator.set_state(torch.tensor(list(self._state.rng_state), dtype=torch.uint8))
        context = self._context()
        self.target = self.pair.target_session()
        self.draft = self.pair.draft_session(self.target) if self.config.drafting else no_draft(self.pair.vocab_size)
        self.target.start(context)
        self.draft.start(context)
        self._broken = False

    # ---- public -------------------------------------------------------------------------------
    @property
    def state(self) -> RunState:
        return self._state

    @property
    def done(self) -> bool:
        return self._state.stop_reason is not None

    def __iter__(self) -> Iterator[StepRecord]:
        while (record := self.step()) is not None:
            yield record

    def step(self) -> StepRecord | None:
        """One speculative step; None when the run has finished."""
        if self.done:
            return None
        if self._context_full():
            self._finish("context")
            return None
        t_start = time.perf_counter()
        with out_of_memory_as_message():
            if self._broken:
                self._open_sessions()
            self._broken = True  # until the step is through: a failure leaves half-updated KV caches
            record, tokens, path, tree = self._draft_score_verify()
            self._broken = False
        tokens, reason = self._truncate(tokens)
        record = _truncate_record(record, len(tokens))
        if reason is None:
            self.target.commit(path, tokens[-1], tree)
            self.draft.commit(path, tokens[-1], tree)
        self._state = replace(
            self._state,
            generated_ids=self._state.generated_ids + tuple(tokens),
            steps=self._state.steps + (record,) if self.config.record and not self.replaying else self._state.steps,
            rng_state=self.generator.get_state().numpy().tobytes(),
            stop_reason=reason,
            seconds=self._state.seconds + (time.perf_counter() - t_start),
        )
        return record

    def trace(self) -> Trace:
        return trace_of(self._state, self.pair.decode)

    def restore(self, state: RunState) -> None:
        """Take `state`'s records and time (run/replay.py: a replay reached the same tokens and generator)."""
        self._state = state

    def fill_theory(self, index: int) -> StepRecord:
        """Step `index`'s record with its exact and optimal acceptance computed now (lazy_theory runs: what a
        view calls when it shows the step). Kept rows cover the last LAZY_THEORY_STEPS steps; an older or
        already filled step comes back as it is."""
        rows = self._theory_rows.pop(index, None)
        record = self._state.steps[index]
        if rows is None:
            return record
        self.seen.add_step(record, rows)  # the acceptance the rows show, kept as numbers (run/seen.py)
        record = recording.with_visit_theory(record, rows, self.entry)
        steps = self._state.steps[:index] + (record,) + self._state.steps[index + 1:]
        self._state = replace(self._state, steps=steps)
        return record

    def kept_rows(self, index: int) -> list[tuple[int, torch.Tensor, torch.Tensor]] | None:
        """Step `index`'s kept (visit index, p row [V], q row [V]) list, read only (None: filled or gone). The
        rows are copies never written again, so another thread may fill a record from them
        (`recorder.with_visit_theory`) while this run steps on: what the app's Stop does."""
        return self._theory_rows.get(index)

    # ---- the step, as a story ---------------------------------------------------------------------
    def _step_config(self) -> DecodeConfig:
        """This step's shape: the config's, or (adaptive) a chain length chosen from past steps only."""
        if not self.config.adaptive or not self.config.drafting:
            return self.config
        length = adaptive.chain_length(self.chain_stats, len(self.config.branching), self.config.costs)
        if length == 0:
            return self.config.with_(drafting=False)
        return self.config.with_(shape=Branching((1,) * length))

    def _draft_score_verify(self) -> tuple[StepRecord, list[int], list[int], DraftTree]:
        """The step's work: (record, emitted tokens, the node path to commit, the tree the models saw).
        A subclass that drafts differently (decoding/compare: a forest) overrides this, not `step`."""
        cfg, root = self._step_config(), self._context()[-1]
        t0, f0 = time.perf_counter(), self.draft.forwards
        keys = self._node_keys()
        drafted = draft_tree(self.draft, root, cfg, self.entry, self.generator, keys=keys)
        draft_ms, draft_forwards = _ms_since(t0), self.draft.forwards - f0

        t0, f0 = time.perf_counter(), self.target.forwards
        logits = score_tree(self.target, drafted.tree)  # [N, V]
        target_ms, target_forwards = _ms_since(t0), self.target.forwards - f0

        t0 = time.perf_counter()
        p = warp(logits, cfg.temperature, cfg.top_k, cfg.top_p)  # [N, V] float64
        q, has_q = drafted.q_rows(p.shape[-1])  # [N, V], [N]
        scored = ScoredTree(drafted.tree, p, q, has_q)
        extra = {"keys": keys} if keys is not None else {}  # only a node-level keyed law takes keys
        result = self.entry.judge(scored.tree, scored.p, scored.q, self.generator, **extra)
        verify_ms = _ms_since(t0)

        times = recording.StepTimes(draft_ms, target_ms, verify_ms, draft_forwards, target_forwards)
        self.chain_stats.add(len(result.visits), len(result.path) - 1)
        t0 = time.perf_counter()
        record = self._record(scored, result, times)
        return replace(record, record_ms=_ms_since(t0)), list(result.tokens), list(result.path), drafted.tree

    def _node_keys(self) -> NodeKeys | None:
        """For a keyed law (gls's gumbel): this step's per-node generators, keyed by the config's seed and the
        context, so drafting and verify read the same exponentials and the same context gets them whatever
        the drafter (verify/node_keys.py). None for every other law: they read the run's generator."""
        if not getattr(self.entry.law, "keyed", False):
            return None
        return NodeKeys(self.config.seed, self._context())

    def _record(self, scored: ScoredTree, result: Walk, times: recording.StepTimes) -> StepRecord:
        """The full record (nodes, tests, exact theory), or on the fast path only what was emitted."""
        cfg, index = self.config, len(self._state.steps)
        if not cfg.record or self.replaying:
            return recording.bare_record(index, result, self.entry, times, self.pair.token_text)
        expected = expected_tokens(self.entry.step_law(scored.tree, scored.p, scored.q))
        if self.lazy_theory:
            self._keep_theory_rows(index, [(i, scored.p[node].clone(), scored.q[node].clone())
                                           for i, (node, _) in enumerate(result.visits)])
        return recording.step_record(
            scored, result, self.entry, index=index, expected=expected, times=times,
            top_n=cfg.top_n, text=self.pair.token_text, with_theory=not self.lazy_theory,
        )

    def _keep_theory_rows(self, index: int, rows: list) -> None:
        self._theory_rows[index] = rows
        while len(self._theory_rows) > LAZY_THEORY_STEPS:  # bounded memory: 2 [V] float64 rows per visit
            self._theory_rows.pop(next(iter(self._theory_rows)))

    # ---- bookkeeping --------------------------------------------------------------------------------
    def _context(self) -> list[int]:
        return list(self._state.prompt_ids) + list(self._state.generated_ids)

    def _context_full(self) -> bool:
        return len(self._context()) + self.config.tree_depth + 1 > self.pair.max_context

    def _truncate(self, tokens: list[int]) -> tuple[list[int], str | None]:
        """Cut at the first EOS (kept) or at the token budget, whichever comes first (an EOS past the budget is
        not emitted: the run's length then never depends on how its steps split the tokens); say why the run
        stops, if it does."""
        budget = self.config.max_new_tokens - len(self._state.generated_ids)
        for i, tok in enumerate(tokens[:budget]):
            if tok in self.pair.eos_ids:
                return tokens[: i + 1], "eos"
        if len(tokens) >= budget:
            return tokens[:budget], "max_new_tokens"
        return tokens, None

    def _finish(self, reason: str) -> None:
        self._state = replace(self._state, stop_reason=reason)


@contextmanager
def out_of_memory_as_message() -> Iterator[None]:
    """A device out-of-memory error becomes OutOfMemory (a ValueError with a one-line message); the
    run's plain state is untouched, so the next step retries from it."""
    try:
        yield
    except torch.OutOfMemoryError:
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        raise OutOfMemory("the device ran out of memory in this step; the run is unchanged: try a smaller tree "
                          "(fewer children or less depth), a shorter prompt, or a smaller model") from None


def _truncate_record(record: StepRecord, n_kept: int) -> StepRecord:
    if n_kept == len(record.emitted):
        return record
    return replace(record, emitted=record.emitted[:n_kept])


# ---- entry points -------------------------------------------------------------------------------


def encode(pair, config: DecodeConfig, prompt: str) -> list[int]:
    """Prompt -> ids, refusing an empty prompt or one that leaves no room in the model's context."""
    if not isinstance(prompt, str) or not prompt.strip():
        raise ValueError("the prompt is empty: type some text to continue")
    if len(prompt) > MAX_PROMPT_CHARS:  # refuse before tokenizing: a pasted novel must not stall a worker
        raise ValueError(f"the prompt has {len(prompt)} characters; the limit is {MAX_PROMPT_CHARS}")
    ids = pair.encode_prompt(prompt, config.chat)
    room = pair.max_context - config.tree_depth - 2
    if len(ids) > room:
        raise ValueError(
            f"the prompt is {len(ids)} tokens long; this model's context holds {pair.max_context} "
            f"tokens, so at most {room} prompt tokens fit with a depth-{config.tree_depth} tree"
        )
    return ids


def start(pair, config: DecodeConfig, prompt: str, *, lazy_theory: bool = False) -> Run:
    ids = encode(pair, config, prompt)
    state = RunState(
        pair=pair.describe(),
        config=config.to_dict(),
        prompt=prompt,
        prompt_ids=tuple(ids),
        generated_ids=(),
        steps=(),
        rng_state=make_generator(config.seed).get_state().numpy().tobytes(),
        stop_reason=None,
        seconds=0.0,
    )
    return Run(pair, config, state, lazy_theory=lazy_theory)


def resume(pair, state: RunState, *, lazy_theory: bool = False) -> Run:
    return Run(pair, DecodeConfig.from_dict(state.config), state, lazy_theory=lazy_theory)


def generate(pair, config: DecodeConfig, prompt: str, *, lazy_theory: bool = False) -> Trace:
    """Decode `prompt` to the end; lazy_theory=True leaves each visit's alpha to be filled on demand."""
    run = start(pair, config, prompt, lazy_theory=lazy_theory)
    for _ in run:
        pass
    return run.trace()


def summary_of(state: RunState) -> RunSummary:
    steps = state.steps
    n_steps = len(steps)
    new = len(state.generated_ids)
    forwards = sum(s.target_forwards for s in steps)
    expected = [s.expected_tokens for s in steps]
    mean_expected = sum(expected) / n_steps if n_steps and None not in expected else None
    return RunSummary(
        steps=n_steps,
        new_tokens=new,
        target_forwards=forwards,
        draft_forwards=sum(s.draft_forwards for s in steps),
        tokens_per_forward=new / forwards if forwards else 0.0,
        expected_tokens_per_forward=mean_expected,
        seconds=state.seconds,
        stop_reason=state.stop_reason or "stopped",
    )


def trace_of(state: RunState, decode) -> Trace:
    return Trace(
        models=dict(state.pair),
        config=dict(state.config),
        prompt=state.prompt,
        prompt_ids=state.prompt_ids,
        generated_ids=state.generated_ids,
        text=decode(list(state.generated_ids)),
        steps=state.steps,
        summary=summary_of(state),
    )


def baseline(pair, prompt_ids: list[int], max_new_tokens: int, config: DecodeConfig | None = None) -> Baseline:
    """Plain autoregressive decoding with the target alone: one forward per token (same warp, seed)."""
    cfg = config or DecodeConfig(verifier="sd", shape=Branching((1,)), temperature=0.0)
    gen = make_generator(cfg.seed)
    target = pair.target_session()
    context = list(prompt_ids)
    target.start(context)
    t0, f0, out = time.perf_counter(), target.forwards, []
    while len(out) < max_new_tokens and len(context) + 1 < pair.max_context:
        tree = DraftTree.root(context[-1])
        p = warp(score_tree(target, tree)[0], cfg.temperature, cfg.top_k, cfg.top_p)  # [V]
        tok = draw(p, gen)
        out.append(tok)
        context.append(tok)
        if tok in pair.eos_ids:
            break
        target.commit([0], tok, tree)
    return Baseline(tuple(out), time.perf_counter() - t0, target.forwards - f0)
