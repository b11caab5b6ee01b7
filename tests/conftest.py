"""Shared fixtures: tiny model folders built offline (no download)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def word_tokenizer(words: list[str], eos: bool = True):
    """A PreTrainedTokenizerFast over whole words, built in memory (eos=False: no end-of-text token at all,
    so a run can only stop at max-new-tokens)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(["<unk>", *(["<eos>"] if eos else []), *words])}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", eos_token="<eos>" if eos else None)


def save_tiny_llama(folder: Path, words: list[str], seed: int = 0, eos: bool = True) -> Path:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = word_tokenizer(words, eos)
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.eos_token_id)
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_model_folders(tmp_path_factory) -> tuple[Path, Path]:
    """Two tiny llama folders whose vocabularies differ at one word (id 4: 'b' vs 'z')."""
    root = tmp_path_factory.mktemp("tiny-models")
    target = save_tiny_llama(root / "target", ["a", "b", "c", "d"], seed=0)
    draft = save_tiny_llama(root / "draft", ["a", "z", "c", "d"], seed=1)
    return target, draft


@pytest.fixture(scope="session")
def tiny_matching_folders(tmp_path_factory) -> tuple[Path, Path]:
    """Two tiny llama folders sharing one vocabulary (a custom pair that loads)."""
    root = tmp_path_factory.mktemp("tiny-pair")
    words = ["a", "b", "c", "d", "e", "f"]
    return save_tiny_llama(root / "target", words, seed=0), save_tiny_llama(root / "draft", words, seed=1)


@pytest.fixture(autouse=True)
def machine_load_unknown(monkeypatch):
    """A calibration in a test never reads the machine's load (decoding/speed/others.py): whether it is cached
    must not depend on what else the test machine runs. tests/speed/test_others.py checks the reading itself."""
    from decoding.speed import others

    monkeypatch.setattr(others, "machine_busy_seconds", lambda *_: None)
