"""Train the fused draft head (decoding/models/head/fused.py) on the shards head_data.py wrote: resumable, seeded.

Each step draws `batch` sequences (a fixed share of them held out, never trained on), runs `FusedHead.unrolled`
`levels` deep (EAGLE-3's training-time test: level d reads the head's own level d-1 state, as drafting a chain
does) and scores level d's q at pair j against the target's p at position j + d, over the head's ids, exact (the
shard's log sum exp of the full vocabulary normalises p; no renormalisation over the head's ids). Only answer
positions are scored (the prompt's pairs are attended to, not trained on).

The loss mixes KL's cross-entropy with the acceptance itself (LK losses, Samarin et al. 2026: a draft of
limited capacity trained on KL alone settles where the acceptance sum_x min(p, q) is not the largest): per
row (1 - mix) * CE(p, q) + mix * -log(sum_x min(p, q)), with `mix` rising linearly from 0 to MIX over the
first half of training (-log alpha from the start trains badly: tiny, unstable gradients where q is far from
p), and level d weighted LEVEL_DECAY^(d - 1). A feature regression (EAGLE's: smooth L1 between out_norm(h) and
the target's final feature at the label position, weight REGRESS) gives every row a dense signal beside p's.
AdamW, warm-up then cosine decay. The head's forward and its products run in bfloat16 on the CPU (autocast: 3-6x
faster than float32 on an AVX-512 EPYC).

A checkpoint (the head, the optimiser, the step, the random generators) is written every `every` steps into
work/train/ and picked up by a rerun with the same plan: an interrupted run continues where it stopped.
"""

from __future__ import annotations

import math
import time
import zlib
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from bench.head_data import Shard, read_shard
from decoding.models.head.fused import FusedConfig, FusedHead

MIX = 0.5  # the share of -log(acceptance) in the loss at the end of the ramp
REGRESS = 0.1  # weight of the feature regression: out_norm(h) against the target's feature at the label position
LEVEL_DECAY = 0.8
FIT_AT = 20  # steps timed before a time budget fits the plan's steps
Log = Callable[[str], None]


@dataclass(frozen=True)
class TrainPlan:
    steps: int = 2400
    batch: int = 12  # sequences a step
    window: int = 320  # tokens of a sequence at most (its start: the prompt and most answers fit)
    levels: int = 3
    lr: float = 1e-3
    warmup: int = 100
    seed: int = 0
    every: int = 100  # steps between checkpoints (and held-out checks)
    held_share: float = 0.03  # sequences held out of training, for the running check
    docs_weight: float = 0.3  # how often a docs sequence is drawn against a chat one (users ask for answers)
    code_weight: float = 0.5  # and a Python-source one


@dataclass(frozen=True)
class Sequence:
    shard: int
    start: int
    end: int
    answer: int  # index of the first answer token within the sequence


def held_draws(meta: dict, count: int, seed: int) -> torch.Tensor:
    """One uniform draw [count] per sequence of the shard `meta` describes, seeded by the shard's own name (source,
    index) and `seed`: whether a sequence is held out does not depend on which other shards are there. (A
    permutation of the whole corpus did: a second run that added shards to the same work folder and went on
    from the first run's head held out some sequences that head had trained on.)"""
    name = f"{meta['source']}-{int(meta['index'])}".encode()
    generator = torch.Generator().manual_seed(seed * 1_000_003 + zlib.crc32(name))
    return torch.rand(count, generator=generator, dtype=torch.float64)


def held_out(draws: list[float], share: float) -> set[int]:
    """The sequences held out: each whose draw is below `share`; at least one (the lowest draw), for the check."""
    held = {i for i, u in enumerate(draws) if u < share}
    if held or not draws:
        return held
    return {min(range(len(draws)), key=draws.__getitem__)}


class Corpus:
    """Every sequence of every shard (memory-mapped), split into training and held-out ones by a seeded draw."""

    def __init__(self, folders: list[Path], plan: TrainPlan) -> None:
        self.shards: list[Shard] = [read_shard(folder) for folder in folders]
        if not self.shards:
            raise ValueError("no data shards: make the data first")
        seqs, weights, draws = [], [], []
        for index, shard in enumerate(self.shards):
            weight = {"docs": plan.docs_weight, "code": plan.code_weight}.get(shard.meta["source"], 1.0)
            shard_draws = held_draws(shard.meta, len(shard.answer), plan.seed).tolist()
            for i, answer in enumerate(shard.answer.tolist()):
                start, end = int(shard.starts[i]), int(shard.starts[i + 1])
                if end - start > answer + 2:
                    seqs.append(Sequence(index, start, end, int(answer)))
                    weights.append(weight)
                    draws.append(shard_draws[i])
        held = held_out(draws, plan.held_share)
        self.fit = [s for i, s in enumerate(seqs) if i not in held]
        self.held = [s for i, s in enumerate(seqs) if i in held]
        self.weights = torch.tensor([w for i, w in enumerate(weights) if i not in held])
        self.taps = tuple(self.shards[0].meta["taps"])
        self.answer_tokens = sum(s.end - s.start - s.answer for s in self.fit)
        self.resident: dict[str, torch.Tensor] | None = None

    def keep_on(self, device) -> None:
        """Copy every shard's arrays into one tensor each on `device` (a GPU: a batch is then a gather there, not
        a copy from disk through the host); taps stay float16 there. batch() gives the same tensors either way."""
        offsets = np.cumsum([0] + [len(shard.ids) for shard in self.shards])
        self.resident = {
            "offset": torch.tensor(offsets[:-1], dtype=torch.long),
            "ids": torch.from_numpy(np.concatenate([shard.ids for shard in self.shards]).astype(np.int64)).to(device),
            "taps": torch.cat([torch.from_numpy(np.array(shard.taps)).to(device) for shard in self.shards]),
            "lse": torch.from_numpy(np.concatenate([shard.lse for shard in self.shards])).to(device),
        }

    def batch(self, seqs: list[Sequence], window: int, device=None) -> dict[str, torch.Tensor]:
        """Padded tensors of `seqs` (each cut to `window` tokens): ids [B, L], taps [B, L, K + 1, hidden]
        float32, lse [B, L], length [B], answer [B]."""
        if self.resident is not None:
            return self.gathered(seqs, window)
        width = min(window, max(s.end - s.start for s in seqs))
        k, hidden = self.shards[0].taps.shape[1:]
        ids = torch.zeros(len(seqs), width, dtype=torch.long)
        taps = torch.zeros(len(seqs), width, k, hidden)
        lse = torch.zeros(len(seqs), width)
        length = torch.zeros(len(seqs), dtype=torch.long)
        for row, s in enumerate(seqs):
            shard, n = self.shards[s.shard], min(width, s.end - s.start)
            ids[row, :n] = torch.from_numpy(np.array(shard.ids[s.start: s.start + n], dtype=np.int64))
            taps[row, :n] = torch.from_numpy(np.array(shard.taps[s.start: s.start + n], dtype=np.float32))
            lse[row, :n] = torch.from_numpy(np.array(shard.lse[s.start: s.start + n], dtype=np.float32))
            length[row] = n
        answer = torch.tensor([s.answer for s in seqs])
        out = {"ids": ids, "taps": taps, "lse": lse, "length": length, "answer": answer}
        return {key: value.to(device) for key, value in out.items()} if device is not None else out

    def gathered(self, seqs: list[Sequence], window: int) -> dict[str, torch.Tensor]:
        """batch() from the resident tensors (keep_on): one gather on their device; padding rows are zeros."""
        kept = self.resident
        device = kept["ids"].device
        width = min(window, max(s.end - s.start for s in seqs))
        start = torch.tensor([int(kept["offset"][s.shard]) + s.start for s in seqs], device=device)  # [B]
        length = torch.tensor([min(width, s.end - s.start) for s in seqs], device=device)  # [B]
        step = torch.arange(width, device=device)[None]  # [1, L]
        inside = step < length[:, None]  # [B, L]
        at = torch.where(inside, start[:, None] + step, 0)  # [B, L]
        return {"ids": kept["ids"][at] * inside, "taps": kept["taps"][at].float() * inside[..., None, None],
                "lse": kept["lse"][at] * inside, "length": length,
                "answer": torch.tensor([s.answer for s in seqs], device=device)}


def level_mask(batch: dict[str, torch.Tensor], level: int) -> torch.Tensor:
    """[B, L] bool: pair j is scored at `level` where its label position j + level is inside the sequence and
    predicts an answer token (j + level + 1 >= the first answer token)."""
    width = batch["ids"].shape[1]
    label = torch.arange(width, device=batch["ids"].device)[None] + level  # [1, L]
    return (label <= batch["length"][:, None] - 1) & (label + 1 >= batch["answer"][:, None])


def losses(head: FusedHead, batch: dict[str, torch.Tensor], embed: torch.Tensor, lm_rows: torch.Tensor,
           levels: int, mix: float) -> tuple[torch.Tensor, list[dict[str, float]]]:
    """(the weighted loss, per level: mean acceptance sum min(p, q) at T = 1, top-1 agreement, rows scored)."""
    kind = batch["taps"].device.type  # the products in bfloat16 on the CPU or a GPU (autocast)
    with torch.autocast(kind, dtype=torch.bfloat16):
        states = head.unrolled(batch["taps"], batch["ids"], embed, levels)
    scored = level_mask(batch, 1)  # [B, L]: a label position of any level is one of level 1's (shifted)
    first = scored.nonzero(as_tuple=True)
    at = torch.full(scored.shape, -1, dtype=torch.long, device=scored.device)
    at[first[0], first[1] + 1] = torch.arange(len(first[0]), device=scored.device)  # label position -> row of p
    with torch.no_grad(), torch.autocast(kind, dtype=torch.bfloat16):
        f = batch["taps"][first[0], first[1] + 1, -1]  # [N1, hidden]: the target's final features there
        p_all_logits = (f @ lm_rows.T).float()  # [N1, H], once for every level
    p_all = torch.exp(p_all_logits - batch["lse"][first[0], first[1] + 1][:, None])  # exact p, mass <= 1
    total, stats = 0.0, []
    for level, h in enumerate(states, start=1):
        rows = level_mask(batch, level).nonzero(as_tuple=True)
        label_rows = at[rows[0], rows[1] + level]  # [N]: every level's label position is scored at level 1
        with torch.autocast(kind, dtype=torch.bfloat16):
            q_logits = head.logits(h[rows], lm_rows)  # [N, H]
        log_q = torch.log_softmax(q_logits.float(), -1)
        p, p_logits = p_all[label_rows], p_all_logits[label_rows]  # [N, H]
        alpha = torch.minimum(p, log_q.exp()).sum(-1)  # [N]
        ce = -(p * log_q).sum(-1)
        gold = batch["taps"][rows[0], rows[1] + level, -1]  # [N, hidden]: the target's feature there
        regress = F.smooth_l1_loss(head.out_norm(h[rows]).float(), gold, reduction="none").mean(-1)
        row_loss = (1 - mix) * ce + mix * -torch.log(alpha + 1e-6) + REGRESS * regress
        total = total + LEVEL_DECAY ** (level - 1) * row_loss.mean()
        agree = (q_logits.argmax(-1) == p_logits.argmax(-1)).float()
        stats.append({"alpha": float(alpha.detach().mean()), "top1": float(agree.mean()), "rows": len(alpha)})
    return total, stats


def held_out_check(head: FusedHead, corpus: Corpus, plan: TrainPlan, embed, lm_rows) -> list[dict[str, float]]:
    """Per level, over the held-out sequences: mean acceptance (T = 1) and top-1 agreement, teacher-forced."""
    sums = [{"alpha": 0.0, "top1": 0.0, "rows": 0} for _ in range(plan.levels)]
    with torch.no_grad():
        for i in range(0, len(corpus.held), plan.batch):
            batch = corpus.batch(corpus.held[i: i + plan.batch], plan.window, lm_rows.device)
            _, stats = losses(head, batch, embed, lm_rows, plan.levels, 0.0)
            for acc, s in zip(sums, stats, strict=True):
                acc["alpha"] += s["alpha"] * s["rows"]
                acc["top1"] += s["top1"] * s["rows"]
                acc["rows"] += s["rows"]
    return [{"alpha": round(s["alpha"] / max(s["rows"], 1), 4), "top1": round(s["top1"] / max(s["rows"], 1), 4),
             "rows": s["rows"]} for s in sums]


def lr_at(step: int, plan: TrainPlan) -> float:
    if step < plan.warmup:
        return plan.lr * (step + 1) / plan.warmup
    progress = (step - plan.warmup) / max(1, plan.steps - plan.warmup)
    return plan.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def fitted_steps(plan: TrainPlan, step: int, spent: float, left: float) -> TrainPlan:
    """The plan with its steps cut to what `left` seconds hold at the rate of the last `step` steps (`spent`
    seconds); never more than planned, never fewer than done. The schedule then decays over the fitted steps."""
    more = int(left / max(spent / max(step, 1), 1e-9))
    return replace(plan, steps=max(step, min(plan.steps, step + more)))


def train(work: Path, folders: list[Path], config: FusedConfig, plan: TrainPlan, embed: torch.Tensor,
          lm_rows: torch.Tensor, log: Log, init: FusedHead | None = None, seconds: float | None = None
          ) -> tuple[FusedHead, dict]:
    """Train (or resume) the head on the shards `folders`, from `init`'s weights where given (else a fresh head);
    returns it and what the card records (steps, data, held-out check, seconds). The checkpoint lives in
    work/train/ (a checkpoint of this plan wins over `init`: a rerun resumes). With `seconds`, the steps are fitted
    to that budget once FIT_AT steps are timed (fitted_steps). On a GPU the shards are kept there (keep_on)."""
    corpus = Corpus(folders, plan)
    if corpus.taps != config.taps:
        raise ValueError(f"the shards hold taps {corpus.taps}, the head reads {config.taps}: make the data again")
    torch.manual_seed(plan.seed)
    device = lm_rows.device
    if device.type == "cuda":
        corpus.keep_on(device)
    head = FusedHead(config).to(device)
    if init is not None:
        head.load_state_dict(init.state_dict())
    opt = torch.optim.AdamW(head.parameters(), lr=plan.lr, weight_decay=0.01, betas=(0.9, 0.95))
    draw = torch.Generator().manual_seed(plan.seed + 1)
    step, spent, history = load_checkpoint(work, config, plan, head, opt, draw)
    log(f"train: {len(corpus.fit)} sequences ({corpus.answer_tokens} answer tokens), {len(corpus.held)} held out; "
        f"from step {step} of {plan.steps}")
    start = time.time() - spent
    budget_start, first = time.time(), step
    while step < plan.steps:
        if seconds is not None and step == first + FIT_AT:
            plan = fitted_steps(plan, FIT_AT, time.time() - budget_start, seconds - (time.time() - budget_start))
            log(f"train: {seconds:.0f} s budget: {plan.steps} steps")
        for group in opt.param_groups:
            group["lr"] = lr_at(step, plan)
        picks = torch.multinomial(corpus.weights, plan.batch, replacement=True, generator=draw).tolist()
        mix = MIX * min(1.0, step / (plan.steps / 2))
        batch = corpus.batch([corpus.fit[i] for i in picks], plan.window, device)
        loss, stats = losses(head, batch, embed, lm_rows, plan.levels, mix)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(head.parameters(), 1.0)
        opt.step()
        step += 1
        if step % 20 == 0:
            alphas = [round(s["alpha"], 3) for s in stats]
            log(f"step {step}/{plan.steps} loss {float(loss.detach()):.3f} alpha {alphas} {time.time() - start:.0f} s")
        if step % plan.every == 0 or step == plan.steps:
            check = held_out_check(head, corpus, plan, embed, lm_rows)
            history.append({"step": step, "held_out": check})
            log(f"step {step}: held-out {check}")
            save_checkpoint(work, config, plan, head, opt, draw, step, time.time() - start, history)
    card = {"steps": step, "sequences": len(corpus.fit), "answer_tokens": corpus.answer_tokens,
            "held_out_sequences": len(corpus.held), "held_out_check": history[-1]["held_out"] if history else None,
            "train_seconds": round(time.time() - start), "plan": asdict(plan)}
    return head.eval(), card


def checkpoint_path(work: Path) -> Path:
    return work / "train" / "checkpoint.pt"


def save_checkpoint(work: Path, config: FusedConfig, plan: TrainPlan, head, opt, draw, step: int, seconds: float,
                    history: list) -> None:
    path = checkpoint_path(work)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    torch.save({"config": asdict(config), "plan": asdict(plan), "head": head.state_dict(), "opt": opt.state_dict(),
                "draw": draw.get_state(), "torch": torch.get_rng_state(), "step": step, "seconds": seconds,
                "history": history}, tmp)
    tmp.replace(path)


def load_checkpoint(work: Path, config: FusedConfig, plan: TrainPlan, head, opt, draw) -> tuple[int, float, list]:
    """(step, seconds, history) of the checkpoint of this very config and plan, loaded into head/opt/draw; else
    (0, 0, []). Our own file: torch.load with weights_only (tensors and plain data, no code)."""
    path = checkpoint_path(work)
    if not path.is_file():
        return 0, 0.0, []
    saved = torch.load(path, weights_only=True)
    if saved["config"] != asdict(config) or saved["plan"] != asdict(plan):
        return 0, 0.0, []
    head.load_state_dict(saved["head"])
    opt.load_state_dict(saved["opt"])
    draw.set_state(saved["draw"])
    torch.set_rng_state(saved["torch"])
    return int(saved["step"]), float(saved["seconds"]), list(saved["history"])
