"""Engine presets: the verification modes inference engines ship, each as a registry verifier + the candidate
law the engine drafts with + a draft shape (docs/verifiers.md §19).

Why: users debug the mode their engine runs, under the engine's name ("vLLM strict", "llama.cpp"), and most
of these modes are specscope rules under another name. Each preset names the registry entry whose law is
the engine's (no new registry entry where one already is the same law), the law its drafts come from
(`iid`: one sampled draft per position; `topk`: the draft's argmax), a shape, its source and what was read
there. `closed_form(p, q)` is its one-node acceptance, which tests/run/test_engine_presets.py holds equal to
the exact one (`exact_acceptance`) on docs §12's toy: strict 0.285, one-hot greedy draft 0.300, SD 0.700.

A preset's candidate law is carried by its shape: `Sequences(1, d)` drafts i.i.d. from q (a sampled draft),
a `Branching` chain drafts with the entry's law (pointmass's `any` is the top-k of q, i.e. its argmax for a
chain). `drafted_law(config)` says which; every preset's declared law must equal it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import torch

from decoding.run.config import Branching, DecodeConfig, Sequences, Shape
from decoding.verify import laws
from decoding.verify.registry import VERIFIERS
from decoding.verify.tree import DraftTree


def _strict(p: torch.Tensor, q: torch.Tensor) -> float:
    return float((p * q).sum())  # P(the target's own sample equals a sampled draft) = sum_x q(x) p(x)


def _argmax_draft(p: torch.Tensor, q: torch.Tensor) -> float:
    return float(p[int(torch.argmax(q))])  # SD with q one-hot at argmax q: accept with p(argmax q)


def _sd(p: torch.Tensor, q: torch.Tensor) -> float:
    return float(torch.minimum(p, q).sum())  # 1 - TV(p, q)


@dataclass(frozen=True)
class EnginePreset:
    key: str  # the CLI's --engine NAME and the app's menu value
    engine: str  # "vLLM", "mlx-lm", ...
    mode: str  # the engine's own name for the mode
    verifier: str  # registry key with the same law
    law: str  # the candidate law the engine drafts with: "iid" (sampled) or "topk" (argmax for a chain)
    shape: Shape
    closed_form: Callable[[torch.Tensor, torch.Tensor], float]  # one node's acceptance, k = 1
    formula: str  # closed_form in words
    same_as: str  # which specscope rule it is, and where it differs (coins, not law)
    source: str  # link to the code or thread read
    version: str  # the commit / release / PR state read
    checked: str  # what was read there

    @property
    def label(self) -> str:
        return f"{self.engine}: {self.mode}"

    def config(self, base: DecodeConfig | None = None) -> DecodeConfig:
        """`base` (or the defaults) with this preset's verifier and shape; everything else kept."""
        return (base or DecodeConfig(verifier=self.verifier, shape=self.shape)).with_(verifier=self.verifier,
                                                                                    shape=self.shape)

    def entry(self):
        """The registry entry drafting with this preset's law (the lab enumerates trees with `entry.law`)."""
        return replace(VERIFIERS[self.verifier], law=laws.get(self.law))


PRESETS: dict[str, EnginePreset] = {p.key: p for p in (
    EnginePreset(
        "vllm-strict", "vLLM", "strict (Model Runner V2, rejection_sample_method=\"strict\")", "pointmass", "iid",
        Sequences(1, 3), _strict, "sum_x q(x) p(x)",
        "pointmass over one sampled draft per position: vLLM accepts iff its own target sample equals the draft "
        "and emits that sample; pointmass accepts with p(x), else draws p without x: the same law, other coins",
        "https://github.com/vllm-project/vllm/pull/35461", "PR #35461, merged 2026-02-27",
        "the PR's description (strict = accept only when the target's sampled token equals the draft; MRV2 drafts "
        "sampled at the request's temperature since PR #29300)"),
    EnginePreset(
        "vllm-probabilistic", "vLLM", "probabilistic (Model Runner V2, rejection_sample_method=\"probabilistic\")",
        "sd", "iid", Branching((1, 1, 1)), _sd, "sum_x min(p(x), q(x))",
        "sd on a sampled chain (accept min(1, p/q), residual norm((p - q)_+))",
        "https://github.com/vllm-project/vllm/blob/main/vllm/v1/worker/gpu/spec_decode/rejection_sampler_utils.py",
        "PR #35461 (merged 2026-02-27); rejection_sampler_utils.py at commit 02e318bd",
        "HAS_DRAFT_LOGITS branch: log-ratio test against the draft's own logits"),
    EnginePreset(
        "vllm-onehot", "vLLM", "one-hot greedy draft (MRV1; MRV2 default since PR #40651)", "pointmass", "topk",
        Branching((1, 1, 1)), _argmax_draft, "p(argmax q)",
        "pointmass on the draft's argmax: SD with q one-hot accepts with p(x) and draws p without x",
        "https://github.com/vllm-project/vllm/pull/40651", "PR #40651, merged 2026-04-22; PR #16899 (argmax drafts)",
        "the PR's description (u < p(x), residual p with x zeroed) and the one-hot branch of "
        "rejection_sampler_utils.py at 02e318bd (\"One-hot draft: q(token) = 1\")"),
    EnginePreset(
        "vllm-block", "vLLM", "block (rejection_sample_method=\"block\")", "block", "iid", Branching((1, 1, 1)),
        _sd, "sum_x min(p(x), q(x)) at one node",
        "block verification on a sampled chain (one node: SD)",
        "https://github.com/vllm-project/vllm/blob/main/vllm/v1/worker/gpu/spec_decode/rejection_sampler.py",
        "rejection_sampler.py at commit 01b21056",
        "use_block_verification and the cumulative min(log p/q, 0) / residual-mass kernels"),
    EnginePreset(
        "mlx-lm-exact", "mlx-lm", "exact (speculative_generate_step, the only rule in v0.32.0)", "pointmass", "iid",
        Sequences(1, 2), _strict, "sum_x q(x) p(x)",
        "pointmass over one sampled draft per position (the draft and target both sample with the same sampler; "
        "accept iff equal, emit the target's sample)",
        "https://github.com/ml-explore/mlx-lm/blob/main/mlx_lm/generate.py", "v0.32.0, commit d78bf58",
        "speculative_generate_step: `if tn != dtn: break`, num_draft_tokens default 2"),
    EnginePreset(
        "mlx-lm-residual", "mlx-lm", "accept_rule=\"residual\" (PR #1709, closed, not merged)", "sd", "iid",
        Branching((1, 1)), _sd, "sum_x min(p(x), q(x))", "sd on a sampled chain",
        "https://github.com/ml-explore/mlx-lm/pull/1709", "PR #1709 (closed; absent from v0.32.0)",
        "the PR's description (min(1, p/q), residual relu(p - q))"),
    EnginePreset(
        "mlx-lm-block", "mlx-lm", "accept_rule=\"block\" (PR #1709, closed, not merged)", "block", "iid",
        Branching((1, 1)), _sd, "sum_x min(p(x), q(x)) at one node", "block verification on a sampled chain",
        "https://github.com/ml-explore/mlx-lm/pull/1709", "PR #1709 (closed; absent from v0.32.0)",
        "the PR's description (block verification, Sun et al. arXiv 2403.10444)"),
    EnginePreset(
        "sglang-eagle-topk", "SGLang", "EAGLE target-only tree (default)", "pointmass", "topk", Branching((3, 2, 2)),
        _argmax_draft, "p(argmax q) at one node (k = 1)",
        "pointmass on a top-k tree: one coin per node against the running sum of the children's p, rejected "
        "siblings zeroed in the residual; the same law as pointmass (SGLang's reranked tree shape is approximated)",
        "https://github.com/sgl-project/sglang/blob/main/sgl-kernel/csrc/speculative/speculative_sampling.cuh",
        "speculative_sampling.cuh (TreeSpeculativeSamplingTargetOnly), threshold_single = threshold_acc = 1",
        "the kernel: coin <= prob_acc / threshold_acc, draft_probs[x] = target_probs[x] for rejected x, "
        "final draw from relu(target - draft_probs)"),
    EnginePreset(
        "sglang-eagle-sampled", "SGLang", "EAGLE sampled drafts + rejection sampling (PR #26312)", "sd", "iid",
        Branching((1, 1, 1)), _sd, "sum_x min(p(x), q(x))", "sd on a sampled chain",
        "https://github.com/sgl-project/sglang/pull/26312", "PR #26312, merged 2026-05-25",
        "the PR's description (drafts sampled from the draft law, accept min(1, p/q))"),
    EnginePreset(
        "llama.cpp", "llama.cpp", "draft-simple / MTP: argmax draft, accept on the target's sample",
        "pointmass", "topk", Branching((1, 1, 1, 1)), _argmax_draft, "p(argmax q)",
        "pointmass on the draft's argmax (the one-hot greedy draft's law)",
        "https://github.com/ggml-org/llama.cpp/blob/master/common/speculative.cpp",
        "common/speculative.cpp at commit 001d906a; common/sampling.cpp",
        "draft(): `id = cur_p->data[0].id` (the argmax of the top-k filtered draft); "
        "common_sampler_sample_and_accept_n: `if (draft[i] != id) break`; draft-max is 16 there, 4 here"),
)}


def get(key: str) -> EnginePreset:
    """The preset named `key`, or one readable ValueError listing the names."""
    if key not in PRESETS:
        raise ValueError(f"unknown engine preset {key!r}; choose one of: {', '.join(PRESETS)}")
    return PRESETS[key]


def drafted_law(config: DecodeConfig) -> str:
    """The law a config's drafts really come from: i.i.d. for K sequences; else the entry's (`any` is top-k)."""
    if isinstance(config.shape, Sequences):
        return "iid"
    name = str(VERIFIERS[config.verifier].law)
    return "topk" if name == "any" else name


def exact_acceptance(preset: EnginePreset, p: torch.Tensor, q: torch.Tensor) -> float:
    """P(the one draft is accepted) at one node (p, q [V]), from the entry's exact step law over every draft the
    preset's law gives: sum over x of Q(x) P(accepted | x)."""
    entry = preset.entry()
    total = 0.0
    for (x,), prob in entry.law.enumerate(q.to(torch.float64), 1):
        tree = DraftTree.root(0).add_draws(0, [x], merge=False)
        rows_p, rows_q = torch.stack([p, p]).to(torch.float64), torch.stack([q, q]).to(torch.float64)  # [2, V]
        total += prob * sum(o.prob for o in entry.step_law(tree, rows_p, rows_q) if o.accepted >= 1)
    return total
