"""`python -m bench train-head`: train the embedded-head pair's draft head; one command, the whole pipeline.

The default kind, `--kind fused`, is the fused head (decoding/models/head/fused.py): data the target writes itself,
training, the held-out check against the shipped head, the card, shipping only a better head
(bench/head_pipeline.py says how; `python -m bench train-head --help` lists the flags).

`--kind mlp` is how the MLP head (decoding/models/head/weights.py, shipped before the fused one) was trained,
reproducibly (seeded; its head.json's made_by has the exact commands: answer runs saved with --save-data
--answers-only, ~15 min per 60k tokens on one core, then one training run over the saved files):
1. answers: the target answers prompts of assets/draft_head/train_prompts.json (templates over chat, code,
   summary, reasoning; none is a bench prompt; the MLP head used the first 896 of its 1536), sampled at
   T = 1 / 0.7 (the first 384) and greedy / T = 0.8 (the bench's temperatures: the rest), alternating batches;
2. features: one teacher-forced target forward per answer gives every position's final-normed feature f_t;
3. training: for each answer position t, the head predicts f_{t+1} from (f_t, e(x_{t+1})), then f_{t+2} from
   its own prediction and e(x_{t+2}) (--levels unrolled levels, default 2, as drafting a chain uses it). Loss:
   cross-entropy against the target's law softmax(lm_head(f)) over the head's ids (what makes sum min(p, q)
   large) plus 0.1 x the L1 distance of the features (EAGLE's regression term). AdamW, one-cycle lr (--lr,
   1e-3), batch 256.
It prints the held-out acceptance sum_x min(p, q) at every level (a tenth of the ANSWERS, whole answers unseen
in training: a split by positions leaks neighbouring positions of the same answer and overstates it).

    python -m bench train-head --kind mlp [--out DIR] [--prompts N] [--samples S] [--new-tokens N] [--epochs E]
        [--levels L] [--inner W] [--lr LR] [--train-batch B] [--device cpu|cuda] [--data FILE ...]

--device cuda runs every stage on a GPU, where ten times the data takes minutes instead of the hours two CPU
cores need. The head is saved in float16 on the CPU either way.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from decoding.models.embedded import model as embedded
from decoding.models.head import weights as draft_head

PROMPTS = draft_head.HEAD_DIR / "train_prompts.json"
IM_START = 1  # SmolLM2's <|im_start|>: the answer starts 2 tokens after the last one


MLP_ONLY = ("prompts", "first_prompt", "epochs", "data", "save_data", "answers_only", "samples")
DEFAULTS = {  # per kind, for the flags both kinds read
    "fused": {"batch": 48, "new_tokens": 160, "temperatures": "0,0.8", "levels": 3, "train_batch": 12},
    "mlp": {"batch": 32, "new_tokens": 192, "temperatures": "1.0,0.7", "levels": 2, "train_batch": 256},
}


def build_parser() -> argparse.ArgumentParser:
    from decoding.models.cache_dir import cache_root

    p = argparse.ArgumentParser(prog="python -m bench train-head", description=__doc__.split("\n")[0])
    p.add_argument("--kind", choices=("fused", "mlp"), default="fused",
                   help="fused: the EAGLE-3-style head and the whole pipeline (default); mlp: the earlier MLP head")
    p.add_argument("--out", default=str(draft_head.HEAD_DIR), help="folder for head.safetensors and head.json")
    p.add_argument("--work", default=str(cache_root() / "head-train"),
                   help="fused: where the data shards, the checkpoint and the candidate head go (resumable)")
    p.add_argument("--chat-shards", type=int, default=32, help="fused: shards of answers to the training prompts")
    p.add_argument("--magpie-shards", type=int, default=16, help="fused: shards of answers to prompts it writes")
    p.add_argument("--docs-shards", type=int, default=40, help="fused: shards of documentation text")
    p.add_argument("--code-shards", type=int, default=24, help="fused: shards of Python source")
    p.add_argument("--steps", type=int, default=2400, help="fused: training steps")
    p.add_argument("--heads", type=int, default=4, help="fused: attention heads of the head's layer")
    p.add_argument("--taps", default="3,16", help="fused: the target layers fused with its final feature")
    p.add_argument("--dtype", default="bfloat16", help="fused: the target's dtype while it writes the data")
    p.add_argument("--eval-prompts", default=str(draft_head.HEAD_DIR / "val_prompts.json"),
                   help="fused: held-out prompts of the check (never trained on)")
    p.add_argument("--eval-tokens", type=int, default=64, help="fused: tokens decoded per held-out prompt")
    p.add_argument("--eval-ids", type=int, default=0,
                   help="fused: the held-out check with both heads scoring the first N ids (0: the ids the pair "
                        "scores on --device; 49152: every id, as on a GPU)")
    p.add_argument("--ship", choices=("auto", "always", "never"), default="auto",
                   help="fused: replace --out with the new head when it beats the shipped one (auto), or not")
    p.add_argument("--stop-after", choices=("data", "train"), default=None, help="fused: stop after this stage")
    p.add_argument("--data-seconds", type=float, default=None,
                   help="fused: start no new data shard after this many seconds (the shards made keep the shares)")
    p.add_argument("--train-seconds", type=float, default=None,
                   help="fused: fit the training steps to this many seconds (timed over the first 20 steps)")
    p.add_argument("--evaluate", default=None, metavar="DIR",
                   help="fused: only the held-out check of the head saved in DIR (trained elsewhere, e.g. on a GPU) "
                        "against the shipped one; its card and README are written into DIR; --ship as ever")
    p.add_argument("--rank-ids", default=None, metavar="DIR",
                   help="fused: only rank the token ids by the target's own answers in --work's shards and write "
                        "DIR/ids.safetensors, the ids the head saved in DIR scores (the commonest first)")
    p.add_argument("--init", default=None,
                   help="fused: start training from the head saved in this folder (same config; the card says so)")
    p.add_argument("--prompts", type=int, default=None, help="mlp: how many training prompts to answer (384)")
    p.add_argument("--first-prompt", type=int, default=None, help="mlp: index of the first prompt to answer")
    p.add_argument("--temperatures", default=None,
                   help="sampling temperature per batch (mlp) or shard (fused), cycled (0 = greedy)")
    p.add_argument("--batch", type=int, default=None, help="answers sampled together (a shard's sequences)")
    p.add_argument("--new-tokens", type=int, default=None, help="tokens per answer at most")
    p.add_argument("--epochs", type=float, default=None, help="mlp: passes over the answer positions (2)")
    p.add_argument("--head-size", type=int, default=draft_head.HeadConfig.head_size,
                   help="token ids the head is trained to score (with --init: the saved weights, scoring this many; "
                        "drafting scores every id on a GPU, at most 8192 on a CPU)")
    p.add_argument("--inner", type=int, default=draft_head.HeadConfig.inner, help="width of the head's MLP")
    p.add_argument("--levels", type=int, default=None, help="unrolled draft levels trained (the chain's depth)")
    p.add_argument("--lr", type=float, default=1e-3, help="peak learning rate")
    p.add_argument("--data", nargs="+", default=None, help="mlp: answers+features files saved earlier (skips 1-2)")
    p.add_argument("--save-data", default=None, help="mlp: save the answers+features here (safetensors)")
    p.add_argument("--answers-only", action="store_true", default=None,
                   help="mlp: stop after saving the answers+features")
    p.add_argument("--samples", type=int, default=None,
                   help="mlp: answers sampled per prompt (more data from as many prompts)")
    p.add_argument("--train-batch", type=int, default=None, help="examples (mlp) or sequences (fused) a step")
    p.add_argument("--device", default="cpu", help="cpu or cuda: where the answers, features and training run")
    p.add_argument("--seed", type=int, default=0)
    return p


def resolve(args) -> str | None:
    """Fill each kind's defaults; a one-line error for flags of the other kind or values out of range."""
    for name, value in DEFAULTS[args.kind].items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if args.kind == "fused":
        given = [f"--{n.replace('_', '-')}" for n in MLP_ONLY if getattr(args, n) is not None]
        if given:
            return f"{', '.join(given)} belong to --kind mlp (the fused pipeline makes its own data shards)"
        try:
            args.taps = tuple(int(t) for t in args.taps.split(","))
            args.temperatures = tuple(float(t) for t in args.temperatures.split(","))
        except ValueError:
            return "--taps and --temperatures take comma-separated numbers, e.g. --taps 3,16 --temperatures 0,0.8"
        if list(args.taps) != sorted(set(args.taps)) or min(args.taps) < 1:
            return "--taps are increasing layer numbers from 1, e.g. 3,16"
        if min(args.steps, args.batch, args.train_batch, args.levels, args.heads, args.eval_tokens) < 1:
            return "--steps, --batch, --train-batch, --levels, --heads and --eval-tokens must be at least 1"
        if args.eval_ids < 0:
            return "--eval-ids must be 0 (the ids the pair scores) or a number of ids"
        if min(x for x in (args.data_seconds, args.train_seconds, 1) if x is not None) <= 0:
            return "--data-seconds and --train-seconds must be above 0"
        if not Path(args.eval_prompts).is_file():
            return f"--eval-prompts: no such file {args.eval_prompts}"
        if args.evaluate and args.rank_ids:
            return "--evaluate and --rank-ids are two runs: rank the ids first, then check the head"
        for flag, folder in (("--evaluate", args.evaluate), ("--init", args.init), ("--rank-ids", args.rank_ids)):
            if folder is not None and not (Path(folder) / draft_head.CONFIG).is_file():
                return f"{flag}: no saved head in {folder} (it needs {draft_head.CONFIG} and {draft_head.WEIGHTS})"
        return None
    for name, value in {"prompts": 384, "first_prompt": 0, "epochs": 2.0, "samples": 1,
                        "answers_only": False}.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    return None


def answers(model, tokenizer, prompts: list[str], batch: int, new_tokens: int,
            temperatures: list[float]) -> list[list[int]]:
    """Token ids (prompt + sampled answer, cut after EOS) of the target's own answers."""
    tokenizer.padding_side = "left"
    seqs: list[list[int]] = []
    for start in range(0, len(prompts), batch):
        texts = [tokenizer.apply_chat_template([{"role": "user", "content": p}], tokenize=False,
                                               add_generation_prompt=True) for p in prompts[start:start + batch]]
        enc = tokenizer(texts, return_tensors="pt", padding=True).to(model.device)
        temperature = temperatures[(start // batch) % len(temperatures)]
        sampling = dict(do_sample=True, temperature=temperature, top_k=0, top_p=1.0) if temperature > 0 else \
            dict(do_sample=False)
        with torch.no_grad():
            out = model.generate(**enc, max_new_tokens=new_tokens, pad_token_id=tokenizer.pad_token_id, **sampling)
        width = enc["input_ids"].shape[1]
        for row, mask in zip(out.tolist(), enc["attention_mask"].cpu(), strict=True):
            ids = row[int((mask == 0).sum()):]
            prompt_len = width - int((mask == 0).sum())
            if tokenizer.eos_token_id in ids[prompt_len:]:
                ids = ids[: ids.index(tokenizer.eos_token_id, prompt_len) + 1]
            seqs.append(ids)
        print(f"answers: {len(seqs)}/{len(prompts)}, {sum(map(len, seqs))} tokens", file=sys.stderr, flush=True)
    return seqs


def features(model, seqs: list[list[int]]) -> list[torch.Tensor]:
    """Each sequence's final-normed features [L, hidden] (float16, on the CPU), one teacher-forced forward each."""
    with torch.no_grad():
        return [model.model(torch.tensor([s], device=model.device)).last_hidden_state[0].to(torch.float16).cpu()
                for s in seqs]


def save_data(data: dict, path: str) -> None:
    """Answers + features as safetensors (plain tensors, no code runs on load): ids and features concatenated,
    with the answers' lengths."""
    from safetensors.torch import save_file

    save_file({"ids": torch.tensor([t for s in data["seqs"] for t in s]),
               "lengths": torch.tensor([len(s) for s in data["seqs"]]),
               "feats": torch.cat(data["feats"]).contiguous()}, path)


def load_data(path: str) -> dict:
    from safetensors.torch import load_file

    flat = load_file(path)
    lengths = flat["lengths"].tolist()
    return {"seqs": [s.tolist() for s in flat["ids"].split(lengths)], "feats": list(flat["feats"].split(lengths))}


def examples(seqs: list[list[int]], feats: list[torch.Tensor], levels: int = 2) -> dict[str, torch.Tensor]:
    """Training examples at every answer position t, for `levels` unrolled levels: level k (1..levels) feeds
    x_{t+k} and is judged against f_{t+k}. Stored flat (one copy of the features, however many levels):
    "ids" [T] and "feats" [T, hidden] are every answer concatenated, "pos" [n] each example's t in them,
    "answer" [n] which answer it comes from (held-out answers are whole answers). Read with `at`."""
    pos, answer, offset = [], [], 0
    for number, seq in enumerate(seqs):
        starts = [i for i, t in enumerate(seq) if t == IM_START]
        first = (starts[-1] + 1) if starts else 0  # the position that predicts the answer's first token
        t = torch.arange(first, len(seq) - 1 - levels)
        pos.append(offset + t)
        answer.append(torch.full_like(t, number))
        offset += len(seq)
    return {"ids": torch.tensor([t for s in seqs for t in s]), "feats": torch.cat(feats), "pos": torch.cat(pos),
            "answer": torch.cat(answer)}


def at(ex: dict[str, torch.Tensor], idx: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Examples idx at offset k: (token x_{t+k} [B], feature f_{t+k} [B, hidden] as float32)."""
    where = ex["pos"][idx] + k
    return ex["ids"][where], ex["feats"][where].float()


class Objective:
    """Loss and acceptance of the head on a batch of examples (the target's law over the head's ids), unrolled
    `levels` deep: level k predicts f_{t+k} from the head's own level k-1 prediction, as drafting a chain does."""

    def __init__(self, head: draft_head.DraftHead, embed: torch.Tensor, lm_rows: torch.Tensor,
                 levels: int = 2) -> None:
        self.head, self.embed, self.lm_rows, self.levels = head, embed, lm_rows, levels  # [V, hidden], [H, hidden]

    def __call__(self, ex: dict[str, torch.Tensor], idx: torch.Tensor, noise: float = 0.0):
        _, pred = at(ex, idx, 0)  # [B, hidden]: f_t
        if noise:
            pred = pred + noise * torch.randn_like(pred)
        ce = reg = 0.0
        alphas = []
        for k in range(1, self.levels + 1):
            x, gold = at(ex, idx, k)
            pred = self.head(pred, self.embed[x])  # [B, hidden]: the head's f_{t+k}, from its own f_{t+k-1}
            log_q = torch.log_softmax(pred @ self.lm_rows.T, -1)  # [B, H]
            p = torch.softmax(gold @ self.lm_rows.T, -1)  # [B, H]
            ce = ce - (p * log_q).sum(-1).mean()
            reg = reg + (pred - gold).abs().mean()
            alphas.append(float(torch.minimum(p, log_q.detach().exp()).sum(-1).mean()))
        return ce + 0.1 * reg, alphas


def train(ex: dict[str, torch.Tensor], objective: Objective, epochs: float, seed: int, lr: float = 1e-3,
          batch: int = 256) -> dict:
    """Train the head on the examples (moved to the objective's device); a tenth of the answers held out."""
    device = objective.lm_rows.device
    ex = {key: value.to(device) for key, value in ex.items()}
    n, answers_seen = len(ex["pos"]), int(ex["answer"].max()) + 1
    order = torch.randperm(answers_seen, generator=torch.Generator().manual_seed(seed))
    held_answers = order[: max(answers_seen // 10, 1)].to(device)
    is_held = torch.isin(ex["answer"], held_answers)  # a tenth of the ANSWERS, unseen in training
    held, fit = is_held.nonzero()[:, 0], (~is_held).nonzero()[:, 0]
    steps = max(int(epochs * len(fit) / batch), 1)
    opt = torch.optim.AdamW(objective.head.parameters(), lr=lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, lr, total_steps=steps, pct_start=0.05)
    t0, draw = time.time(), torch.Generator().manual_seed(seed + 1)
    for step in range(steps):
        loss, _ = objective(ex, fit[torch.randint(len(fit), (batch,), generator=draw).to(device)], noise=0.05)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if step % 200 == 0:
            print(f"step {step + 1}/{steps} loss {float(loss.detach()):.3f} held-out alpha "
                  f"{held_out(objective, ex, held)} {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
    alpha = held_out(objective, ex, held)  # once, after the last step
    print(f"done: {steps} steps, held-out alpha {alpha}, {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
    return {"positions": n, "held_out": len(held), "steps": steps, "held_out_alpha": alpha}


def held_out(objective: Objective, ex: dict[str, torch.Tensor], held: torch.Tensor) -> list[float]:
    with torch.no_grad():
        parts = [objective(ex, held[i:i + 512])[1] for i in range(0, len(held), 512)]
    return [round(sum(a[k] for a in parts) / len(parts), 4) for k in range(objective.levels)]


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    error = resolve(args)
    if error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.kind == "fused":
        from bench import head_pipeline

        if args.rank_ids:
            return head_pipeline.rank(args)
        return head_pipeline.evaluate(args) if args.evaluate else head_pipeline.run(args, argv)
    return main_mlp(args, argv)


def main_mlp(args, argv: list[str]) -> int:
    """The MLP head's pipeline (the module docstring)."""
    torch.manual_seed(args.seed)
    model = embedded.load_target(args.device, lambda m: print(m, file=sys.stderr))
    if args.data:
        parts = [load_data(path) for path in args.data]
        data = {key: [item for part in parts for item in part[key]] for key in ("seqs", "feats")}
    else:
        chosen = json.loads(PROMPTS.read_text())["prompts"][args.first_prompt: args.first_prompt + args.prompts]
        prompts = [prompt for prompt in chosen for _ in range(args.samples)]
        temperatures = [float(t) for t in args.temperatures.split(",")]
        seqs = answers(model, embedded.load_tokenizer(lambda m: None), prompts, args.batch, args.new_tokens,
                       temperatures)
        data = {"seqs": seqs, "feats": features(model, seqs)}
        if args.save_data:
            save_data(data, args.save_data)
        if args.answers_only:
            return 0
    config = draft_head.HeadConfig(hidden=int(model.config.hidden_size), inner=args.inner, head_size=args.head_size)
    head = draft_head.DraftHead(config).to(model.device)
    objective = Objective(head, model.model.embed_tokens.weight.detach(),
                          draft_head.draft_lm_rows(model.lm_head.weight, args.head_size), args.levels)
    stats = train(examples(data["seqs"], data["feats"], args.levels), objective, args.epochs, args.seed, args.lr,
                  args.train_batch)
    about = {"made_by": "python -m bench train-head " + " ".join(argv), **stats,
             "answers": len(data["seqs"]), "answer_tokens": sum(map(len, data["seqs"]))}
    draft_head.save_head(head.eval(), Path(args.out), about)
    print(json.dumps(about))
    return 0
