"""Monte-Carlo check of a verifier's real `judge` against its exact accepted-length law.

Why: the exact law comes from the entry's `conditional` (step_law); the histogram comes from the
code that actually runs (`judge` -> `verify`) over fresh uniforms. A wrong `verify` shows as a
mismatch, measured by a chi-square test. At a large vocabulary one `verify` costs milliseconds, so
the rows are first compressed to the tokens that matter (the tree's tokens and the top tokens of
every p and q row) plus a few "rest" tokens sharing the remaining mass equally; the exact law beside
the histogram is recomputed on the very same compressed rows, so the comparison stays exact. The rest
is split so that no rest token outweighs a row's largest kept token: a verifier that reads a row's
argmax (SpecHub's hub is argmax q) sees the same argmax after compression. One rest token holding the
tail of a flat q had become the hub, and a compared SpecHub step failed on every retry.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from decoding.verify.entry import Verifier
from decoding.verify.sampling import make_generator
from decoding.verify.step_law import accepted_length_law
from decoding.verify.tree import DraftTree

COMPRESS_ABOVE = 256  # vocabularies larger than this are compressed before sampling
KEEP_TOP = 32  # top tokens of each p and q row kept by the compression
MIN_EXPECTED = 5.0  # chi-square bins with fewer expected counts are pooled


@dataclass(frozen=True)
class MonteCarlo:
    histogram: tuple[float, ...]  # frequency of L = 0, 1, ..., depth
    draws: int
    exact: tuple[float, ...]  # exact law on the rows that were sampled
    pvalue: float | None  # chi-square p-value (None: fewer than two poolable bins)


def compress(tree: DraftTree, p: torch.Tensor, q: torch.Tensor) -> tuple[DraftTree, torch.Tensor, torch.Tensor]:
    """Rows restricted to the kept tokens plus the rest tokens (the last ids); tree tokens renumbered."""
    V = p.shape[-1]
    if V <= COMPRESS_ABOVE:
        return tree, p, q
    keep = set(tree.tokens)
    for rows in (p, q):
        keep.update(torch.topk(rows, min(KEEP_TOP, V), dim=-1).indices.flatten().tolist())
    ids = torch.tensor(sorted(keep), dtype=torch.long)
    new_id = {int(t): i for i, t in enumerate(ids.tolist())}

    rows = [_kept_and_rest(r, ids) for r in (p, q)]
    pieces = _rest_pieces(rows, V - len(ids))
    ps, qs = (torch.cat([kept, (rest / pieces).expand(-1, pieces)], dim=-1) for kept, rest in rows)  # [N, K + pieces]
    small = DraftTree(tuple(new_id[t] for t in tree.tokens), tree.parents, tree.draws)
    return small, ps, qs


def _kept_and_rest(rows: torch.Tensor, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """rows [N, V] -> (the kept columns [N, K], the mass outside them [N, 1])."""
    kept = rows.index_select(-1, ids)
    return kept, (rows.sum(-1, keepdim=True) - kept.sum(-1, keepdim=True)).clamp_min(0.0)


def _rest_pieces(rows: list[tuple[torch.Tensor, torch.Tensor]], most: int) -> int:
    """How many equal rest tokens the rest mass is split into, so that no rest token outweighs the largest kept
    token of its row: floor(rest / largest kept) + 1 over every (kept [N, K], rest [N, 1]) row with mass kept,
    at most `most` (the tokens the rest stands for: each weighs at most a kept top token, so their mean does
    too, and a tie goes to the kept token, which has the lower id)."""
    need = 1
    for kept, rest in rows:
        top = kept.max(-1, keepdim=True).values  # [N, 1]
        live = top > 0  # a leaf's q row is all zeros
        if bool(live.any()):
            need = max(need, int(torch.floor(rest[live] / top[live]).max()) + 1)
    return max(1, min(need, most))


def run(entry: Verifier, tree: DraftTree, p: torch.Tensor, q: torch.Tensor, draws: int, seed: int) -> MonteCarlo:
    """Histogram of L over `draws` fresh walks of entry.judge, and its chi-square against the exact law."""
    small, ps, qs = compress(tree, p, q)
    depth = tree.max_depth
    exact = accepted_length_law(entry.step_law(small, ps, qs), depth)
    generator = make_generator(seed)
    counts = [0] * (depth + 1)
    entry = entry.memoised()  # the same nodes are verified `draws` times: fit what a node needs once
    for _ in range(draws):
        counts[len(entry.judge(small, ps, qs, generator).path) - 1] += 1
    hist = tuple(c / draws for c in counts) if draws else ()
    return MonteCarlo(hist, draws, tuple(exact), chi_square_pvalue(counts, exact) if draws else None)


def chi_square_pvalue(counts: list[int], law: list[float]) -> float | None:
    """Pearson chi-square p-value of observed counts against `law`, pooling bins expected below 5."""
    n = sum(counts)
    obs, exp, acc_o, acc_e = [], [], 0.0, 0.0
    for c, pr in sorted(zip(counts, law, strict=True), key=lambda t: t[1]):
        acc_o, acc_e = acc_o + c, acc_e + n * pr
        if acc_e >= MIN_EXPECTED:
            obs.append(acc_o)
            exp.append(acc_e)
            acc_o, acc_e = 0.0, 0.0
    if acc_o or acc_e:
        if not exp:
            return None
        obs[-1] += acc_o
        exp[-1] += acc_e
    if len(exp) < 2:
        return None if acc_o == 0 else 0.0
    stat = sum((o - e) ** 2 / e for o, e in zip(obs, exp, strict=True))
    df = len(exp) - 1
    return float(torch.special.gammaincc(torch.tensor(df / 2, dtype=torch.float64),
                                         torch.tensor(stat / 2, dtype=torch.float64)))
