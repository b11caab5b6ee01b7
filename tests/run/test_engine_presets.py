"""Engine presets (decoding/run/engine_presets.py, docs/verifiers.md §19): each engine mode's exact one-node
acceptance on the §12 toy equals its closed form (strict 0.285, one-hot greedy draft 0.300, SD 0.700), its
declared candidate law is the law its config drafts with, it certifies lossless, and the CLIs apply it."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from decoding.cli import compare as compare_cli
from decoding.cli.main import build_parser, config_from_args
from decoding.cli.main import main as cli_main
from decoding.lab.certify import certify
from decoding.lab.language import load, presets
from decoding.run.config import Sequences
from decoding.run.engine_presets import PRESETS, drafted_law, exact_acceptance, get

F64 = torch.float64
P = torch.tensor([0.50, 0.30, 0.15, 0.05], dtype=F64)
Q = torch.tensor([0.20, 0.50, 0.20, 0.10], dtype=F64)
TOY = {"vllm-strict": 0.285, "mlx-lm-exact": 0.285, "vllm-onehot": 0.300, "llama.cpp": 0.300,
       "sglang-eagle-topk": 0.300, "vllm-probabilistic": 0.700, "vllm-block": 0.700, "mlx-lm-residual": 0.700,
       "mlx-lm-block": 0.700, "sglang-eagle-sampled": 0.700}


def check_preset(preset) -> None:
    """The preset is what it says: its exact acceptance is its closed form on the toy, and on random pairs; its
    declared law is the one its config drafts with."""
    assert exact_acceptance(preset, P, Q) == pytest.approx(preset.closed_form(P, Q), abs=1e-12)
    g = torch.Generator().manual_seed(19)
    for _ in range(5):
        p, q = torch.rand(6, generator=g, dtype=F64), torch.rand(6, generator=g, dtype=F64)
        p, q = p / p.sum(), q / q.sum()
        assert exact_acceptance(preset, p, q) == pytest.approx(preset.closed_form(p, q), abs=1e-12)
    assert drafted_law(preset.config()) == preset.law


@pytest.mark.parametrize("key", list(PRESETS))
def test_each_presets_exact_acceptance_is_its_closed_form(key):
    preset = PRESETS[key]
    check_preset(preset)
    assert exact_acceptance(preset, P, Q) == pytest.approx(TOY[key], abs=1e-12)


def test_every_preset_has_a_toy_number_a_source_and_a_version():
    assert set(TOY) == set(PRESETS)
    for preset in PRESETS.values():
        assert preset.source.startswith("https://github.com/") and preset.version and preset.checked
        assert preset.same_as and preset.formula and preset.label.startswith(preset.engine)


@pytest.mark.parametrize("key,wrong", [("vllm-strict", "topk"), ("llama.cpp", "iid"), ("vllm-probabilistic",
                                                                                      "topk")])
def test_a_preset_with_the_wrong_candidate_law_fails(key, wrong):
    """Broken variant: strict with an argmax draft is the one-hot mode (0.300, not 0.285); llama.cpp with a
    sampled draft is strict (0.285, not 0.300); each fails the check."""
    with pytest.raises(AssertionError):
        check_preset(replace(PRESETS[key], law=wrong))


@pytest.mark.parametrize("key", list(PRESETS))
def test_each_preset_certifies_lossless(key):
    preset = PRESETS[key]
    languages = [load(presets()["worked_example"]), load(presets()["context3"])]
    shape = tuple(preset.shape.widths)[:2]  # two levels: every law's trees enumerated, quickly
    cert = certify(preset.entry(), languages, shape, mc_trees=0)
    assert cert.lossless, cert.worst_case


def test_generate_flag_sets_the_verifier_and_shape():
    args = build_parser().parse_args(["generate", "--prompt", "x", "--engine", "vllm-strict", "--temperature", "0.5"])
    config = config_from_args(args)
    assert config.verifier == "pointmass" and config.shape == Sequences(1, 3) and config.temperature == 0.5
    args = build_parser().parse_args(["generate", "--prompt", "x", "--engine", "llama.cpp"])
    assert config_from_args(args).shape_text() == "1,1,1,1"
    with pytest.raises(ValueError, match="unknown engine preset 'nope'"):
        get("nope")


def test_compare_flag_sets_the_run_verifier_and_shape():
    args = build_parser().parse_args(["compare", "--prompt", "x", "--engine", "vllm-onehot", "--verifiers",
                                      "sd,pointmass"])
    compare_cli._apply_engine(args)
    assert args.verifiers == "pointmass,sd" and args.run_verifier == "pointmass" and args.tree == "1,1,1"
    args = build_parser().parse_args(["compare", "--prompt", "x", "--engine", "mlx-lm-exact"])
    compare_cli._apply_engine(args)
    assert args.verifiers == "pointmass" and (args.sequences, args.depth) == (1, 2)
    no_keys = build_parser().parse_args(["compare", "--prompt", "x"])
    with pytest.raises(ValueError, match="give --verifiers"):
        compare_cli._apply_engine(no_keys)


def test_certify_flag_exit_codes(capsys):
    assert cli_main(["certify", "--engine", "vllm-strict", "--language", "assets/languages/worked_example.json"]) == 0
    assert "root acceptance 0.285000" in capsys.readouterr().out
    assert cli_main(["certify", "--engine", "nope"]) == 2
    assert capsys.readouterr().err.strip().startswith("error: unknown engine preset 'nope'")
