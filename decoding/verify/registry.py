"""The verifier registry: every token-level verifier described once (docs/verifiers.md).

Keys are a public contract (CLI flags, saved traces, the app's dropdown). Each entry carries its
candidate law (laws.py), whether it is lossless, and the pure functions of decoding/verify/rules/<key>.py
(`verify`, `conditional` and, where one exists, the closed-form `acceptance`).
"""

from __future__ import annotations

from decoding.verify import laws
from decoding.verify.entry import Verifier
from decoding.verify.rules import (
    cactus,
    fuzzy,
    gls,
    greedy,
    hu_greedy,
    khisti_is,
    ot_optimal,
    pointmass,
    rrs,
    rrs_wor,
    sd,
    spechub,
    spectr,
    typical,
)
from decoding.verify.tree_entry import TreeVerifier
from decoding.verify.tree_rules import block, hsd, hsd_lossless, traversal, typical_medusa

VERIFIERS: dict[str, Verifier | TreeVerifier] = {
    "sd": Verifier.from_rule(
        sd,
        name="sd",
        title="Speculative sampling (SD)",
        lossless=True,
        law=laws.get("iid"),
        max_candidates=1,
        description="One draft token, accepted with min(1, p/q); else a sample of norm((p - q)_+).",
        paper="Leviathan, Kalman, Matias 2023; Chen et al. 2023",
    ),
    "rrs": Verifier.from_rule(
        rrs,
        name="rrs",
        title="Recursive rejection sampling (with replacement)",
        lossless=True,
        law=laws.get("iid"),
        max_candidates=None,
        description="k i.i.d. drafts tested in order against a residual updated after every draw.",
        paper="Miao et al. 2024 (SpecInfer); Yang et al. 2024 (MCSD)",
    ),
    "rrs_wor": Verifier.from_rule(
        rrs_wor,
        name="rrs_wor",
        title="Recursive rejection sampling without replacement",
        lossless=True,
        law=laws.get("without_replacement"),
        max_candidates=None,
        description="k distinct drafts in draw order; each residual update uses the law that draft came from.",
        paper="Yang et al. 2024 (MCSD); Jeon et al. 2024 (RSD); Chen et al. 2024 (Sequoia)",
    ),
    "spectr": Verifier.from_rule(
        spectr,
        name="spectr",
        title="SpecTr K-SEQ",
        lossless=True,
        law=laws.get("iid"),
        max_candidates=None,
        description="k i.i.d. drafts with damped tests p/(rho* q), then the K-SEQ residual.",
        paper="Sun et al. 2023, SpecTr: Fast Speculative Decoding via Optimal Transport",
    ),
    "spechub": Verifier.from_rule(
        spechub,
        name="spechub",
        title="SpecHub (hub pair)",
        lossless=True,
        law=laws.get("hub"),
        max_candidates=2,
        description="Two drafts that always include the hub argmax q; optimal for that sparse pair law.",
        paper="Sun, Zhou, Chen, Sun 2024, SpecHub (EMNLP 2024)",
    ),
    "khisti_is": Verifier.from_rule(
        khisti_is,
        name="khisti_is",
        title="Importance selection + SD (Khisti et al.)",
        lossless=True,
        law=laws.get("iid"),
        max_candidates=None,
        description="Pick one i.i.d. draft with probability proportional to p/q, then SD against its induced law.",
        paper="Khisti et al. 2025, Multi-Draft Speculative Sampling: Canonical Architectures (ICLR 2025)",
    ),
    "hu_greedy": Verifier.from_rule(
        hu_greedy,
        name="hu_greedy",
        title="Greedy draft set: top-(k-1) + 1 random (Hu et al.)",
        lossless=True,
        law=laws.get("topk_plus_random"),
        max_candidates=None,
        description="Top-(k-1) of q plus one random draft; SD on the random one, residual hits accept a top one.",
        paper="Hu et al. 2025, Towards Optimal Multi-draft Speculative Decoding (ICLR 2025)",
    ),
    "pointmass": Verifier.from_rule(
        pointmass,
        name="pointmass",
        title="Point-mass verification (any candidate set)",
        lossless=True,
        law=laws.get("any"),
        max_candidates=None,
        description="Each distinct candidate accepted with its residual target mass r(x); valid for top-k trees.",
        paper="Li et al. 2024 (EAGLE-2); Miao et al. 2024 (SpecInfer naive sampling)",
    ),
    "greedy": Verifier.from_rule(
        greedy,
        name="greedy",
        title="Greedy token matching (lossy)",
        lossless=False,
        law=laws.get("any"),
        max_candidates=None,
        description="Accept a candidate only if it is argmax p; always emits the target's greedy token.",
        paper="Miao et al. 2024 (SpecInfer VerifyGreedy); Cai et al. 2024 (Medusa)",
    ),
    "typical": Verifier.from_rule(
        typical,
        name="typical",
        title="Typical acceptance, node by node (Medusa's test, first typical child; lossy)",
        lossless=False,
        law=laws.get("any"),
        max_candidates=None,
        description="At each node accept the first candidate with p(x) > min(0.09, 0.3 exp(-H(p))) (exact "
        "entropy); else emit argmax p. Medusa itself picks the longest typical path: see typical_medusa.",
        paper="Cai et al. 2024, Medusa: Simple LLM Inference Acceleration Framework",
    ),
    # ---- gls: Gumbel-max list sampling (drafts and target token from shared exponentials) ----
    "gls": Verifier.from_rule(
        gls,
        name="gls",
        title="Gumbel-max list sampling (GLS; one draft: DISD)",
        lossless=True,
        law=laws.get("gumbel"),
        max_candidates=None,
        description="Drafts and the target token Y = argmin E/p race on the same shared exponentials; accept iff "
        "Y is a draft, always emit Y. One draft: the text does not depend on the drafter.",
        paper="Rowan, Phan, Khisti 2025 (arXiv 2506.05632); Daliri, Musco, Suresh 2024, DISD (arXiv 2408.07978)",
    ),
    # ---- ot: the optimal-transport coupling (exact LP) and fuzzy speculative decoding (lossy, tunable) ----
    "ot_optimal": Verifier.from_rule(
        ot_optimal,
        name="ot_optimal",
        title="Optimal transport: the coupling that reaches alpha* (exact LP)",
        lossless=True,
        law=laws.get("iid"),
        max_candidates=None,
        description="k i.i.d. drafts verified by the optimal coupling of the tuple and p (the transport LP, solved "
        "exactly per node; small draft supports only for k >= 2): acceptance = alpha*.",
        paper="Thomas & Pal 2025, Optimal Multi-Draft Speculative Sampling (arXiv 2511.15898); Sun et al. 2023",
    ),
    "fuzzy": Verifier.from_rule(
        fuzzy,
        name="fuzzy",
        title="Fuzzy speculative decoding: accept iff JS(p, q) <= T (lossy)",
        lossless=False,
        law=laws.get("iid"),
        max_candidates=None,
        description=f"Accept the first candidate when the node's JS divergence between p and q is at most T "
        f"(--fuzzy-threshold, default {fuzzy.DEFAULT_THRESHOLD}); else draw the token from p.",
        paper="Holsman, Huang, Dhingra 2025, Fuzzy Speculative Decoding (ACL Findings 2025, arXiv 2502.20704)",
        params=(("threshold", "fuzzy_threshold"),),
    ),
    # ---- cactus: SD against a per-candidate lifted target within a divergence budget delta (lossy, tunable) ----
    "cactus": Verifier.from_rule(
        cactus,
        name="cactus",
        title="Cactus: SD against a target lifted at the draft within a budget delta (lossy)",
        lossless=False,
        law=laws.get("iid"),
        max_candidates=1,
        description=f"Lift the drafted token's target mass to h = min(1, p + sqrt(2 delta p (1 - p))), scale the rest "
        f"down, then SD against that law (--cactus-delta, default {cactus.DEFAULT_DELTA}); delta = 0 is SD.",
        paper="Hao & Mou 2026, Cactus: Constrained Acceptance Speculative Sampling (ICLR 2026, arXiv 2604.04987; "
        "the authors' cactus/cactus.py)",
        params=(("delta", "cactus_delta"),),
        bonus_from_p=True,  # vLLM's sampler, which the authors patch, samples the bonus token from the target
    ),
    # ---- tree level: these judge the whole tree at once (entry.level == "tree"; no node-level rule) ----
    "block": TreeVerifier(
        name="block",
        title="Block verification (one draft chain)",
        lossless=True,
        law="iid",
        max_candidates=1,
        description="Weights w_i = min(1, w_{i-1} p/q) along the chain, one coin per position; keep up to the "
        "LAST passed coin, then the weighted residual. Optimal for one chain.",
        paper="Sun, Mendlovic, Leviathan et al. 2025, Block Verification Accelerates Speculative Decoding (ICLR 2025)",
        judge_fn=block.judge,
        law_fn=block.step_law,
        shape=block.shape,
        shapes="one draft chain only (branching 1,1,... or 1 sequence)",
    ),
    "traversal": TreeVerifier(
        name="traversal",
        title="Traversal verification (leaves up)",
        lossless=True,
        law="without_replacement",
        max_candidates=None,
        description="Try leaves in post-order, accepting a whole root-to-leaf path with its weight; a rejected "
        "leaf is deleted and its parent's rows updated. Block verification on a chain.",
        paper="Weng, Hu et al. 2025, Traversal Verification for Speculative Tree Decoding (NeurIPS 2025)",
        judge_fn=traversal.judge,
        law_fn=traversal.step_law,
        shape=traversal.shape,
        shapes="trees drawn without replacement at every node",
    ),
    "typical_medusa": TreeVerifier(
        name="typical_medusa",
        title="Medusa typical acceptance, as Medusa applies it (lossy)",
        lossless=False,
        law="any",
        max_candidates=None,
        description="Score every root-to-leaf path by its leading typical candidates (Medusa's entropy with "
        "+1e-5); keep the longest (ties: likelihood); then argmax p.",
        paper="Cai et al. 2024, Medusa: Simple LLM Inference Acceleration Framework (evaluate_posterior)",
        judge_fn=typical_medusa.judge,
        law_fn=typical_medusa.step_law,
        shape=typical_medusa.shape,
        shapes="any tree",
    ),
    # ---- HSD, hierarchical speculative decoding (Zhou et al.): tree_rules/hsd.py, hsd_lossless.py (§14.5) ----
    "hsd": TreeVerifier(
        name="hsd",
        title="Hierarchical speculative decoding, as published",
        lossless=False,
        law="iid",
        max_candidates=1,
        description="Prefix ratios r_k = P/Q capped by their running max; one step-back coin per prefix; the "
        "whole draft accepted with the UNcapped min(1, r_g): accepts more than block, biased after the first token.",
        paper="Zhou et al. 2026, Hierarchical Speculative Decoding (arXiv 2601.05724; the authors' simulation.py)",
        judge_fn=hsd.judge,
        law_fn=hsd.step_law,
        shape=hsd.shape,
        shapes="one draft chain only (branching 1,1,... or 1 sequence)",
    ),
    "hsd_lossless": TreeVerifier(
        name="hsd_lossless",
        title="HSD with the whole-draft test capped too (= block verification)",
        lossless=True,
        law="iid",
        max_candidates=1,
        description="HSD whose whole-draft coin uses the capped ratio r_g / M_g like every other prefix: "
        "lossless, and block verification step law for step law (so never more acceptance than block).",
        paper="Zhou et al. 2026 (arXiv 2601.05724), capped as Sun et al. 2025 (block verification) prove optimal",
        judge_fn=hsd_lossless.judge,
        law_fn=hsd_lossless.step_law,
        shape=hsd_lossless.shape,
        shapes="one draft chain only (branching 1,1,... or 1 sequence)",
    ),
}


def node_level_keys() -> list[str]:
    """Keys of the token-level entries (those with a node-level verify/conditional)."""
    return [key for key, entry in VERIFIERS.items() if entry.level == "node"]


def lossless_keys() -> list[str]:
    """Registry keys of the verifiers whose output law is exactly p."""
    return [key for key, entry in VERIFIERS.items() if entry.lossless]


def unknown_verifier(key: object) -> str:
    """The one message for a key that names no verifier (every CLI, endpoint, link and control says this)."""
    return f"unknown verifier {key!r}; choose one of: {', '.join(VERIFIERS)}"


def lookup(key: str) -> Verifier | TreeVerifier:
    """The registry entry `key`; ValueError(unknown_verifier(key)) when there is none."""
    if not isinstance(key, str) or key not in VERIFIERS:
        raise ValueError(unknown_verifier(key))
    return VERIFIERS[key]


def check_keys(keys: list[str] | tuple[str, ...]) -> list[str]:
    """`keys` when every one names a verifier; else ValueError(unknown_verifier(the first that does not))."""
    for key in keys:
        lookup(key)
    return list(keys)
