"""The decoding methods `bench speed` times side by side: transformers' own paths and specscope's.

Every method turns one case (prompt ids, temperature, seed, token budget) into a `Timed`: new tokens
and wall-clock seconds, prefill included (every method pays its own prefill), tokenization excluded.
A method that cannot run on a pair (no transformers model behind a model-free draft) says why once
(`Unavailable`) instead of stopping the benchmark.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from decoding.run import engine
from decoding.run.config import DecodeConfig
from decoding.run.schema import StepRecord

PROMPT_LOOKUP_TOKENS = 3  # transformers' documented default n-gram length for prompt lookup


class Unavailable(Exception):
    """This method cannot run on this pair (the message says why)."""


@dataclass(frozen=True)
class Case:
    prompt: str
    ids: tuple[int, ...]
    temperature: float
    seed: int
    max_new_tokens: int


@dataclass(frozen=True)
class Timed:
    tokens: int
    seconds: float
    steps: tuple[StepRecord, ...] = ()

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else 0.0


Method = Callable[[object, Case], Timed]


def _sampling_kwargs(pair, case: Case) -> dict:
    """generate() kwargs that warp like specscope (temperature only: top-k and top-p off)."""
    eos = sorted(pair.eos_ids)
    kwargs = {"max_new_tokens": case.max_new_tokens, "pad_token_id": eos[0] if eos else 0}
    if case.temperature > 0:
        return kwargs | {"do_sample": True, "temperature": case.temperature, "top_k": 0, "top_p": 1.0}
    return kwargs | {"do_sample": False, "temperature": None, "top_k": None, "top_p": None}


def hf_generate(pair, case: Case, **extra) -> Timed:
    """transformers' `model.generate` on the pair's target, with `extra` (assistant, prompt lookup)."""
    model = pair.target_model
    if model is None:
        raise Unavailable(f"the {pair.kind} pair has no transformers target")
    ids = torch.tensor([case.ids], device=model.device)  # [1, P]
    torch.manual_seed(case.seed)
    start = time.perf_counter()
    with torch.inference_mode():
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), **_sampling_kwargs(pair, case),
                             **extra)
        if ids.is_cuda:
            torch.cuda.synchronize(ids.device)  # a GPU returns before its kernels finish
    seconds = time.perf_counter() - start
    return Timed(int(out.shape[1] - ids.shape[1]), seconds)


def plain(pair, case: Case) -> Timed:
    return hf_generate(pair, case)


def assisted(pair, case: Case) -> Timed:
    draft = transformers_draft(pair)
    if draft is None:
        raise Unavailable(f"the {pair.kind} pair's draft is not a transformers model")
    if draft.device != pair.target_model.device:  # the int8 self-draft is CPU-only (dynamic quantization)
        raise Unavailable(f"the {pair.kind} pair's draft runs on {draft.device.type}, its target on "
                          f"{pair.target_model.device.type}: assisted generation needs both on one device")
    return hf_generate(pair, case, assistant_model=draft)


def transformers_draft(pair):
    """The pair's draft as a transformers model (`assistant_model=` needs one). The embedded pairs run
    their int8 self-draft through the lean int8 forward; transformers gets the same draft function built
    its own way (embedded/self_draft.transformers_self_draft), once per process."""
    from decoding.models.embedded.self_draft import transformers_self_draft
    from decoding.models.lean import int8_draft as lean_draft
    from decoding.models.loaded import cached
    draft = pair.draft_model
    if not isinstance(draft, lean_draft.LeanInt8Llama):
        return draft
    return cached((f"transformers-int8-draft:{pair.target_name}", "cpu", "qint8"),
                  lambda: transformers_self_draft(pair.target_model))


def prompt_lookup(pair, case: Case) -> Timed:
    return hf_generate(pair, case, prompt_lookup_num_tokens=PROMPT_LOOKUP_TOKENS)


def target_alone(pair, case: Case) -> Timed:
    """specscope's plain decoding: the target alone, one token per forward, through the same scoring forward
    the speculative steps use (the lean float32 target on the embedded pairs). Against this baseline a
    speed-up is speculation's alone; against generate() it also holds the leaner forward."""
    cfg = DecodeConfig(verifier="sd", branching=(1,), temperature=case.temperature, seed=case.seed)
    start = time.perf_counter()
    out = engine.baseline(pair, list(case.ids), case.max_new_tokens, cfg)
    return Timed(len(out.ids), time.perf_counter() - start)


@dataclass(frozen=True)
class SpecscopePath:
    """How a specscope path runs a case: records or not, theory in the step or left to a view, and whether
    the view's fill of the step the page shows (the last one, as a Run click leaves it) is timed."""

    record: bool
    lazy_theory: bool = False
    fill_shown: bool = False


SPECSCOPE_PATHS: dict[str, SpecscopePath] = {  # what each is: bench_speed's docstring
    "fast": SpecscopePath(record=False),
    "recorded": SpecscopePath(record=True, lazy_theory=True, fill_shown=True),  # what the app runs
    "recorded-lazy": SpecscopePath(record=True, lazy_theory=True),
    "recorded-eager": SpecscopePath(record=True),  # the theory of every step (a Step click shows each)
}


def specscope(config: DecodeConfig, path: str) -> Method:
    """specscope's engine with `config` at the case's temperature, run the SPECSCOPE_PATHS[path] way. The
    timed window ends with the run (and the shown step's fill); after it, untimed, every step whose p/q rows
    the run still keeps gets its theory, so the report's exact alpha by depth covers more than one step."""
    how = SPECSCOPE_PATHS[path]

    def run(pair, case: Case) -> Timed:
        cfg = config.with_(temperature=case.temperature, seed=case.seed, max_new_tokens=case.max_new_tokens,
                           record=how.record)
        start = time.perf_counter()
        live = engine.start(pair, cfg, case.prompt, lazy_theory=how.lazy_theory)
        for _ in live:
            pass
        if how.fill_shown and live.state.steps:
            live.fill_theory(len(live.state.steps) - 1)
        seconds = time.perf_counter() - start
        if how.lazy_theory:
            for i in range(len(live.state.steps)):
                live.fill_theory(i)  # untimed: a no-op for a filled step or one whose rows are gone
        return Timed(len(live.state.generated_ids), seconds, live.state.steps if how.record else ())

    return run


HF_METHODS: dict[str, Method] = {"generate": plain, "assisted": assisted, "prompt_lookup": prompt_lookup}
BASELINES: dict[str, Method] = HF_METHODS | {"target_alone": target_alone}  # every method that is not a config
