"""Model pairs: the toy pair, custom pairs from local folders (and their errors), the prompt-lookup
drafter's q, the conversion cache; and (slow) the embedded pair and its cached reload."""

from __future__ import annotations

import os

import pytest
import torch

from decoding.models import cache_dir, lookup, toy
from decoding.models import pairs as models
from decoding.models.embedded import model as embedded
from decoding.models.hf_treelm import HFTreeLM
from decoding.models.pairs import ModelLoadError
from decoding.models.target import score_tree
from decoding.models.treelm import TreeLM, proposes
from decoding.verify.sampling import warp
from decoding.verify.tree import DraftTree

# ---- toy ------------------------------------------------------------------------------------------


def test_toy_pair_tokenizer_and_sessions():
    pair = models.load_pair("toy")
    assert pair.describe()["kind"] == "toy" and pair.vocab_size == toy.V == 12
    ids = pair.encode_prompt("The cat sat on the mat.", chat=True)
    assert pair.decode(ids) == " the cat sat on the mat."
    assert [pair.token_text(i) for i in ids[:2]] == [" the", " cat"]
    assert pair.eos_ids == frozenset({toy.EOS})
    with pytest.raises(ValueError, match="no word 'bird'.*the cat dog"):
        pair.encode_prompt("the bird", chat=False)
    with pytest.raises(ValueError, match="the prompt is empty"):
        pair.encode_prompt("   ", chat=False)
    target, draft = pair.target_session(), pair.draft_session()
    assert isinstance(target, TreeLM) and target is not pair.target_session()
    target.start(ids)
    logits = score_tree(target, DraftTree.root(ids[-1]).add_draws(0, [2, 3], merge=False))
    assert logits.shape == (3, toy.V) and target.forwards == 1
    assert torch.equal(logits[0], toy.toy_target_logits(ids))
    assert torch.equal(logits[1], toy.toy_target_logits(ids + [2]))
    draft.start(ids)
    assert not torch.equal(draft.logits(DraftTree.root(ids[-1]), [0])[0], logits[0])


def test_toy_logits_are_pure_functions_of_the_last_two_tokens():
    a = toy.toy_target_logits([5, 1, 2])
    assert torch.equal(a, toy.toy_target_logits([7, 1, 2])) and torch.equal(a, toy.toy_target_logits([1, 2]))
    a[0] = 99.0  # callers get a copy
    assert toy.toy_target_logits([1, 2])[0] != 99.0
    p, q = warp(toy.toy_target_logits([1, 2]), 1.0), warp(toy.toy_draft_logits([1, 2]), 1.0)
    assert 0.5 < float(torch.minimum(p, q).sum()) < 0.95  # a draft that is useful, and not the target


# ---- lookup ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "context, expected",
    [
        ([1, 2, 9, 1, 2, 7, 1, 2, 9, 1, 2], {7: 1.0}),  # 3-gram (9, 1, 2) seen once before, followed by 7
        ([1, 2, 9, 1, 2, 7, 3, 1, 2], {9: 0.5, 7: 0.5}),  # no earlier (3, 1, 2): the 2-gram (1, 2)
    ],
)
def test_lookup_q(context, expected):
    q = warp(lookup.lookup_logits(context, 10), 1.0)
    assert {i: round(float(q[i]), 12) for i in torch.nonzero(q).flatten().tolist()} == expected


@pytest.mark.parametrize("context", [[4, 5, 4, 6, 4], [4, 5, 6], [8]])  # a 1-gram match only; none; too short
def test_lookup_has_no_guess_without_a_2_or_3_gram_match(context):
    row = lookup.lookup_logits(context, 10)
    assert torch.isneginf(row).all() and not bool(proposes(row[None])[0])


def test_lookup_drafter_reads_the_tree_path_and_costs_no_forward():
    drafter = lookup.lookup_session(10)
    drafter.start([1, 2, 3, 1, 2])
    tree = DraftTree.root(2).add_draws(0, [3, 5], merge=False)
    rows = drafter.logits(tree, [0, 1, 2])
    assert drafter.forwards == 0
    assert torch.equal(warp(rows[1], 1.0), warp(lookup.lookup_logits([1, 2, 3, 1, 2, 3], 10), 1.0))
    assert int(warp(rows[0], 1.0).argmax()) == 3  # (3, 1, 2) was followed by 3


# ---- custom pairs from local folders -------------------------------------------------------------


def test_vocab_mismatch_is_refused_naming_both_models_and_the_token(tiny_model_folders):
    target, draft = tiny_model_folders
    with pytest.raises(ModelLoadError) as err:
        models.load_pair("custom", target=str(target), draft=str(draft), device="cpu")
    message = str(err.value)
    assert str(target) in message and str(draft) in message
    assert "token id 3 is 'b' in the target but 'z' in the draft" in message
    assert "\n" not in message


def test_a_missing_folder_is_named(tmp_path):
    missing = tmp_path / "no-such-model"
    with pytest.raises(ModelLoadError, match=f"model folder not found: {missing}"):
        models.load_pair("custom", target=str(missing), draft=str(missing), device="cpu")
    with pytest.raises(ModelLoadError, match="model folder not found: ./nope"):
        models.load_pair("custom", target="./nope", draft="./nope")


def test_a_folder_that_is_not_a_causal_lm_is_refused(tmp_path):
    from transformers import T5Config

    from tests.conftest import word_tokenizer

    folder = tmp_path / "t5"
    T5Config(vocab_size=8, d_model=8, d_kv=4, d_ff=8, num_layers=1, num_heads=2).save_pretrained(folder)
    word_tokenizer(["a", "b"]).save_pretrained(folder)
    with pytest.raises(ModelLoadError, match="not a causal language model"):
        models.load_pair("custom", target=str(folder), draft=str(folder), device="cpu")


def test_a_custom_pair_from_local_folders_loads_once(tiny_matching_folders):
    target, draft = tiny_matching_folders
    pair = models.load_pair("custom", target=str(target), draft=str(draft), device="cpu")
    again = models.load_pair("custom", target=str(target), draft=str(draft), device="cpu")
    assert again.target_model is pair.target_model and again.draft_model is pair.draft_model
    assert pair.describe() == {"kind": "custom", "target": str(target), "draft": str(draft), "device": "cpu",
                               "dtype": "float32", "vocab_size": 8}
    ids = pair.encode_prompt("a b c", chat=True)  # no chat template: plain encoding
    assert ids == [2, 3, 4] and pair.decode(ids) == "a b c" and pair.token_text(3) == "b"
    assert pair.eos_ids == frozenset({1}) and pair.max_context == 128
    sessions = [pair.target_session(), pair.draft_session()]
    for lm in sessions:
        lm.start(ids)
        assert score_tree(lm, DraftTree.root(ids[-1]).add_draws(0, [5, 6], merge=False)).shape == (3, 8)
    other = pair.target_session()  # a second run: its own cache, same shared model
    other.start([5, 5, 5, 5, 5, 5])
    assert other.model is sessions[0].model and sessions[0].cache.get_seq_length() == len(ids) - 1 + 3


def test_an_unknown_hub_id_offline_is_explained(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelLoadError, match="neither a local folder nor in the local hub cache"):
        models.load_pair("custom", target="no-such-org/no-such-model", draft="no-such-org/no-such-model",
                         device="cpu")


def test_unknown_kind_and_bad_arguments():
    with pytest.raises(ModelLoadError, match="unknown model pair"):
        models.load_pair("nope")
    with pytest.raises(ModelLoadError, match="needs both"):
        models.load_pair("custom", target="x")
    with pytest.raises(ModelLoadError, match="unknown device"):
        models.load_pair("custom", target="a/b", draft="a/b", device="tpu")


# ---- the embedded conversion cache ---------------------------------------------------------------


def test_cache_root_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("SPECSCOPE_CACHE", str(tmp_path / "s"))
    assert cache_dir.cache_root() == tmp_path / "s"
    monkeypatch.delenv("SPECSCOPE_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert cache_dir.cache_root() == tmp_path / "x" / "specscope"


def test_only_a_folder_with_the_done_marker_counts_as_converted(monkeypatch, tmp_path):
    monkeypatch.setenv("SPECSCOPE_CACHE", str(tmp_path))
    calls = []

    def fake_convert(dest, progress):
        calls.append(dest)
        dest.mkdir(parents=True, exist_ok=True)
        (dest / embedded.DONE_MARKER).write_text("{}")

    monkeypatch.setattr(embedded, "convert", fake_convert)
    (tmp_path / embedded.CACHE_FOLDER).mkdir()  # e.g. a folder some crash left behind: no marker
    folder = embedded.converted_folder(print)
    assert calls == [folder] == [tmp_path / embedded.CACHE_FOLDER]
    embedded.converted_folder(print)
    assert len(calls) == 1


def test_stale_temp_folders_of_killed_conversions_are_removed(tmp_path):
    old, young = tmp_path / ".converting-old", tmp_path / ".converting-young"
    old.mkdir()
    young.mkdir()
    os.utime(old, (0, 0))
    embedded._remove_stale_temps(tmp_path)
    assert not old.exists() and young.exists()


def test_publish_is_atomic_and_keeps_a_finished_folder(tmp_path):
    dest = tmp_path / "model"
    first = tmp_path / ".tmp1"
    first.mkdir()
    (first / embedded.DONE_MARKER).write_text("first")
    embedded._publish(first, dest)
    assert (dest / embedded.DONE_MARKER).read_text() == "first" and not first.exists()
    second = tmp_path / ".tmp2"
    second.mkdir()
    embedded._publish(second, dest)  # another process finished first: keep its folder
    assert (dest / embedded.DONE_MARKER).read_text() == "first"


# ---- the embedded pair (real model) --------------------------------------------------------------


@pytest.mark.slow
def test_embedded_pair_loads_and_the_cached_reload_is_bit_identical():
    pair = models.load_pair("embedded", device="cpu", progress=lambda m: None)
    assert pair.describe()["kind"] == "embedded" and pair.vocab_size == 49152 and pair.max_context == 8192
    again_pair = models.load_pair("embedded", device="cpu")  # the load cache: no second load
    assert again_pair.target_model is pair.target_model and again_pair.draft_model is pair.draft_model
    ids = pair.encode_prompt("Why is the sky blue?", chat=True)
    assert pair.token_text(ids[-1]) == "\n" and pair.eos_ids == frozenset({2})
    tree = DraftTree.root(ids[-1]).add_draws(0, [504, 1073], merge=False)
    cached = HFTreeLM(pair.target_model)  # transformers' forward of the loaded (cached) weights
    cached.start(ids)
    first = score_tree(cached, tree)
    reloaded = embedded.load_target("cpu", progress=lambda m: None)  # a fresh load from the safetensors cache
    again = HFTreeLM(reloaded)
    again.start(ids)
    assert torch.equal(score_tree(again, tree), first)
    # the pair's own target session (the lean forward on a CPU) is the same p up to float rounding; bit-equal only
    # with the stock products: an earlier calibration in the same process may have put this machine's plan on it
    target = pair.target_session()
    target.start(ids)
    assert torch.allclose(score_tree(target, tree), first, atol=2e-3, rtol=0)
    draft = pair.draft_session()
    draft.start(ids)
    q = warp(draft.logits(tree, [0])[0], 1.0)
    p = warp(first[0], 1.0)
    assert 0.3 < float(torch.minimum(p, q).sum()) < 1.0  # the int8 self-draft is close, not equal

