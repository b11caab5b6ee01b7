"""Model errors a user can cause or meet: each is one readable line, and what was loaded stays usable."""

from __future__ import annotations

import pytest
import torch

from decoding.models import loaded, pairs
from decoding.models.hub import load as hfload
from decoding.models.hub.load import ModelLoadError
from decoding.run import engine
from decoding.run.config import DecodeConfig
from tests.conftest import save_tiny_llama, word_tokenizer

CONFIG = DecodeConfig(verifier="rrs", branching=(3, 2), temperature=0.9, seed=7, max_new_tokens=12)


def plain(trace):
    """What a run produced, without its timings."""
    return trace.generated_ids, [(s.nodes, s.visits, s.emitted, s.accepted_path) for s in trace.steps]


def test_out_of_memory_in_a_step_is_a_message_and_the_run_goes_on_unchanged(monkeypatch):
    pair = pairs.load_pair("toy")
    alone = plain(engine.generate(pair, CONFIG, "the cat"))
    real, calls = engine.score_tree, []

    def score_tree(lm, tree):
        calls.append(1)
        if len(calls) == 2:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real(lm, tree)
    monkeypatch.setattr(engine, "score_tree", score_tree)
    run = engine.start(pair, CONFIG, "the cat")
    run.step()
    before = run.state
    with pytest.raises(engine.OutOfMemory) as err:
        run.step()
    assert "ran out of memory" in str(err.value) and "\n" not in str(err.value)
    assert isinstance(err.value, ValueError)  # the app shows ValueErrors as messages
    assert run.state == before  # nothing of the failed step was kept
    while run.step() is not None:
        pass
    assert plain(run.trace()) == alone  # the retried step is the step that would have happened


def test_out_of_memory_while_opening_a_run_is_a_message(monkeypatch):
    pair = pairs.load_pair("toy")

    def start(self, context):
        raise torch.OutOfMemoryError("out of memory")
    monkeypatch.setattr(type(pair.target_session()), "start", start)
    with pytest.raises(engine.OutOfMemory, match="ran out of memory"):
        engine.start(pair, CONFIG, "the cat")


def test_a_model_id_the_hub_does_not_know_is_one_line(monkeypatch):
    from transformers import AutoTokenizer

    def not_found(name, **kwargs):
        raise OSError(f"{name} is not a local folder and is not a valid model identifier listed on "
                      "'https://huggingface.co/models'\nIf this is a private repository, make sure to pass a token")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(AutoTokenizer, "from_pretrained", not_found)
    with pytest.raises(ModelLoadError) as err:
        pairs.load_pair("custom", target="nobody/no-such-model", draft="nobody/no-such-model", device="cpu")
    assert str(err.value) == ("could not load the tokenizer of 'nobody/no-such-model': nobody/no-such-model is "
                              "not a local folder and is not a valid model identifier listed on "
                              "'https://huggingface.co/models'")


def test_a_folder_whose_tokenizer_does_not_match_its_model_is_refused(tmp_path, monkeypatch):
    folder = save_tiny_llama(tmp_path / "mixed", ["a", "b"])  # model: 4 ids
    word_tokenizer(["a", "b", "c", "d", "e"]).save_pretrained(folder)  # tokenizer: 7 ids
    monkeypatch.setattr(loaded, "_LOADED", {})
    with pytest.raises(ModelLoadError) as err:
        pairs.load_pair("lookup", target=str(folder), device="cpu")
    assert str(err.value) == (f"the tokenizer of {str(folder)!r} does not match its model: it has token id 6 "
                              "but the model scores only 4 ids")


def test_after_a_failed_load_the_loaded_pair_still_works(tiny_matching_folders, tmp_path):
    target, draft = tiny_matching_folders
    pair = pairs.load_pair("custom", target=str(target), draft=str(draft), device="cpu")
    with pytest.raises(ModelLoadError):
        pairs.load_pair("custom", target=str(target), draft=str(tmp_path / "missing"), device="cpu")
    config = DecodeConfig(verifier="greedy", branching=(2,), temperature=0.0, max_new_tokens=4, chat=False)
    assert len(engine.generate(pair, config, "a b").generated_ids) == 4
    assert hfload.resolve_spec(str(target))[1]


@pytest.mark.parametrize("kind, use", [("embedded-fast", "use 'embedded'"), ("head-lookup", "use 'embedded-head'")])
def test_a_removed_pair_kind_is_refused_with_what_changed_and_what_to_use(kind, use):
    """embedded-fast and head-lookup shipped before wave 4 and were removed (docs/speed.md records them as tried
    and not kept): an old script or trace that names one gets one line saying so, not 'unknown'."""
    with pytest.raises(ModelLoadError) as err:
        pairs.load_pair(kind)
    assert f"the {kind} pair was removed" in str(err.value) and use in str(err.value)
    assert "\n" not in str(err.value)


def test_the_cli_refuses_a_removed_pair_kind_with_the_same_line():
    from tests.cli.test_cli import run_cli

    res = run_cli("generate", "--pair", "embedded-fast", "--prompt", "hi")
    assert res.returncode == 2 and "the embedded-fast pair was removed" in res.stderr
