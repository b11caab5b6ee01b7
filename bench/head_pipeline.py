"""`python -m bench train-head` (the fused head, the default kind): data, training, held-out check, card, ship.

    python -m bench train-head --evaluate DIR [--ship ...]   (the check alone, of a head trained elsewhere)
    python -m bench train-head [--work DIR] [--out DIR] [--chat-shards N] [--magpie-shards N] [--docs-shards N]
        [--code-shards N] [--batch N] [--new-tokens N] [--temperatures 0,0.8] [--steps N] [--train-batch N]
        [--levels L] [--lr LR] [--inner W] [--heads H] [--taps 3,16] [--eval-prompts FILE] [--eval-tokens N]
        [--ship auto|always|never] [--stop-after data|train] [--init DIR] [--device cpu|cuda] [--dtype bfloat16]
        [--data-seconds S] [--train-seconds S] [--seed S]

1. data (bench/head_data.py): shards the target writes itself under WORK/shards, resumable and seeded;
2. training (bench/head_train.py): the fused head, checkpointed under WORK/train, resumable;
3. held-out check (bench/head_eval.py): the shipped head and the new one decode the held-out prompts (the head's
   validation prompts, never trained on) in one run; exact acceptance per depth from the recorded p and q, and
   the expected tokens a step of chains and trees, at T = 0 and 0.8;
4. the new head and its card (head.json "about": the command, the data, the steps, the held-out table, the
   wall times; README.md: the same as text) go to WORK/candidate; they replace --out only where the new head
   beats the shipped one on the held-out check (--ship auto), or always / never.
On a GPU (--device cuda) every stage runs there, the shards kept in its memory while training; the card says
where. --data-seconds and --train-seconds fit the run to a time budget (a lent GPU's minutes): no new shard after
that many seconds (the sources keep their shares), and the steps fitted to the budget once 20 are timed.
Every stage prints to stderr as it goes.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch

from bench import head_data, head_eval, head_ids, head_train
from decoding.models.head import weights as draft_head
from decoding.models.head.fused import FusedConfig, FusedHead
from decoding.models.head.ranked_ids import IDS, ranked_ids, save_ranked_ids

CANDIDATE = "candidate"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run(args, argv: list[str]) -> int:
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(args.seed)
    walls: dict[str, float] = {}
    plan = head_data.Plan(chat_shards=args.chat_shards, magpie_shards=args.magpie_shards,
                          docs_shards=args.docs_shards, code_shards=args.code_shards, batch=args.batch,
                          new_tokens=args.new_tokens, temperatures=args.temperatures, seed=args.seed,
                          dtype=args.dtype)
    start = time.time()
    maker, tokenizer = head_data.load_model(args.device, args.dtype, log)
    layers = int(maker.config.num_hidden_layers)
    if max(args.taps) > layers:
        log(f"error: --taps name layers up to {layers} (this target has {layers})")
        return 2
    folders = head_data.make(work, plan, maker, tokenizer, log, args.data_seconds)
    del maker
    walls["data_s"] = round(time.time() - start)
    if args.stop_after == "data":
        return 0
    from decoding.models.embedded import model as embedded

    model = embedded.load_target(args.device, log)
    embed = model.model.embed_tokens.weight.detach()
    start = time.time()
    ranked, ranking = head_ids.ranked_from(folders, model.lm_head.weight)  # [V]: the commonest ids first
    walls["ids_s"] = round(time.time() - start)
    lm_rows = draft_head.draft_lm_rows(model.lm_head.weight, ranked[: args.head_size])  # [head_size, hidden]
    config = FusedConfig(hidden=int(model.config.hidden_size), taps=args.taps, heads=args.heads,
                         inner=args.inner, head_size=args.head_size)
    train_plan = head_train.TrainPlan(steps=args.steps, batch=args.train_batch, levels=args.levels, lr=args.lr,
                                      seed=args.seed)
    try:
        init = start_head(args.init, config)
    except ValueError as err:
        log(f"error: {err}")
        return 2
    start = time.time()
    head, trained = head_train.train(work, folders, config, train_plan, embed, lm_rows, log, init,
                                     args.train_seconds)
    if args.init is not None:
        trained["init"] = {"from": str(args.init), "made_by": draft_head.about(Path(args.init)).get("made_by")}
    walls["train_s"] = round(time.time() - start)
    candidate = work / CANDIDATE
    card = {"made_by": "python -m bench train-head " + " ".join(argv), "device": args.device,
            "data": data_card(folders), "ids": ranking | {"scored": args.head_size}, "train": trained,
            "wall": walls}
    draft_head.save_head(head, candidate, card)
    save_ranked_ids(candidate, ranked, args.head_size)
    if args.stop_after == "train":
        return 0
    return check_and_ship(args, model, head, card, candidate, ranked)


def evaluate(args) -> int:
    """--evaluate DIR: the held-out check of a head trained elsewhere (a lent GPU's run brought back), on this
    machine, against the shipped head: its card (DIR/head.json "about") gets the table and this machine's check
    wall time, DIR/README.md is written, and the head ships as --ship says. DIR may be the shipped head's own
    folder (its check measured again on this machine, against itself): the table is printed and the folder, its
    curated card among it, left as it is."""
    from decoding.models.embedded import model as embedded

    folder = Path(args.evaluate)
    head = draft_head.load_head(folder)
    if not isinstance(head, FusedHead):
        log(f"error: --evaluate: {folder} holds an MLP head; the check compares fused heads")
        return 2
    card = draft_head.about(folder)
    card.setdefault("wall", {})
    card.setdefault("data", {})
    model = embedded.load_target(args.device, log)
    try:
        ranked = ranked_ids(folder, int(model.lm_head.weight.shape[0]))
    except ValueError as err:
        log(f"error: --evaluate: {err}")
        return 2
    if folder.resolve() == draft_head.HEAD_DIR.resolve():
        log(f"--evaluate: {folder} is the shipped head's folder: its check is printed, the folder left as it is")
        print("\n".join(head_eval.table_lines(held_out_check(args, model, head.eval(), ranked))))
        return 0
    return check_and_ship(args, model, head.eval(), card, folder, ranked)


def rank(args) -> int:
    """--rank-ids DIR: the token ids ranked by the target's own answers in --work's shards (head_ids.py), the
    first head_size of DIR's head written to DIR/ids.safetensors; the head's weights and card left as they are
    (the card of a head it ships with says which ids it scores: --evaluate DIR next)."""
    from decoding.models.embedded import model as embedded

    folder = Path(args.rank_ids)
    folders = list(head_data.iter_shards(Path(args.work)))
    if not folders:
        log(f"error: --rank-ids: no data shards under {args.work}/shards (make them first: train-head --work "
            f"{args.work} --stop-after data)")
        return 2
    try:
        size = draft_head.load_head(folder).config.head_size
    except ValueError as err:
        log(f"error: --rank-ids: {err}")
        return 2
    model = embedded.load_target(args.device, log)
    start = time.time()
    ranked, ranking = head_ids.ranked_from(folders, model.lm_head.weight)
    save_ranked_ids(folder, ranked, size)
    log(f"ranked the ids by {ranking['answer_positions']} answer positions of {', '.join(ranking['sources'])} in "
        f"{time.time() - start:.0f} s: {folder / IDS} names the {size} the head scores")
    return 0


def held_out_check(args, model, head: FusedHead, ranked: torch.Tensor) -> dict:
    """The held-out check of the shipped head and `head` (scoring the first of its `ranked` ids [V]) in one run:
    name -> T -> results (head_eval.compare)."""
    pairs = eval_pairs(model, head, args.device, ranked, args.eval_ids)
    return head_eval.compare(pairs, eval_prompts(args.eval_prompts), args.eval_tokens)


def check_and_ship(args, model, head: FusedHead, card: dict, candidate: Path, ranked: torch.Tensor) -> int:
    """The held-out check (the shipped head against `head`, scoring the first of its `ranked` ids, one run), the
    card and README into `candidate`, and the head (with its ids.safetensors where it has one) shipped to --out
    as --ship says."""
    walls = card["wall"]
    start = time.time()
    prompts = eval_prompts(args.eval_prompts)
    results = held_out_check(args, model, head, ranked)
    walls["eval_s"] = round(time.time() - start)
    card["held_out_on"] = args.device
    better = head_eval.beats(results["new"], results["shipped"])
    card["held_out"] = {"prompts": str(args.eval_prompts), "count": len(prompts), "new_tokens": args.eval_tokens,
                        "acceptance": {name: {t: {k: r[k] for k in ("by_depth", "nodes", "expected")}
                                              for t, r in by_t.items()} for name, by_t in results.items()},
                        "beats_shipped": better}
    lines = head_eval.table_lines(results)
    draft_head.save_head(head, candidate, card)
    (candidate / "README.md").write_text(card_text(card, lines))
    print("\n".join(lines))
    ship = args.ship == "always" or (args.ship == "auto" and better)
    log(f"the new head {'beats' if better else 'does not beat'} the shipped one on the held-out check; "
        f"{'shipping it to ' + str(args.out) if ship else 'kept in ' + str(candidate)}")
    if ship:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        for name in (draft_head.WEIGHTS, draft_head.CONFIG, "README.md"):
            shutil.copyfile(candidate / name, out / name)
        (out / IDS).unlink(missing_ok=True)  # a head without a ranking scores the lowest ids
        if (candidate / IDS).exists():
            shutil.copyfile(candidate / IDS, out / IDS)
    return 0


def start_head(folder: str | None, config: FusedConfig) -> FusedHead | None:
    """The head saved in `folder` to train on from (None: a fresh head); a fused head of this very config, but
    for the ids it scores (`--head-size`: the same weights, more or fewer of the target's lm_head rows)."""
    if folder is None:
        return None
    head = draft_head.load_head(Path(folder))
    if not isinstance(head, FusedHead) or replace(head.config, head_size=config.head_size) != config:
        found = head.config if isinstance(head, FusedHead) else "an MLP head"
        raise ValueError(f"--init: {folder} holds {found}, not a fused head of this config ({config})")
    head.config = config
    return head


def eval_prompts(path: Path) -> list[str]:
    return [p["prompt"] if isinstance(p, dict) else p for p in json.loads(Path(path).read_text())["prompts"]]


def eval_pairs(model, head: FusedHead, device: str, ranked: torch.Tensor, ids: int = 0) -> dict[str, object]:
    """The shipped head's pair and the new head's, on the same loaded target (float32), each head scoring as many
    of its ranked ids (the new head's: `ranked` [V]; ranked_ids.py) as its pair scores on `device`
    (pair.scored_ids), or the first `ids` of them (--eval-ids: a GPU's all ids, checked on a CPU)."""
    from decoding.models.head.pair import HeadParts, head_pair, lean_head, scored_ids
    from decoding.speed.plan import load_planned

    shipped = load_planned("embedded-head", device=device, progress=log)
    weight = shipped.target_model.lm_head.weight  # [V, hidden]
    embed = shipped.target_model.model.embed_tokens.weight.detach()  # [V, hidden]
    scorer = shipped.target_session().model  # the shipped pair's own scoring forward (lean on a CPU)

    def pair_of(module: FusedHead, order: torch.Tensor, name: str):
        scored = order[: ids or scored_ids(device, module.config.head_size, weight.shape[0])]  # [H]
        parts = HeadParts(lean_head(module.to(weight.device), weight, scored), embed, name)
        return head_pair(shipped.target_model, shipped.codec, scorer, parts, device)

    shipped_order = ranked_ids(draft_head.HEAD_DIR, int(weight.shape[0]))
    old = pair_of(draft_head.load_head().eval(), shipped_order, "shipped fused head") if ids else shipped
    return {"shipped": old, "new": pair_of(head, ranked, "new fused head")}


def data_card(folders: list[Path]) -> dict:
    """Per source: shards, sequences, answer tokens, seconds spent making them."""
    out: dict[str, dict] = {}
    for folder in folders:
        meta = json.loads((folder / "meta.json").read_text())
        entry = out.setdefault(meta["source"], {"shards": 0, "sequences": 0, "answer_tokens": 0, "seconds": 0})
        entry["shards"] += 1
        entry["sequences"] += meta["sequences"]
        entry["answer_tokens"] += meta["answer_tokens"]
        entry["seconds"] += round(meta["seconds"])
    return out


def started_from(train: dict) -> str:
    """', from the head in DIR (made by `...`)' where training went on from a saved head (--init); else ''."""
    init = train.get("init")
    return f", from the head in {init['from']} (made by `{init['made_by']}`)" if init else ""


def card_text(card: dict, lines: list[str]) -> str:
    data = "\n".join(f"- {source}: {d['shards']} shards, {d['sequences']} sequences, {d['answer_tokens']} answer "
                     f"tokens, {d['seconds']} s" for source, d in card["data"].items())
    train = card["train"]
    return (f"# The fused draft head\n\nMade by `{card['made_by']}` on {card['device']}.\n\n"
            f"Data (bench/head_data.py):\n{data}\n\n"
            f"Training (bench/head_train.py): {train['steps']} steps over {train['sequences']} sequences "
            f"({train['answer_tokens']} answer tokens), {train['train_seconds']} s{started_from(train)}.\n\n"
            f"Wall times: {card['wall']}.\n\n"
            f"Held-out check (bench/head_eval.py, on {card.get('held_out_on', card['device'])}; "
            f"{card['held_out']['count']} prompts of "
            f"{card['held_out']['prompts']}, {card['held_out']['new_tokens']} tokens each; exact acceptance per depth "
            f"from the recorded p and q; E = expected tokens a step):\n\n" + "\n".join(lines) + "\n")
