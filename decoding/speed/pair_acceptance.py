"""The acceptance the chooser starts from: a property of the pair, kept apart from the machine's costs.

The exact acceptance of chain runs' own p and q (acceptance.py) depends on the two models, the prompts, the
token budget and the seeds, not on the CPU, its threads or the product plan (float rounding aside). So it is
measured once per pair and read back for every machine key:
- built-in pairs: shipped with specscope in assets/speed/acceptance.json, measured with
  `python -m bench calibrate --pair KIND --ship-acceptance`; a first calibration then times only the machine
  (the acceptance runs had been about half of a calibration of the embedded-head pair: docs/speed.md,
  "Calibration and the chooser (issue 26)");
- any pair: in the user's cache (<specscope cache>/speed/acceptance-*.json) once measured.
An entry is used only while its key matches: the pair's models (their names, where the embedded model came
from, the draft head's weights digest), the prompts, the tokens, the depth and ACCEPTANCE_VERSION. Shipping
also lets the acceptance rest on more text than a calibration could afford to run on every machine.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import replace
from pathlib import Path

from decoding.models.embedded import model as embedded
from decoding.run import engine
from decoding.run.config import Branching, DecodeConfig
from decoding.run.seen import misses
from decoding.speed import acceptance, chooser, machine
from decoding.speed.chooser import AcceptanceTable

ACCEPTANCE_VERSION = 4  # 2: widths 1-4; T = 0: the draft's top-k (pointmass chains); 3: a level with no guess: 0;
# 4: each chain step's accepted count and path confidences (chooser.dynamic: chains with a minimum confidence)
NEW_TOKENS, DEPTH = 32, 4  # chains of 4 over 32 tokens per prompt: an answer's opening is easier than its body
TEMPERATURES = (0.0, 0.8)
SHIPPED = Path(__file__).resolve().parents[2] / "assets" / "speed" / "acceptance.json"
EMBEDDED_KINDS = ("embedded", *machine.HEAD_KINDS, "lookup")
# the shipped measurement's prompts beyond the calibration's: a built-in pair's acceptance is measured once, by a
# developer, so it rests on three times the text (about 130 first-level nodes on the calibration's four prompts
# alone left the chooser's top shapes within a standard error of each other: docs/speed.md, "The head trained on
# again"); in none of the bench's, the head's training or validation prompts, nor the calibration's
SHIPPED_EXTRA_PROMPTS = (
    "Describe how a lighthouse warns ships at night.",
    "Write a Python function that sums the diagonal of a square matrix.",
    "What should I know before adopting a rabbit?",
    "Explain how a compass finds north.",
    "Write a C function that returns the largest element of an array.",
    "Give some tips for learning to juggle.",
    "How does a kite stay up in the air?",
    "Write a shell one-liner that counts the lines in every .txt file in a folder.",
)


def acceptance_prompts(pair_kind: str, prompts: tuple[str, ...]) -> tuple[str, ...]:
    """The prompts a pair's acceptance is measured on: the calibration's, and for a built-in pair (shipped) the
    SHIPPED_EXTRA_PROMPTS too. A built-in pair whose shipped entry does not match (another embedded model file,
    a retrained head) measures the same longer set once on the user's machine, then caches it."""
    return prompts + SHIPPED_EXTRA_PROMPTS if pair_kind in EMBEDDED_KINDS else prompts


def run_steps(pair, config: DecodeConfig, prompt: str) -> tuple[list, list[acceptance.Row]]:
    """(per step: (wall ms, record), kept p/q rows with depths) of a short lazy-theory run."""
    run = engine.start(pair, config, prompt, lazy_theory=True)
    steps, rows = [], []
    while True:
        start = time.perf_counter()
        record = run.step()
        if record is None:
            break
        steps.append((1000 * (time.perf_counter() - start), record))
        rows += acceptance.rows_of_record(record, run.kept_rows(record.index) or [])
    return steps, rows


WIDTHS = (1, 2, 3, 4)  # a CPU's verify of 4-6 rows can cost what 2 or 3 cost


def chain(temperature: float, new_tokens: int = NEW_TOKENS, depth: int = DEPTH) -> DecodeConfig:
    """sd's chain; at T = 0 pointmass's (the same tokens: its one candidate is the draft's argmax), whose q rows
    are the draft's untempered law, so the rows also give the top-k rates of T = 0 trees."""
    return DecodeConfig(verifier="pointmass" if temperature == 0 else "sd", shape=Branching((1,) * depth),
                        temperature=temperature, max_new_tokens=new_tokens, seed=0)


def measure(pair, prompts: tuple[str, ...]) -> tuple[dict[float, AcceptanceTable], list[list]]:
    """(temperature -> table, each run's timed steps) from chains of DEPTH over NEW_TOKENS per prompt at each
    of TEMPERATURES (at T = 0 the top-k rates of widths 1-4, above it rrs_wor's, on a sample of nodes)."""
    tables, runs = {}, []
    for temperature in TEMPERATURES:
        rows: list[acceptance.Row] = []
        missed: list[tuple[int, float]] = []  # levels a step reached with no guess (prompt lookup): acceptance 0
        steps: list[chooser.ChainStep] = []
        for prompt in prompts:
            timed, got = run_steps(pair, chain(temperature), prompt)
            runs.append(timed)
            rows += got
            missed += misses([record for _, record in timed], DEPTH)
            steps += [chain_step(record) for _, record in timed]
        table = acceptance.table_from_rows(rows, WIDTHS, missed, greedy=temperature == 0)
        tables[temperature] = replace(table, chain=tuple(steps))
    return tables, runs


def chain_step(record) -> chooser.ChainStep:
    """A chain step's (drafted tokens accepted, each drafted node's path confidence, the root's child first): the
    product of q(token) down the chain, q as drafted (at T = 0 pointmass's untempered law: run/confidence.py)."""
    sure, confidence, node = [], 1.0, record.nodes[0] if record.nodes else None
    while node is not None and node.draws:
        node = record.nodes[node.draws[0]]
        confidence *= node.q_token
        sure.append(round(confidence, 4))  # as the JSON keeps it (chooser.AcceptanceTable.to_dict)
    return len(record.accepted_path) - 1, tuple(sure)


def key_and_prompts(pair, pair_kind: str, calibration_prompts: tuple[str, ...]) -> tuple[dict, tuple[str, ...]]:
    """The pair's acceptance key and the prompts it is measured on (acceptance_prompts), from the calibration's
    prompts: what the calibration looks up, measures and caches, and what `bench calibrate --ship-acceptance`
    ships under, built in this one place."""
    measured_on = acceptance_prompts(pair_kind, calibration_prompts)
    return pair_key(pair, pair_kind, measured_on), measured_on


def pair_key(pair, pair_kind: str, prompts: tuple[str, ...]) -> dict:
    """What the acceptance depends on: the models, the prompts, the tokens, the depth, the version."""
    key = {"version": ACCEPTANCE_VERSION, "pair": pair_kind, "target": pair.target_name, "draft": pair.draft_name,
           "draft_dtype": pair.draft_dtype or pair.dtype, "prompts": list(prompts), "new_tokens": NEW_TOKENS,
           "depth": DEPTH, "temperatures": list(TEMPERATURES)}
    if pair_kind in EMBEDDED_KINDS:
        key["source"] = embedded.source_label()
    if pair_kind in machine.HEAD_KINDS:
        key["head"] = machine.head_digest()
    return key


def tables_to_dict(tables: dict[float, AcceptanceTable]) -> dict:
    return {str(t): table.to_dict() for t, table in sorted(tables.items())}


def tables_from_dict(d: dict) -> dict[float, AcceptanceTable]:
    return {float(t): AcceptanceTable.from_dict(v) for t, v in d.items()}


def shipped(key: dict, path: Path = SHIPPED) -> dict[float, AcceptanceTable] | None:
    """The shipped acceptance for exactly this key, or None."""
    try:
        entry = json.loads(path.read_text(encoding="utf-8"))["pairs"][key["pair"]]
        return tables_from_dict(entry["acceptance"]) if entry["key"] == key else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def ship(key: dict, tables: dict[float, AcceptanceTable], path: Path = SHIPPED) -> Path:
    """Write this pair's entry into the shipped file (the others kept)."""
    try:
        whole = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        whole = {}
    whole.setdefault("pairs", {})[key["pair"]] = {"key": key, "acceptance": tables_to_dict(tables),
                                                  "when": time.strftime("%Y-%m-%d %H:%M:%S")}
    whole["about"] = ("the exact acceptance of each built-in pair on the calibration prompts and SHIPPED_EXTRA_PROMPTS "
                      "(machine-independent): "
                      "decoding/speed/pair_acceptance.py; remeasure with python -m bench calibrate --pair KIND "
                      "--ship-acceptance")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(readable_json(whole, sort_keys=True) + "\n", encoding="utf-8")
    return path


def readable_json(value, sort_keys: bool = False) -> str:
    """JSON indented by one, each list of plain numbers on one line (a chain step, a row of rates)."""
    text = json.dumps(value, indent=1, sort_keys=sort_keys)
    return NUMBERS.sub(lambda m: "[" + " ".join(m.group(1).split()) + "]", text)  # "1,\n 2" -> "1, 2"


NUMBERS = re.compile(r"\[\s*((?:-?[0-9.e+-]+,?\s*)+)\]")  # a list holding numbers only


def cache_path(key: dict, root: Path | None = None) -> Path:
    return machine.keyed_file(key, f"acceptance-{key['pair']}", root)


def cached(key: dict, root: Path | None = None) -> dict[float, AcceptanceTable] | None:
    try:
        d = json.loads(cache_path(key, root).read_text(encoding="utf-8"))
        return tables_from_dict(d["acceptance"]) if d["key"] == key else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def save(key: dict, tables: dict[float, AcceptanceTable], root: Path | None = None) -> Path:
    text = readable_json({"key": key, "acceptance": tables_to_dict(tables)})
    return machine.write_atomic(cache_path(key, root), text)


def known(key: dict, root: Path | None = None) -> tuple[dict[float, AcceptanceTable] | None, str]:
    """(tables, where from) without measuring: the shipped entry, else the user's cache; (None, "") if neither."""
    tables = shipped(key)
    if tables is not None:
        return tables, "shipped with specscope"
    tables = cached(key, root)
    return (tables, "measured earlier on this pair (cached)") if tables is not None else (None, "")
