"""The `embedded-head` pair: the embedded target and the trained draft head on its own features: the MLP head
(weights.py) or the fused head (fused.py), whichever assets/draft_head/head.json names."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import torch

from decoding.models.cuda.graphed_target import graphs_allowed
from decoding.models.embedded import model as embedded
from decoding.models.embedded.pair import embedded_parts
from decoding.models.head.drafter import HeadTreeLM
from decoding.models.head.feature_target import FeatureTreeLM
from decoding.models.head.fused import FusedHead
from decoding.models.head.fused_drafter import FusedHeadTreeLM
from decoding.models.head.graphed_calls import GraphedHeadCalls
from decoding.models.head.lean import LeanHead
from decoding.models.head.lean_fused import LeanFusedHead
from decoding.models.head.ranked_ids import IDS, ids_name, ranked_ids
from decoding.models.head.weights import HEAD_DIR, draft_lm_rows, load_head
from decoding.models.hub.load import ModelLoadError, resolve_device
from decoding.models.loaded import cached
from decoding.models.model_pair import ModelPair, Progress
from decoding.models.scoring import scoring_target
from decoding.models.treelm import TreeLM

T = TypeVar("T")


def embedded_head_pair(device: str, progress: Progress) -> ModelPair:
    """The embedded target and the trained draft head on `device` ('auto': a GPU when torch sees one; on the
    CPU the lean target gives the features); the target session keeps the features the head drafts from."""
    device = resolve_device(device)
    model, codec = embedded_parts(device, progress)
    scorer = scoring_target(model, embedded.MODEL_NAME)
    return head_pair(model, codec, scorer, head_parts(model, device), device)


@dataclass(frozen=True)
class HeadParts:
    """What a draft-head pair's draft reads: the head (with the target's lm_head rows), the target's embedding,
    its name."""

    head: LeanHead | LeanFusedHead
    embed: torch.Tensor  # [V, hidden]
    name: str
    calls: GraphedHeadCalls | None = None  # a fused head's calls replayed from CUDA graphs (on a GPU)

    @property
    def taps(self) -> tuple[int, ...] | None:
        """The target layers a fused head reads (the target session keeps their rows); None for the MLP head."""
        return self.head.taps if isinstance(self.head, LeanFusedHead) else None


def head_parts(model, device: str) -> HeadParts:
    """The shipped head (on `device`, cached) and the embedded `model`'s embedding and the lm_head rows of the ids
    it scores (scored_ids, the commonest first: ranked_ids.py)."""
    module = cached((f"draft-head:{embedded.MODEL_NAME}", device, "float32"),
                    lambda: _shipped(load_head).to(device))
    embed = model.model.embed_tokens.weight.detach()  # [V, hidden] on `device`, shared read-only
    vocab = model.lm_head.weight.shape[0]
    size = scored_ids(device, module.config.head_size, vocab)
    head = cached((f"lean-draft-head:{embedded.MODEL_NAME}", device, "float32"),
                  lambda: lean_head(module, model.lm_head.weight, _shipped(ranked_ids, HEAD_DIR, vocab)[:size]))
    kind = "fused draft head" if isinstance(module, FusedHead) else "draft head"
    about = ids_name(size, vocab, ranked=(HEAD_DIR / IDS).exists())
    name = f"{embedded.MODEL_NAME} {kind} (trained on its features; {about})"
    graphed = isinstance(head, LeanFusedHead) and str(device).startswith("cuda") and graphs_allowed()
    calls = cached((f"graphed-draft-head:{embedded.MODEL_NAME}", device, "float32"),
                   lambda: GraphedHeadCalls(head)) if graphed else None
    return HeadParts(head, embed, name, calls)


def lean_head(module: torch.nn.Module, lm_head_weight: torch.Tensor, ids: torch.Tensor) -> LeanHead | LeanFusedHead:
    """The lean forward of a head `module` (fused or MLP) scoring the token `ids` [H] through the target's lm_head
    rows of those ids (weights.draft_lm_rows)."""
    lean = LeanFusedHead if isinstance(module, FusedHead) else LeanHead
    return lean(module, draft_lm_rows(lm_head_weight, ids), ids)


CPU_IDS = 8192  # the most ids the head scores on a CPU, where every drafted level reads their lm_head rows


def scored_ids(device: str, trained: int, vocab: int) -> int:
    """How many token ids n the head scores on `device` (the first n it ranks, ranked_ids.py): on a GPU all
    `vocab`, elsewhere the `trained` ones up to CPU_IDS (a head trained on all ids still reads only the rows of
    the commonest ones on a CPU).

    The head was trained to score ids below `trained` through the target's lm_head rows, yet its output state
    lives in the target's feature space, so the target's other rows score the rarer ids too: on held-out prompts
    all ids raise its exact acceptance at the first level from 0.668 to 0.697 at T = 0 and from 0.578 to 0.643 at
    T = 0.8 (assets/draft_head/README.md). On a GPU the wider output product is one kernel either way, so it costs
    nothing; on a CPU every drafted level reads the rows, 6 times the bytes: sd 1,1 ran at 0.87-0.88x with all ids
    on one AMD EPYC core (docs/speed.md, "All ids on a GPU, and the head's calls from CUDA graphs")."""
    return vocab if str(device).startswith("cuda") else min(trained, CPU_IDS)


def head_pair(model, codec, scorer, parts: HeadParts, device: str) -> ModelPair:
    """The draft-head pair of `model` scored through `scorer` (the lean CPU target, or the model itself)."""
    vocab = codec.vocab_size

    def new_draft(target: FeatureTreeLM) -> TreeLM:
        if not isinstance(parts.head, LeanFusedHead):
            return HeadTreeLM(parts.head, parts.embed, vocab, target)
        return FusedHeadTreeLM(parts.head, parts.embed, vocab, target, calls=parts.calls)

    return ModelPair(
        kind="embedded-head", target_name=embedded.MODEL_NAME, draft_name=parts.name,
        codec=codec, new_target=lambda: FeatureTreeLM(scorer, vocab, parts.taps), new_draft=new_draft,
        device=device,
        dtype="float32", target_model=model, draft_dtype="float32 (the head and its lm_head rows hold float16 values)",
        draft_reads_target=True, draft_products=parts.head,
    )


def _shipped(read: Callable[..., T], *args) -> T:
    """read(*args) of the shipped head's files; a file that is missing or does not fit: ModelLoadError."""
    try:
        return read(*args)
    except ValueError as err:
        raise ModelLoadError(str(err)) from err
