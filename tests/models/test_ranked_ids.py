"""ranked_ids.py: which token ids a draft head scores (the commonest first), read back from its folder, and
refused with a clear message when the file is wrong; draft_lm_rows takes those ids' lm_head rows."""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import save_file

from decoding.models.head.ranked_ids import IDS, ids_name, rank_by_mass, ranked_ids, save_ranked_ids
from decoding.models.head.weights import draft_lm_rows


def test_without_a_ranking_the_head_scores_the_lowest_ids(tmp_path) -> None:
    assert torch.equal(ranked_ids(tmp_path, 7), torch.arange(7))


def test_the_named_ids_come_first_in_their_order_then_the_rest_increasing(tmp_path) -> None:
    mass = torch.tensor([0.1, 3.0, 0.0, 2.0, 3.0, 0.5])
    ranked = rank_by_mass(mass)
    assert ranked.tolist() == [1, 4, 3, 5, 0, 2]  # the most mass first; a tie: the lower id first
    save_ranked_ids(tmp_path, ranked, keep=3)
    assert ranked_ids(tmp_path, 6).tolist() == [1, 4, 3, 0, 2, 5]  # the 3 kept, then the others in order
    assert ranked_ids(tmp_path, 9).tolist() == [1, 4, 3, 0, 2, 5, 6, 7, 8]


@pytest.mark.parametrize("named", [[1, 1, 2], [0, 9], [-1, 2]])
def test_a_ranking_that_names_an_id_twice_or_out_of_range_is_refused(tmp_path, named) -> None:
    save_file({"ids": torch.tensor(named, dtype=torch.int32)}, str(tmp_path / IDS))
    with pytest.raises(ValueError, match="distinct ids in \\[0, 6\\)"):
        ranked_ids(tmp_path, 6)


def test_an_unreadable_ranking_is_refused(tmp_path) -> None:
    (tmp_path / IDS).write_bytes(b"not safetensors")
    with pytest.raises(ValueError, match="unreadable"):
        ranked_ids(tmp_path, 6)


def test_the_head_reads_the_lm_head_rows_of_its_ids_rounded_to_float16() -> None:
    weight = torch.randn(6, 4)
    ids = torch.tensor([4, 1, 5])
    torch.testing.assert_close(draft_lm_rows(weight, ids), weight[ids].half().float(), atol=0, rtol=0)
    assert torch.equal(draft_lm_rows(weight, 2), weight[:2].half().float())  # a count: the first ids


def test_the_drafts_name_says_which_ids_it_scores() -> None:
    assert ids_name(8192, 49152, ranked=False) == "ids < 8192"  # the name heads had before a ranking
    assert ids_name(49152, 49152, ranked=False) == "ids < 49152"
    assert ids_name(8192, 49152, ranked=True) == "the 8192 commonest ids"
    assert ids_name(49152, 49152, ranked=True) == "all ids"
