"""Drafter invariance (docs/verifiers.md §17.4): with GLS and one draft per node, a run's text depends only on
the seed and the target, not on the draft model; with RRS (same seed, same shape) it does not.

Toy pair against the same toy target with a second, very different draft (the draft table reversed over
the vocabulary); then one slow real-model check: embedded (int8 self-draft) against embedded-head
(trained draft head), same seed.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from decoding.cli.main import main as cli_main
from decoding.models import pairs as models
from decoding.models import toy
from decoding.models.treelm import ContextTreeLM
from decoding.run import engine
from decoding.run.config import DecodeConfig

PROMPT = "the cat"
SEEDS = range(12)


def _other_draft_logits(context_ids: list[int]) -> torch.Tensor:
    """[V] a draft unlike the toy's: its logits reversed over the vocabulary."""
    return toy.toy_draft_logits(context_ids).flip(0)


@pytest.fixture(scope="module")
def pairs():
    base = models.load_pair("toy")
    other = replace(base, draft_name="toy draft, reversed", new_draft=lambda: ContextTreeLM(_other_draft_logits, toy.V))
    return base, other


def _texts(pair_list, verifier: str, branching: tuple[int, ...], seed: int) -> list[tuple[int, ...]]:
    config = DecodeConfig(verifier=verifier, branching=branching, temperature=1.0, seed=seed, max_new_tokens=12,
                          chat=False, record=False)
    return [engine.generate(pair, config, PROMPT).generated_ids for pair in pair_list]


@pytest.mark.parametrize("branching", [(1,), (1, 1, 1)])
def test_gls_one_draft_text_does_not_depend_on_the_draft(pairs, branching):
    for seed in SEEDS:
        a, b = _texts(pairs, "gls", branching, seed)
        assert a == b, f"seed {seed}: {a} vs {b}"


def test_rrs_text_does_depend_on_the_draft(pairs):
    differ = [seed for seed in SEEDS if len(set(_texts(pairs, "rrs", (1,), seed))) > 1]
    assert len(differ) >= len(SEEDS) // 2


def test_the_two_drafts_accept_differently(pairs):
    """Otherwise invariance would be trivial: the two drafts' exact expected tokens per step differ a lot."""
    config = DecodeConfig(verifier="gls", branching=(1,), temperature=1.0, seed=0, max_new_tokens=60, chat=False)
    rates = [engine.generate(pair, config, PROMPT).summary.expected_tokens_per_forward for pair in pairs]
    assert rates[0] > rates[1] + 0.3


@pytest.mark.slow
@pytest.mark.parametrize(("verifier", "verdict"), [("gls", "the same"), ("rrs", "different")])
def test_real_models_through_the_cli(capsys, verifier, verdict):
    """`generate --pair embedded --also-pair embedded-head` (int8 self-draft vs trained head), same seed,
    branching 1, T = 1: gls says the texts match and prints one text twice; rrs says they differ."""
    code = cli_main(["generate", "--pair", "embedded", "--also-pair", "embedded-head", "--device", "cpu",
                     "--prompt", "Write one sentence about the sea.", "--verifier", verifier, "--tree", "1",
                     "--temperature", "1", "--seed", "7", "--max-new-tokens", "24"])
    out, err = capsys.readouterr()
    assert code == 0, err
    first, second = out.split("--- embedded-head (same config, same seed) ---\n")
    assert f"the two pairs emitted {verdict} text" in err
    assert (first == second) == (verifier == "gls")
