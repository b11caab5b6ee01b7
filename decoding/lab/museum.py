"""The museum: real, linked speculative-decoding bugs, each reproduced exactly (docs/verifiers.md §20).

Why: a user debugging an engine learns more from a bug someone shipped than from a textbook rule. Each exhibit is
the project, the thread, the buggy rule as a verifier file (assets/museum/, the form of
assets/examples/my_verifier.py), the number its authors published, specscope's exact reproduction of it on the
exhibit's toy node (p, q), the exact TV of the emitted law from p, and the fix certified lossless by `certify`.
Everything is exact enumeration over the rule's candidate law at one node; nothing is sampled.

`report(exhibit)` computes one exhibit; `check(report)` is what the tests and `./specscope museum` hold every
exhibit to: its published number reproduced (where the thread has one) and its fix certified lossless.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

import torch

from decoding.lab import language as lang
from decoding.lab.certify import certify
from decoding.lab.custom import CustomVerifierError, load_custom
from decoding.lab.frontier import node_law
from decoding.verify import laws

MUSEUM_DIR = Path(__file__).resolve().parents[2] / "assets" / "museum"
F64 = torch.float64
TOLERANCE = 5e-5  # published numbers are printed to 4 digits


@dataclass(frozen=True)
class Exhibit:
    key: str
    project: str
    title: str
    links: tuple[tuple[str, str], ...]  # (label, url): the issue / PR threads read
    status: str  # where the fix stands
    file: str  # the buggy rule, under assets/museum/
    p: tuple[float, ...]  # the toy node: target
    q: tuple[float, ...]  # the toy node: draft law (the law the engine's candidates come from)
    published: str  # the number as its thread gives it, in words
    metric: str  # what is reproduced: "token:<i>", "law", "acceptance", "inflation", "refused", "" (none)
    value: tuple[float, ...] = ()  # the published number(s) that metric must reproduce
    why_not: str = ""  # when the thread has no number, or one specscope cannot recompute
    fix_key: str = "sd"  # the fix: a registry verifier ...
    fix_law: str = "iid"  # ... drafting with this law
    fix_one_hot: bool = False  # certify the fix on a one-hot target (a T = 0 fix)
    checked: str = ""  # what was read, where
    notes: str = ""

    @property
    def path(self) -> Path:
        return MUSEUM_DIR / self.file


@dataclass(frozen=True)
class Report:
    key: str
    project: str
    title: str
    links: tuple[tuple[str, str], ...]
    status: str
    file: str
    published: str
    metric: str
    published_value: tuple[float, ...]
    reproduced_value: tuple[float, ...]
    reproduces: bool | None  # None: the thread has no number specscope can recompute (why_not says why)
    why_not: str
    emitted: tuple[float, ...]  # the bug's exact emitted law at the toy node ([] when it has none)
    target: tuple[float, ...]
    acceptance: float | None  # the bug's exact acceptance at the toy node
    tv: float | None  # TV(emitted, p), exact; None when the rule has no law (refused)
    bug_certified_lossless: bool | None
    fix: str  # "sd (iid)"
    fix_lossless: bool
    fix_max_tv: float
    refusal: str = ""  # the one line specscope refuses the buggy file with, if it does
    notes: str = ""

    def to_json(self) -> dict:
        out = {name: getattr(self, name) for name in self.__dataclass_fields__}
        out["links"] = [{"label": label, "url": url} for label, url in self.links]
        for name in ("published_value", "reproduced_value", "emitted", "target"):
            out[name] = list(out[name])
        return out


# transformers' test_speculative_sampling, third drafted position (V = 10): the assistant's logits 10 at token 5 and
# -10 elsewhere (its q, the softmax); the target's logits 10 at token 8 and -inf elsewhere (one-hot at 8)
_HF_28508_P = tuple(1.0 if i == 8 else 0.0 for i in range(10))
_HF_28508_Q = tuple(torch.softmax(torch.tensor([10.0 if i == 5 else -10.0 for i in range(10)], dtype=F64),
                                  dim=0).tolist())

EXHIBITS: tuple[Exhibit, ...] = (
    Exhibit(
        "ssd-sync-greedy", "tanishqkumar/ssd", "Greedy acceptance of sampled drafts on the sync path at T > 0",
        (("PR #24", "https://github.com/tanishqkumar/ssd/pull/24"),
         ("ssd/utils/verify.py", "https://github.com/tanishqkumar/ssd/blob/main/ssd/utils/verify.py")),
        "PR #24 open (routes sync proposals to the ratio test)", "ssd_sync_greedy.py",
        (0.4, 0.3, 0.2, 0.1), (0.1, 0.4, 0.3, 0.2),
        "P(argmax p) moves from 0.40 to 0.46 on p = [.4, .3, .2, .1], q = [.1, .4, .3, .2] (PR #24's test, as "
        "specscope issue 41 quotes it; the PR shows it as a screenshot)", "token:0", (0.46,),
        checked="verify.py at 6ed3022: ratio_rows needs cache_hits; misses accept on argmax match and draw from p",
        notes="the exact law is 0.1 δ_0 + 0.9 p"),
    Exhibit(
        "hf-32867-greedy-assistant", "huggingface/transformers", "Greedy assistant under a sampling target",
        (("issue #32867", "https://github.com/huggingface/transformers/issues/32867"),
         ("PR #33534", "https://github.com/huggingface/transformers/pull/33534"),
         ("PR #30778 (the cause)", "https://github.com/huggingface/transformers/pull/30778")),
        "fixed by PR #33534 (merged 2024-09-17): the assistant samples when the main model samples",
        "hf_32867_greedy_assistant.py", (0.6, 0.4), (0.8, 0.2),
        "q = [0.8, 0.2], p = [0.6, 0.4]: the output is [0.75, 0.25] instead of [0.6, 0.4] (the issue's comment)",
        "law", (0.75, 0.25), checked="the issue's thread and PR #33534's description"),
    Exhibit(
        "jaymody-3-argmax-draft", "jaymody/speculative-sampling", "Argmax draft tested with its softmax q",
        (("issue #3", "https://github.com/jaymody/speculative-sampling/issues/3"),),
        "closed; the author confirms and proposes a one-hot q (temperature 0 for the draft)",
        "jaymody_3_argmax_draft.py", (0.5, 0.3, 0.15, 0.05), (0.2, 0.5, 0.2, 0.1),
        "no number: the thread states the mistake in words (the proof needs P(draft = x) = q(x))", "",
        why_not="the thread publishes no number; specscope's exact TV on docs §12's toy stands in",
        fix_key="pointmass", fix_law="topk", checked="the issue's thread"),
    Exhibit(
        "ds4-482-dspark-b2", "antirez/ds4", "DSpark B2: argmax drafts tested with p/q",
        (("PR #482", "https://github.com/antirez/ds4/pull/482"),),
        "PR #482 open; its review found the rule not lossless", "ds4_482_dspark_b2.py",
        (0.5, 0.3, 0.15, 0.05), (0.2, 0.5, 0.2, 0.1),
        "no number: the review says the stochastic B2 'is not actually lossless' (drafts from sample_argmax, "
        "p/q against the drafter softmax)", "",
        why_not="the review publishes no law number (its hashes are about a Metal argmax divergence at T = 0)",
        checked="the PR's review comment (section 7.2)"),
    Exhibit(
        "hf-47932-raw-q", "huggingface/transformers", "Sampled from the top-k q, tested with the raw q",
        (("issue #47932", "https://github.com/huggingface/transformers/issues/47932"),
         ("PR #47961", "https://github.com/huggingface/transformers/pull/47961")),
        "issue closed; PR #47961 returns the processed q", "hf_47932_raw_q.py",
        (0.625, 0.375, 0.0, 0.0), (0.3 / 0.8815, 0.5815 / 0.8815, 0.0, 0.0),
        "acceptance-ratio inflation 1/Z: median 1.1344 (Z = 0.8815), worst 7.7577x; TV of the committed tokens: "
        "median 0.0485, worst 0.3065 (SmolLM2-135M drafting for SmolLM2-360M, 477 positions, top_k = 50)",
        "inflation", (1.1344,),
        why_not="the TVs are per-position values on SmolLM2-360M's rows, which this machine cannot load (no hub); "
        "the inflation is exactly 1/Z on any row, reproduced at the issue's median Z",
        checked="the issue's description and its measurement table; PR #47961's description",
        notes="toy: raw draft [.3, .5815, .06, .0585] and raw target [.5, .3, .15, .05] under top-k = 2"),
    Exhibit(
        "mlx-swift-459-strict", "ml-explore/mlx-swift-lm", "Accept on equality with a target sample (claimed biased)",
        (("PR #459", "https://github.com/ml-explore/mlx-swift-lm/pull/459"),
         ("MTPSpeculativeTokenIterator.swift", "https://github.com/ml-explore/mlx-swift-lm/blob/main/Libraries/"
          "MLXLMCommon/MTPSpeculativeTokenIterator.swift")),
        "PR #459 open; a speed fix: the rule it replaces is lossless", "mlx_swift_459_strict.py",
        (0.5, 0.3, 0.15, 0.05), (0.2, 0.5, 0.2, 0.1),
        "'comparing one sample from q against one sample from p accepts with probability sum p(x)q(x)' (and, "
        "wrongly, that the output is biased)", "acceptance", (0.285,),
        checked="speculateRound at commit 0140ab2b: emits mainTokens[accepted], the target's own sample",
        notes="the exact TV is 0: the claimed bias is refuted; the loss is acceptance (0.285 against sd's 0.700)"),
    Exhibit(
        "vllm-27077-greedy-sentinel", "vllm-project/vllm", "Greedy rows divided by temperature 0",
        (("PR #27077", "https://github.com/vllm-project/vllm/pull/27077"),),
        "fixed by PR #27077 (merged 2025-10-17): GREEDY_TEMPERATURE = 0", "vllm_27077_greedy_sentinel.py",
        (1.0, 0.0, 0.0, 0.0), (0.2, 0.5, 0.2, 0.1),
        "division by zero, NaN/Inf logits, empty generated_token_ids, negative acceptance (len([]) - 1 = -1)",
        "refused", (),
        why_not="a crash has no law: the reproduction is the NaN itself, refused in one line by the verifier probe; "
        "the -1 is the engine's metrics bookkeeping, which specscope does not model",
        fix_key="greedy", fix_law="topk", fix_one_hot=True, checked="PR #27077's description"),
    Exhibit(
        "hf-28508-always-accept", "huggingface/transformers",
        "Every draft accepted (a faulty n_matches), a softmax residual behind it",
        (("PR #28508", "https://github.com/huggingface/transformers/pull/28508"),
         ("test_speculative_sampling", "https://github.com/huggingface/transformers/blob/main/tests/generation/"
          "test_utils.py")),
        "fixed by PR #28508 (merged): n_matches counts up to the first rejection, the residual is (p - q)_+ / sum",
        "hf_28508_always_accept.py", _HF_28508_P, _HF_28508_Q,
        "'accepts the draft model tokens all the time' (PR #28508's description): acceptance 1; transformers' "
        "regression test test_speculative_sampling, at the third position here (draft 5, target one-hot at 8), expects "
        "n_matches == 2 and tokens [1, 4, 8]: 5 rejected, 8 emitted", "acceptance", (1.0,),
        checked="PR #28508's description and review (the residual's .softmax(dim=-1) removed: 'the paper normalizes "
        "this vector, as opposed to a softmax'); test_speculative_sampling in tests/generation/test_utils.py",
        notes="toy: that test's third position (V = 10; assistant logits 10 at 5, -10 elsewhere; target one-hot at "
        "8). The bug emits q: 5 with probability 1 - 1.9e-8, the test's 8 with 2.1e-9 (the fix: 8 with "
        "probability 1). The softmax residual was masked; drawn, it would emit 8 with e/(e + 9) = 0.2320 and every "
        "other token, p = 0 included, with 1/(e + 9)"),
)


def get(key: str) -> Exhibit:
    for exhibit in EXHIBITS:
        if exhibit.key == key:
            return exhibit
    raise ValueError(f"unknown museum exhibit {key!r}; choose one of: {', '.join(e.key for e in EXHIBITS)}")


def report(exhibit: Exhibit) -> Report:
    """One exhibit, computed exactly: the bug's law at the toy node, its published number, its fix certified."""
    p, q = torch.tensor(exhibit.p, dtype=F64), torch.tensor(exhibit.q, dtype=F64)
    fix_lossless, fix_tv = _certify_fix(exhibit)
    base = dict(key=exhibit.key, project=exhibit.project, title=exhibit.title, links=exhibit.links,
                status=exhibit.status, file=f"assets/museum/{exhibit.file}", published=exhibit.published,
                metric=exhibit.metric, published_value=exhibit.value, why_not=exhibit.why_not,
                target=tuple(p.tolist()), fix=f"{exhibit.fix_key} ({exhibit.fix_law})", fix_lossless=fix_lossless,
                fix_max_tv=fix_tv, notes=exhibit.notes)
    try:
        entry = load_custom(exhibit.path)
    except CustomVerifierError as err:
        refused = exhibit.metric == "refused"
        return Report(**base, reproduced_value=(), reproduces=refused if exhibit.metric else None, emitted=(),
                      acceptance=None, tv=None, bug_certified_lossless=None, refusal=str(err))
    emitted, acceptance = node_law(entry.conditional, entry.law, p, q)
    reproduced = _metric(exhibit, entry, emitted, acceptance, p, q)
    reproduces = None if not exhibit.metric else (
        len(reproduced) == len(exhibit.value)
        and all(abs(a - b) <= TOLERANCE for a, b in zip(reproduced, exhibit.value, strict=True)))
    bug_cert = certify(entry, [_toy_language(exhibit, p, q)], (1, 1), mc_trees=0)
    return Report(**base, reproduced_value=reproduced, reproduces=reproduces, emitted=tuple(emitted.tolist()),
                  acceptance=acceptance, tv=_tv(emitted, p), bug_certified_lossless=bug_cert.lossless)


def _metric(exhibit: Exhibit, entry, emitted: torch.Tensor, acceptance: float, p, q) -> tuple[float, ...]:
    if exhibit.metric.startswith("token:"):
        return (float(emitted[int(exhibit.metric.split(":")[1])]),)
    if exhibit.metric == "law":
        return tuple(float(v) for v in emitted)
    if exhibit.metric == "acceptance":
        return (acceptance,)
    if exhibit.metric == "inflation":  # the bug's test over the fix's, p(x)/q_raw(x) / (p(x)/q(x)) on q's support
        module = _module_of(entry)
        raw = module.raw_q(q)
        ratios = {round(float(q[x] / raw[x]), 12) for x in range(q.shape[0]) if float(q[x]) > 0}
        return tuple(sorted(ratios))
    return ()


def _module_of(entry):
    import importlib.util

    spec = importlib.util.spec_from_file_location("museum_exhibit", entry.source)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tv(a: torch.Tensor, b: torch.Tensor) -> float:
    return 0.5 * float((a - b).abs().sum())


def _toy_language(exhibit: Exhibit, p: torch.Tensor, q: torch.Tensor) -> lang.TinyLanguage:
    vocab = [chr(ord("A") + i) for i in range(p.shape[0])]
    return lang.from_dict({"vocab": vocab, "target": {"": p.tolist()}, "draft": {"": q.tolist()}},
                          name=f"museum:{exhibit.key}")


def fix_entry(exhibit: Exhibit):
    """The fix: the registry verifier drafting with the fix's law."""
    from decoding.verify.registry import VERIFIERS

    return replace(VERIFIERS[exhibit.fix_key], law=laws.get(exhibit.fix_law))


def _certify_fix(exhibit: Exhibit) -> tuple[bool, float]:
    """Certified on the exhibit's toy, on a context-dependent preset and on random languages, chains of 2 (a fix
    for T = 0 on one-hot targets only)."""
    p, q = torch.tensor(exhibit.p, dtype=F64), torch.tensor(exhibit.q, dtype=F64)
    if exhibit.fix_one_hot:
        p = torch.nn.functional.one_hot(torch.argmax(p), p.shape[0]).to(F64)
        languages = [_toy_language(exhibit, p, q)]
    else:
        languages = [_toy_language(exhibit, p, q), lang.load(lang.presets()["context3"]),
                     lang.random_language(41, 3, 2)]
    cert = certify(fix_entry(exhibit), languages, (1, 1), mc_trees=0)
    return cert.lossless, cert.max_tv


def check(rep: Report) -> list[str]:
    """What every exhibit must show: its published number reproduced (or a reason it cannot be), its fix certified
    lossless, a TV that is a number when the rule has a law. Empty when it does."""
    problems = []
    if rep.reproduces is False:
        problems.append(f"{rep.key}: published {rep.published_value} not reproduced (got {rep.reproduced_value})")
    if rep.reproduces is None and not rep.why_not:
        problems.append(f"{rep.key}: no reproduction and no reason why not")
    if not rep.fix_lossless:
        problems.append(f"{rep.key}: the fix {rep.fix} is not certified lossless (max TV {rep.fix_max_tv:.3g})")
    if rep.tv is not None and not math.isfinite(rep.tv):
        problems.append(f"{rep.key}: the bug's TV is not a number")
    return problems


def reports() -> list[Report]:
    return [report(exhibit) for exhibit in EXHIBITS]
