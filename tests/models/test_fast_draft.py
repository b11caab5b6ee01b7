"""The fast self-draft's parts (fast_draft.py) on tiny models, and losslessness with a truncated draft head.

Oracles: the SmoothQuant fold leaves the float function unchanged (logits before == after); the
truncated head gives the original logits on its ids and q exactly 0 elsewhere; end to end, a toy
draft behind a TruncatedHead (it never proposes 5 of the 12 words, which the target still emits
through the residual) decodes with exactly the target's law (chi-square against the enumerated
joint law). Broken variants fail the same checks: a fold that scales down_proj alone, and a drafter
that reports the untruncated q to the verifier while it samples from the truncated one.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from decoding.models import fast_draft, toy
from decoding.models import pairs as models
from decoding.models.treelm import ContextTreeLM
from decoding.run import engine
from decoding.run.config import DecodeConfig
from decoding.verify.sampling import warp
from tests.conftest import save_tiny_llama
from tests.engine_oracles import chi_square_pvalue, exact_joint, total_variation

WORDS = [f"w{i}" for i in range(40)]
HEAD = 7  # toy ids 0..6 kept: " and", " ran", " a", " big", "." are never drafted
RUNS = 3000
N_TOKENS = 3
PROMPT = "the cat"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from transformers import AutoModelForCausalLM

    folder = save_tiny_llama(tmp_path_factory.mktemp("tiny") / "m", WORDS, seed=3)
    return AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()


def _ids(n: int, seed: int) -> list[int]:
    return torch.randint(2, len(WORDS), (n,), generator=torch.Generator().manual_seed(seed)).tolist()


def _logits(model, ids: list[int]) -> torch.Tensor:
    with torch.inference_mode():
        return model(torch.tensor([ids])).logits[0]  # [len(ids), V]


def test_smoothing_keeps_the_float_function(tiny):
    import copy

    smoothed = copy.deepcopy(tiny)
    amax = fast_draft.down_proj_input_max(smoothed, [_ids(12, 0), _ids(9, 1)])
    assert set(amax) == {0, 1} and all(a.shape == (64,) and bool((a > 0).all()) for a in amax.values())
    fast_draft.smooth_down_proj(smoothed, amax, alpha=0.5)
    moved = (smoothed.model.layers[0].mlp.down_proj.weight - tiny.model.layers[0].mlp.down_proj.weight).detach()
    assert float(moved.abs().max()) > 1e-3  # the weights did change
    probe = _ids(15, 7)
    assert torch.allclose(_logits(smoothed, probe), _logits(tiny, probe), atol=1e-5)


def test_a_fold_into_down_proj_alone_changes_the_function(tiny):
    import copy

    broken = copy.deepcopy(tiny)
    up = broken.model.layers[0].mlp.up_proj.weight.detach().clone()
    fast_draft.smooth_down_proj(broken, fast_draft.down_proj_input_max(broken, [_ids(12, 0)]))
    broken.model.layers[0].mlp.up_proj.weight.data.copy_(up)  # the broken variant: layer 0's up_proj not divided
    probe = _ids(15, 7)
    assert not torch.allclose(_logits(broken, probe), _logits(tiny, probe), atol=1e-3)


def test_truncated_head_keeps_its_ids_and_gives_q_zero_elsewhere(tiny):
    head = fast_draft.TruncatedHead(tiny.lm_head, 10)
    hidden = torch.randn(3, 32)
    out = head(hidden)  # [3, V]
    assert out.shape == (3, len(WORDS) + 2)
    assert torch.allclose(out[:, :10], tiny.lm_head(hidden)[:, :10])
    q = warp(out, 0.8)
    assert bool((q[:, 10:] == 0).all()) and torch.allclose(q.sum(-1), torch.ones(3, dtype=torch.float64))
    with pytest.raises(ValueError, match="head_size must be in 1..42"):
        fast_draft.TruncatedHead(tiny.lm_head, 0)


def test_fast_self_draft_is_an_int8_full_width_draft(tiny):
    draft = fast_draft.fast_self_draft(tiny, head_size=20, calibration=[_ids(12, 0)])
    probe = _ids(10, 5)
    q_logits, p_logits = _logits(draft, probe), _logits(tiny, probe)
    assert q_logits.shape == p_logits.shape
    assert bool(torch.isneginf(q_logits[:, 20:]).all()) and bool(torch.isfinite(q_logits[:, :20]).all())
    assert float((q_logits[:, :20] - p_logits[:, :20]).abs().max()) < 0.5  # close to the target, not equal
    assert "Linear" in type(draft.model.layers[0].mlp.down_proj).__name__
    assert type(draft.model.layers[0].mlp.down_proj) is not torch.nn.Linear  # quantized
    assert tiny.lm_head.weight.shape[0] == len(WORDS) + 2  # the target is untouched


def test_without_calibration_down_proj_stays_float(tiny):
    draft = fast_draft.fast_self_draft(tiny, head_size=20)
    assert type(draft.model.layers[0].mlp.down_proj) is torch.nn.Linear
    assert type(draft.model.layers[0].mlp.up_proj) is not torch.nn.Linear
    assert bool(torch.isneginf(_logits(draft, _ids(6, 2))[:, 20:]).all())


# ---- losslessness with a truncated draft head (toy pair) -------------------------------------------------


def _identity_head() -> fast_draft.TruncatedHead:
    eye = torch.nn.Linear(toy.V, toy.V, bias=False)
    eye.weight = torch.nn.Parameter(torch.eye(toy.V), requires_grad=False)
    return fast_draft.TruncatedHead(eye, HEAD)


def truncated_toy_pair():
    head = _identity_head()

    def logits(context: list[int]) -> torch.Tensor:
        with torch.no_grad():
            return head(toy.toy_draft_logits(context))  # [V], -inf beyond HEAD

    return replace(models.toy_pair(), new_draft=lambda: ContextTreeLM(logits, toy.V))


def outcome_law(pair, config: DecodeConfig) -> tuple[dict, dict]:
    counts: dict = {}
    for seed in range(RUNS):
        got = tuple(engine.generate(pair, replace(config, seed=seed), PROMPT).generated_ids[:N_TOKENS])
        counts[got] = counts.get(got, 0) + 1
    context = pair.encode_prompt(PROMPT, chat=False)
    return counts, exact_joint(toy.toy_target_logits, context, N_TOKENS, 1.0, pair.eos_ids)


@pytest.mark.parametrize("verifier, branching", [("sd", (1, 1)), ("rrs", (3, 2))])
def test_a_truncated_draft_head_stays_lossless(verifier, branching):
    config = DecodeConfig(verifier=verifier, branching=branching, temperature=1.0, max_new_tokens=N_TOKENS,
                          chat=False, record=False)
    counts, law = outcome_law(truncated_toy_pair(), config)
    assert sum(n for seq, n in counts.items() if any(t >= HEAD for t in seq)) > 100  # the residual path ran
    pvalue = chi_square_pvalue(counts, law)
    assert pvalue > 1e-4, f"{verifier}: chi-square p={pvalue:.2e}, TV={total_variation(counts, law):.3f}"


def test_reporting_the_untruncated_q_breaks_losslessness(monkeypatch):
    """The bug a truncated head invites: sample from the head's subset, verify with the full softmax."""
    real = engine.draft_tree

    def full_q_reported(draft, root, cfg, entry, generator, **keyed):
        drafted = real(draft, root, cfg, entry, generator, **keyed)
        full = {n: warp(toy.toy_draft_logits(draft.node_context(n)), cfg.temperature) for n in drafted.q}
        return replace(drafted, q=full)

    monkeypatch.setattr(engine, "draft_tree", full_q_reported)
    config = DecodeConfig(verifier="sd", branching=(1, 1), temperature=1.0, max_new_tokens=N_TOKENS,
                          chat=False, record=False)
    counts, law = outcome_law(truncated_toy_pair(), config)
    pvalue = chi_square_pvalue(counts, law)
    assert pvalue < 1e-6, f"the broken drafter passed: p={pvalue:.2e}, TV={total_variation(counts, law):.3f}"
