"""The draft head's training data, written by the target itself (no corpus is reachable): shards on disk.

Four sources, each cut into shards of a few thousand tokens:
- `chat`: the target's answers to assets/draft_head/train_prompts.json (templates over chat, code, summaries and
  reasoning), greedy and sampled (the temperatures cycle per shard);
- `magpie`: prompts the target writes itself from the chat template's user header alone (Magpie, Xu et al.
  2024: the template up to `<|im_start|>user\\n`, sampled until `<|im_end|>`), then its answers to them;
- `docs`: text already on the machine (documentation, licence and README files under the virtual environment
  and /usr/share/doc), cut into pieces and placed as the assistant's answer of a chat, teacher-forced only
  (no sampling: the cheapest tokens, one forward per sequence; on a busy 2-core VM about 10x cheaper a token
  than the sampled answers);
- `code`: pieces of the Python sources under the virtual environment (docstrings and code), placed and
  teacher-forced the same way (users ask for code).
Held-out prompts (assets/bench_prompts.json, the head's val_prompts.json, the calibration prompts) are never
answered: a Magpie prompt equal to one (case and spacing aside) is dropped.

Every sequence is then teacher-forced once: the features at TAPS (hidden states after those layers), the
final-normed feature f (the target's own p = softmax(lm_head(f)) is the soft label) and log sum exp of the
full-vocabulary logits (so p over the head's ids is exact, not renormalised). They are stored per shard as
numpy arrays (np.load without pickles: plain data, no code runs on load):
    ids [T] int32, starts [n + 1] int64 (sequence offsets), answer [n] int32 (index of each sequence's first
    answer token), taps [T, len(TAPS) + 1, hidden] float16 (the last is f), lse [T] float32.
A shard is written to a temporary folder and renamed, so an interrupted run resumes at the first missing shard
(resumable), and each shard's sampling is seeded by (seed, source, index): reruns give the same prompts and,
float rounding of the thread schedule aside, the same answers.

The model generates in bfloat16 on a CPU (--dtype): 2-3x the float32 speed on an AVX-512 EPYC; the head is
trained on those features, and judged on the float32 target's own p and q (head_eval.py).
"""

from __future__ import annotations

import functools
import json
import os
import random
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from decoding.models.head import weights as draft_head

TAPS = (3, 16)  # hidden states after these layers (transformers' hidden_states index), then f: EAGLE-3's low/mid
REPO = Path(__file__).resolve().parents[1]
TRAIN_PROMPTS = draft_head.HEAD_DIR / "train_prompts.json"
HELD_OUT_FILES = (REPO / "assets" / "bench_prompts.json", draft_head.HEAD_DIR / "val_prompts.json")
DOC_ROOTS = (REPO / ".venv" / "lib", Path("/usr/share/doc"))
DOC_ASKS = ("Show me the documentation.", "What does the text say?", "Write it out in full, please.",
            "Please write the section.", "Give me the full text.")
CODE_ASKS = ("Write the Python code.", "Show me the implementation.", "Write this module in Python.",
             "Please write the function.", "Give me the code.")
SOURCES = ("chat", "magpie", "docs", "code")
Log = Callable[[str], None]


@dataclass(frozen=True)
class Plan:
    """What to make: shards of each source (how many, prompts per shard), tokens per answer, temperatures."""

    chat_shards: int = 32
    magpie_shards: int = 16
    docs_shards: int = 40
    code_shards: int = 24
    batch: int = 48  # sequences per shard (answered together)
    new_tokens: int = 160
    temperatures: tuple[float, ...] = (0.0, 0.8)  # cycled per shard: greedy and the bench's sampled
    seed: int = 0
    dtype: str = "bfloat16"


def held_out_prompts() -> set[str]:
    """Every held-out prompt, normalised (lower case, single spaces): never trained on."""
    from decoding.speed.calibrate import CALIBRATION_PROMPTS

    found = set(CALIBRATION_PROMPTS)
    for path in HELD_OUT_FILES:
        found |= {p["prompt"] if isinstance(p, dict) else p for p in json.loads(path.read_text())["prompts"]}
    return {normal(p) for p in found}


def normal(text: str) -> str:
    return " ".join(text.lower().split())


def shard_names(plan: Plan) -> list[tuple[str, int]]:
    """(source, index) of every shard, interleaved in proportion (each source's shards spread evenly over the
    run), so that a run stopped early holds every source in the planned shares."""
    counts = {source: getattr(plan, f"{source}_shards") for source in SOURCES}
    names = [(source, i) for source, count in counts.items() for i in range(count)]
    return sorted(names, key=lambda n: ((n[1] + 0.5) / counts[n[0]], SOURCES.index(n[0])))


def make(work: Path, plan: Plan, model, tokenizer, log: Log, seconds: float | None = None) -> list[Path]:
    """Every shard of the plan under work/shards (made or already there); their folders. With `seconds`, no new
    shard is started once that many seconds have passed (shard_names interleaves the sources, so the shards
    made keep the planned shares); the shards already on disk are kept either way."""
    out = work / "shards"
    out.mkdir(parents=True, exist_ok=True)
    held = held_out_prompts()
    folders = []
    deadline = None if seconds is None else time.time() + seconds
    skipped = 0
    for source, index in shard_names(plan):
        folder = out / f"{source}-{index:03d}"
        if not (folder / "meta.json").is_file():
            if deadline is not None and time.time() > deadline:
                skipped += 1
                continue
            start = time.time()
            seqs, answer, about = sequences(source, index, plan, model, tokenizer, held)
            if not seqs:  # no text of that kind on this machine (docs, code), or every prompt held out
                log(f"data: {folder.name}: nothing to make here; skipped")
                continue
            write_shard(folder, seqs, answer, teacher_forced(model, seqs), about | {"seconds": time.time() - start})
            log(f"data: {folder.name}: {len(seqs)} sequences, {sum(map(len, seqs))} tokens, "
                f"{time.time() - start:.0f} s")
        folders.append(folder)
    if skipped:
        log(f"data: the {seconds:.0f} s budget was spent; {skipped} planned shards not made ({len(folders)} used)")
    return folders


def sequences(source: str, index: int, plan: Plan, model, tokenizer, held: set[str]
              ) -> tuple[list[list[int]], list[int], dict]:
    """One shard's token sequences (chat template + answer), each one's first answer index, and how they were
    made."""
    seed = plan.seed * 1_000_003 + (SOURCES.index(source) + 1) * 10_007 + index
    torch.manual_seed(seed)
    prompts = json.loads(TRAIN_PROMPTS.read_text())["prompts"]
    temperature = shard_temperature(source, index, plan, len(prompts))
    about = {"source": source, "index": index, "seed": seed}
    if source in ("docs", "code"):
        pieces = text_pieces(tokenizer, doc_files() if source == "docs" else code_files(), plan.batch, seed,
                             prose=source == "docs")
        asks = DOC_ASKS if source == "docs" else CODE_ASKS
        seqs = [chat_ids(tokenizer, asks[i % len(asks)]) + piece for i, piece in enumerate(pieces)]
        return seqs, [len(s) - len(p) for s, p in zip(seqs, pieces, strict=True)], about
    if source == "chat":
        chosen = [prompts[(index * plan.batch + i) % len(prompts)] for i in range(plan.batch)]
    else:
        chosen = magpie_prompts(model, tokenizer, plan.batch, held)
        about["prompts"] = chosen
    chosen = [p for p in chosen if normal(p) not in held]
    seqs, answer = answers(model, tokenizer, chosen, plan.new_tokens, temperature)
    return seqs, answer, about | {"temperature": temperature}


def shard_temperature(source: str, index: int, plan: Plan, prompts: int) -> float:
    """The temperature a shard samples at: the plan's, cycled per shard. A chat shard's prompts come round again
    once every prompt was answered (`prompts` of them); each later pass shifts the cycle (a prompt answered
    greedily is sampled next time), and from the pass after a prompt's greedy answer on, a greedy temperature is
    replaced by the plan's highest (greedy decoding gives the same answer again: a duplicate, not data)."""
    temps = plan.temperatures
    rounds = index * plan.batch // prompts if source == "chat" else 0
    temperature = temps[(index + rounds) % len(temps)]
    return max(temps) if temperature == 0 and rounds >= len(temps) else temperature


def chat_ids(tokenizer, prompt: str) -> list[int]:
    text = tokenizer.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False,
                                         add_generation_prompt=True)
    return tokenizer(text)["input_ids"]


def user_header(tokenizer) -> str:
    """The chat template up to where the user's text starts (the default system prompt included)."""
    text = tokenizer.apply_chat_template([{"role": "user", "content": "\x00"}], tokenize=False)
    return text[: text.index("\x00")]


def magpie_prompts(model, tokenizer, count: int, held: set[str]) -> list[str]:
    """`count` user prompts the target writes from the user header alone (sampled at T = 1), kept when they end
    within 64 tokens, have 4+ words and are no held-out prompt; more drawn until there are enough (3 tries)."""
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    enc = tokenizer([user_header(tokenizer)], return_tensors="pt").to(model.device)
    found: list[str] = []
    for _ in range(3):
        with torch.inference_mode():
            out = model.generate(**enc, max_new_tokens=64, do_sample=True, temperature=1.0, top_k=0, top_p=0.95,
                                 num_return_sequences=2 * count, eos_token_id=end, pad_token_id=end)
        for row in out[:, enc["input_ids"].shape[1]:].tolist():
            if end not in row:
                continue
            text = tokenizer.decode(row[: row.index(end)]).strip()
            if len(text.split()) >= 4 and normal(text) not in held and text not in found:
                found.append(text)
        if len(found) >= count:
            break
    return found[:count]


def answers(model, tokenizer, prompts: list[str], new_tokens: int, temperature: float
            ) -> tuple[list[list[int]], list[int]]:
    """(prompt + answer ids, cut after the first end token; index of the first answer token) per prompt, all
    sampled in one batch (T = 0: greedy)."""
    end_ids = {tokenizer.convert_tokens_to_ids("<|im_end|>"), tokenizer.eos_token_id}
    tokenizer.padding_side = "left"
    texts = [tokenizer.apply_chat_template([{"role": "user", "content": p}], tokenize=False,
                                           add_generation_prompt=True) for p in prompts]
    enc = tokenizer(texts, return_tensors="pt", padding=True).to(model.device)
    sampling = dict(do_sample=True, temperature=temperature, top_k=0, top_p=1.0) if temperature > 0 else \
        dict(do_sample=False)
    with torch.inference_mode():
        out = model.generate(**enc, max_new_tokens=new_tokens, pad_token_id=tokenizer.pad_token_id,
                             eos_token_id=sorted(end_ids), **sampling)
    width = enc["input_ids"].shape[1]
    seqs, answer = [], []
    for row, mask in zip(out.tolist(), enc["attention_mask"].cpu(), strict=True):
        pad = int((mask == 0).sum())
        ids = row[pad:]
        cut = next((i for i in range(width - pad, len(ids)) if ids[i] in end_ids), None)
        seqs.append(ids[: cut + 1] if cut is not None else ids)
        answer.append(width - pad)
    return seqs, answer


@functools.cache
def doc_files() -> list[Path]:
    """Documentation, README and licence files on this machine, in a fixed order."""
    found = []
    for root in DOC_ROOTS:
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*")):
            name = path.name.lower()
            prose = name.endswith((".md", ".rst", ".txt")) or name.startswith(("license", "licence", "copying",
                                                                                "readme", "copyright"))
            if prose and path.is_file() and 200 < path.stat().st_size < 400_000 and "test" not in path.parts:
                found.append(path)
    return found


@functools.cache
def code_files() -> list[Path]:
    """Python sources under the virtual environment (not tests), in a fixed order."""
    root = DOC_ROOTS[0]
    if not root.is_dir():
        return []
    return [p for p in sorted(root.rglob("*.py")) if "test" not in str(p.relative_to(root)).lower()
            and 2_000 < p.stat().st_size < 200_000]


def text_pieces(tokenizer, files: list[Path], count: int, seed: int, prose: bool = True, tokens: int = 224
                ) -> list[list[int]]:
    """`count` pieces of up to `tokens` tokens from files drawn by `seed` (+ the end token): prose starts anywhere
    (its first, cut word dropped) and must be mostly letters; code starts at a line that opens a def or class."""
    rng = random.Random(seed)
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    pieces: list[list[int]] = []
    for _ in range(40 * count):
        if len(pieces) >= count or not files:
            break
        text = re.sub(r"\n{3,}", "\n\n", files[rng.randrange(len(files))].read_text(errors="replace"))
        if len(text) < 400 or (prose and sum(c.isalpha() or c.isspace() for c in text) < 0.8 * len(text)):
            continue
        if prose:
            start = rng.randrange(max(1, len(text) - 1500))
            ids = tokenizer(text[start: start + 1500])["input_ids"][1: tokens]
        else:
            opens = [m.start() for m in re.finditer(r"^(def|class|    def) ", text, re.MULTILINE)]
            if not opens:
                continue
            start = opens[rng.randrange(len(opens))]
            ids = tokenizer(text[start: start + 1500])["input_ids"][: tokens]
        if len(ids) > 32:
            pieces.append(ids + [end])
    return pieces


def teacher_forced(model, seqs: list[list[int]], chunk: int | None = None) -> dict[str, np.ndarray]:
    """One forward per sequence (in padded groups of `chunk`: 8 on a CPU, 64 on a GPU): taps [T, len(TAPS) + 1,
    hidden] float16 and the full vocabulary's log sum exp [T] float32, concatenated over the sequences."""
    chunk = chunk or (64 if model.device.type == "cuda" else 8)
    taps, lse = [], []
    order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))  # similar lengths padded together
    done: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
    weight = model.lm_head.weight.detach().float()  # [V, hidden]
    for start in range(0, len(order), chunk):
        group = order[start: start + chunk]
        width = max(len(seqs[i]) for i in group)
        ids = torch.zeros(len(group), width, dtype=torch.long)
        mask = torch.zeros(len(group), width, dtype=torch.long)
        for row, i in enumerate(group):
            ids[row, : len(seqs[i])], mask[row, : len(seqs[i])] = torch.tensor(seqs[i]), 1
        with torch.inference_mode():
            out = model.model(input_ids=ids.to(model.device), attention_mask=mask.to(model.device),
                              output_hidden_states=True)
            stacked = torch.stack([out.hidden_states[t] for t in TAPS] + [out.last_hidden_state], dim=2)
            for row, i in enumerate(group):
                n = len(seqs[i])
                f = out.last_hidden_state[row, :n].float() @ weight.T.to(out.last_hidden_state.device)  # [n, V]
                done[i] = (stacked[row, :n].to(torch.float16).cpu(), torch.logsumexp(f, -1).cpu())
    for i in range(len(seqs)):
        taps.append(done[i][0])
        lse.append(done[i][1])
    return {"taps": torch.cat(taps).numpy(), "lse": torch.cat(lse).numpy().astype(np.float32)}


def write_shard(folder: Path, seqs: list[list[int]], answer: list[int], forced: dict[str, np.ndarray],
                about: dict) -> None:
    """The shard's arrays and meta.json, into a temporary folder renamed at the end (atomic)."""
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        np.save(tmp / "ids.npy", np.array([t for s in seqs for t in s], dtype=np.int32))
        np.save(tmp / "starts.npy", np.cumsum([0] + [len(s) for s in seqs]).astype(np.int64))
        np.save(tmp / "answer.npy", np.array(answer, dtype=np.int32))
        np.save(tmp / "taps.npy", forced["taps"])
        np.save(tmp / "lse.npy", forced["lse"])
        tokens = sum(len(s) - a for s, a in zip(seqs, answer, strict=True))
        (tmp / "meta.json").write_text(json.dumps(about | {"sequences": len(seqs), "answer_tokens": tokens,
                                                           "taps": list(TAPS)}, indent=1))
        if folder.exists():
            shutil.rmtree(folder)
        os.replace(tmp, folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@dataclass
class Shard:
    """One shard's arrays, memory-mapped (read-only)."""

    ids: np.ndarray
    starts: np.ndarray
    answer: np.ndarray
    taps: np.ndarray
    lse: np.ndarray
    meta: dict


def read_shard(folder: Path) -> Shard:
    load = lambda name: np.load(folder / f"{name}.npy", mmap_mode="r", allow_pickle=False)  # noqa: E731
    return Shard(load("ids"), load("starts"), load("answer"), load("taps"), load("lse"),
                 json.loads((folder / "meta.json").read_text()))


def iter_shards(work: Path) -> Iterator[Path]:
    yield from sorted(p for p in (work / "shards").glob("*-*") if (p / "meta.json").is_file())


def load_model(device: str, dtype: str, log: Log):
    """The embedded target and tokenizer for data generation (bfloat16 by default: the head needs features,
    not the exact p the verifiers use)."""
    from decoding.models.embedded import model as embedded

    model = embedded.load_target(device, log).to(getattr(torch, dtype))
    return model, embedded.load_tokenizer(log)


def main_data(work: Path, plan: Plan, device: str = "cpu") -> list[Path]:
    log = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    model, tokenizer = load_model(device, plan.dtype, log)
    return make(work, plan, model, tokenizer, log)
