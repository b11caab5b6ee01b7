"""Which token ids a draft head scores: the commonest in the target's own answers first.

Why: on a CPU the head scores only 8192 ids (pair.scored_ids), q = 0 beyond them. The lowest ids (the first BPE
merges) held 0.894 of the target's probability mass on its own chat answers; the 8192 ids it put the most mass on
in other answers of its held 0.962. Same cost a level, more of p within q's reach: on two held-out prompt sets
the shipped head's exact acceptance at the first level rose from 0.529 to 0.561 at T = 0.8 and stayed at 0.61 at
T = 0, where the target's top token is nearly always a low id already (docs/speed.md, "The ids the head scores on
a CPU").

The ranking ships beside the head as ids.safetensors ("ids": int32 [K], the commonest first); the ids it does not
name follow in increasing order. A head folder without the file ranks the ids 0, 1, 2, ... (the heads shipped
before it). The head scores the first n ranked ids: its output rows are the target's lm_head rows of those ids
(weights.draft_lm_rows), so the ranking changes which rows, never the head's own weights. No torch beyond
tensors.
"""

from __future__ import annotations

from pathlib import Path

import torch

IDS = "ids.safetensors"


def ranked_ids(folder: Path, vocab: int) -> torch.Tensor:
    """All `vocab` ids [vocab] (int64), the ones `folder`'s ids.safetensors names first, in its order; 0 .. vocab - 1
    where the folder has no such file. A clear error when the file is unreadable or names ids out of range."""
    path = Path(folder) / IDS
    if not path.exists():
        return torch.arange(vocab)
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        named = load_file(str(path))["ids"].to(torch.int64)  # [K]
    except (OSError, KeyError, ValueError, RuntimeError, SafetensorError) as err:
        raise ValueError(f"the draft head's id ranking {path} is unreadable ({err})") from err
    if named.ndim != 1 or len(named) > vocab or len(named.unique()) != len(named) or \
            (len(named) and (int(named.min()) < 0 or int(named.max()) >= vocab)):
        raise ValueError(f"the draft head's id ranking {path} must name distinct ids in [0, {vocab}), each once")
    rest = torch.ones(vocab, dtype=torch.bool)
    rest[named] = False
    return torch.cat([named, rest.nonzero().flatten()])


def rank_by_mass(mass: torch.Tensor) -> torch.Tensor:
    """mass [V] (the target's probability summed over positions) -> ids [V], the most mass first (ties: lower id)."""
    return torch.sort(-mass.double(), stable=True).indices


def save_ranked_ids(folder: Path, ranked: torch.Tensor, keep: int) -> None:
    """The first `keep` ids of `ranked` into `folder`/ids.safetensors (the rest follow in increasing order)."""
    from safetensors.torch import save_file

    Path(folder).mkdir(parents=True, exist_ok=True)
    save_file({"ids": ranked[:keep].to(torch.int32).contiguous()}, str(Path(folder) / IDS))


def ids_name(size: int, vocab: int, ranked: bool) -> str:
    """How a draft's name says which ids it scores (the name keys its measured acceptance)."""
    if size >= vocab:
        return f"ids < {vocab}" if not ranked else "all ids"
    return f"the {size} commonest ids" if ranked else f"ids < {size}"
