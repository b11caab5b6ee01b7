"""The fused head's data on a time budget and its training corpus kept on a device: a resident corpus gives the very
batches the memory-mapped one gives, a spent data budget starts no new shard but keeps those on disk, and a time
budget fits the training steps (never more than planned, never fewer than done)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bench import head_data, head_train

HIDDEN = 6


def fake_shard(folder, source: str, lengths: list[int], seed: int) -> None:
    folder.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    seqs = [rng.integers(0, 50, n).tolist() for n in lengths]
    total = sum(lengths)
    forced = {"taps": rng.standard_normal((total, 2, HIDDEN)).astype(np.float16),
              "lse": rng.standard_normal(total).astype(np.float32)}
    head_data.write_shard(folder, seqs, [2] * len(seqs), forced, {"source": source, "index": 0})


@pytest.fixture
def folders(tmp_path):
    made = [tmp_path / "shards" / "chat-000", tmp_path / "shards" / "docs-000"]
    fake_shard(made[0], "chat", [9, 5, 12, 7], seed=1)
    fake_shard(made[1], "docs", [6, 11, 4], seed=2)
    return made


@pytest.mark.parametrize("window", [64, 8])
def test_a_resident_corpus_gives_the_batches_the_mapped_one_gives(folders, window) -> None:
    plan = head_train.TrainPlan(held_share=0.0)
    mapped, resident = head_train.Corpus(folders, plan), head_train.Corpus(folders, plan)
    resident.keep_on("cpu")
    picks = mapped.fit[::-1]  # both shards, sequences longer and shorter than the window
    assert {s.shard for s in picks} == {0, 1}
    want, got = mapped.batch(picks, window), resident.batch(picks, window)
    assert set(want) == set(got)
    for key in want:
        assert want[key].dtype == got[key].dtype and torch.equal(want[key], got[key]), key


def test_the_resident_gather_fails_when_a_sequence_is_read_one_token_late(folders, monkeypatch) -> None:
    plan = head_train.TrainPlan(held_share=0.0)
    mapped, resident = head_train.Corpus(folders, plan), head_train.Corpus(folders, plan)
    resident.keep_on("cpu")
    resident.resident["offset"] = resident.resident["offset"] + 1  # a broken offset: every read one token late
    picks = mapped.fit[:2]
    assert not torch.equal(mapped.batch(picks, 64)["taps"], resident.batch(picks, 64)["taps"])


def test_a_spent_data_budget_starts_no_shard_and_keeps_the_ones_on_disk(tmp_path, monkeypatch) -> None:
    plan = head_data.Plan(chat_shards=2, magpie_shards=0, docs_shards=1, code_shards=0, batch=2)
    fake_shard(tmp_path / "shards" / "docs-000", "docs", [5, 6], seed=3)
    made: list[str] = []

    def one_shard(source, index, *_):
        made.append(f"{source}-{index}")
        return [[1, 2, 3, 4]], [1], {"source": source, "index": index}

    monkeypatch.setattr(head_data, "sequences", one_shard)
    monkeypatch.setattr(head_data, "teacher_forced", lambda model, seqs: {
        "taps": np.zeros((4, 2, HIDDEN), np.float16), "lse": np.zeros(4, np.float32)})
    said: list[str] = []
    folders = head_data.make(tmp_path, plan, None, None, said.append, seconds=-1.0)
    assert made == [] and [f.name for f in folders] == ["docs-000"]
    assert "2 planned shards not made (1 used)" in said[-1]
    folders = head_data.make(tmp_path, plan, None, None, said.append, seconds=60.0)
    assert sorted(made) == ["chat-0", "chat-1"] and len(folders) == 3


@pytest.mark.parametrize("done, spent, left, planned, want", [
    (20, 2.0, 10.0, 1000, 120),  # 0.1 s a step: 100 more steps fit
    (20, 2.0, 1000.0, 300, 300),  # never more than planned
    (20, 2.0, 0.0, 1000, 20),  # never fewer than done
])
def test_a_time_budget_fits_the_steps(done, spent, left, planned, want) -> None:
    plan = head_train.TrainPlan(steps=planned)
    fitted = head_train.fitted_steps(plan, done, spent, left)
    assert fitted.steps == want and fitted.batch == plan.batch


def test_a_chat_prompt_is_answered_greedily_once_whatever_the_passes() -> None:
    prompts, batch = 8, 4  # two shards a pass over the prompts
    plan = head_data.Plan(chat_shards=12, batch=batch, temperatures=(0.0, 0.8))
    greedy: dict[int, int] = {}
    for index in range(plan.chat_shards):
        if head_data.shard_temperature("chat", index, plan, prompts) == 0.0:
            for i in range(batch):
                prompt = (index * batch + i) % prompts
                greedy[prompt] = greedy.get(prompt, 0) + 1
    assert greedy == {p: 1 for p in range(prompts)}  # every prompt once: no greedy duplicate, none left out
    assert [head_data.shard_temperature("magpie", i, plan, prompts) for i in range(4)] == [0.0, 0.8, 0.0, 0.8]


def test_a_sequence_stays_held_out_or_trained_on_when_shards_are_added(tmp_path) -> None:
    """A second run in the same work folder adds shards and goes on from the first run's head: the first run's
    held-out sequences must stay held out (and its training ones stay training ones), or the second run's check
    reads sequences its starting head trained on."""
    first = []
    for index in range(3):
        folder = tmp_path / "shards" / f"magpie-{index:03d}"
        fake_shard(folder, "magpie", [8] * 40, seed=10 + index)
        (folder / "meta.json").write_text((folder / "meta.json").read_text().replace('"index": 0', f'"index": {index}'))
        first.append(folder)
    added = tmp_path / "shards" / "magpie-003"
    fake_shard(added, "magpie", [8] * 40, seed=20)
    (added / "meta.json").write_text((added / "meta.json").read_text().replace('"index": 0', '"index": 3'))
    plan = head_train.TrainPlan(held_share=0.1)
    before, after = head_train.Corpus(first, plan), head_train.Corpus([*first, added], plan)
    key = lambda corpus, s: (corpus.shards[s.shard].meta["index"], s.start)  # noqa: E731
    held_before = {key(before, s) for s in before.held}
    held_after = {key(after, s) for s in after.held if after.shards[s.shard].meta["index"] < 3}
    assert 3 <= len(held_before) <= 30  # about a tenth of 120 held out
    assert held_after == held_before
    assert {key(after, s) for s in after.fit} >= {key(before, s) for s in before.fit}


def test_the_held_out_draws_are_the_shards_own() -> None:
    meta = {"source": "chat", "index": 2}
    assert torch.equal(head_train.held_draws(meta, 5, seed=0), head_train.held_draws(meta, 5, seed=0))
    assert not torch.equal(head_train.held_draws(meta, 5, seed=0), head_train.held_draws(meta | {"index": 3}, 5, 0))
    assert head_train.held_out([0.5, 0.2, 0.9], share=0.1) == {1}  # none below the share: the lowest draw
    assert head_train.held_out([0.05, 0.2, 0.01], share=0.1) == {0, 2}
