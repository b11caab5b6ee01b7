"""Calibrate a pair on this machine: the costs of a step's parts, the few-row product plan, the acceptance.

What is timed, with the threads in use (a few seconds once the pair is loaded; cached per machine and
pair, machine.py, as a small JSON; `force` redoes it):
- the lm_head's few-row product by every method of models/few_rows.PRODUCTS for 1..8 rows; the plan takes
  the fastest per row count (products.py);
- the target forward for 1..N rows (a chain fed on a cached context and committed, as a step does), with
  the plan and without it (the curve before and after);
- the draft, per level, and the rest of a step (warp, verify, commit), from real engine steps;
- the acceptance (acceptance.py) from those steps' own p and q rows: chains at T = 0, chains and trees of
  width 2 at T = 0.8 (a level of k > 1 candidates at T = 0 accepts no more than one).
The prompts are CALIBRATION_PROMPTS, none of the bench's, the head's training or validation prompts.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from decoding.models.few_rows import apply_plan
from decoding.models.target import score_tree
from decoding.run import engine
from decoding.run.config import Branching, DecodeConfig
from decoding.run.costs import StepCosts
from decoding.speed import acceptance, machine, products
from decoding.speed.chooser import AcceptanceTable
from decoding.verify.tree import DraftTree

CALIBRATION_VERSION = 1
ROWS = (1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 32)  # target forward sizes timed (a chain of 8 is 9 rows)
TEMPERATURES = (0.0, 0.8)
CALIBRATION_PROMPTS = (
    "List three things a bicycle needs to be safe at night.",
    "Write a short Python function that returns the largest of three numbers.",
)
PROMPTS_BY_KIND = {"toy": ("the cat", "a big dog")}  # pairs whose vocabulary cannot say the prompts above
Progress = Callable[[str], None]


def prompts_for(pair_kind: str) -> tuple[str, ...]:
    return PROMPTS_BY_KIND.get(pair_kind, CALIBRATION_PROMPTS)


@dataclass(frozen=True)
class Calibration:
    key: dict
    costs: StepCosts  # with the chosen product plan
    stock_costs: StepCosts  # the same target forwards without it (the curve before)
    plan: dict[int, str]  # rows -> few_rows.PRODUCTS key, for the lean target's head
    products: dict[int, dict[str, float]]  # rows -> method -> median ms of one lm_head product
    acceptance: dict[float, AcceptanceTable]  # temperature -> table
    seconds: float  # how long the calibration took (the pair already loaded)
    when: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_json(self) -> str:
        return json.dumps({
            "version": CALIBRATION_VERSION, "key": self.key, "when": self.when, "seconds": round(self.seconds, 2),
            "costs": self.costs.to_dict(), "stock_costs": self.stock_costs.to_dict(),
            "plan": {str(r): m for r, m in sorted(self.plan.items())},
            "products_ms": {str(r): {m: round(ms, 3) for m, ms in v.items()} for r, v in sorted(self.products.items())},
            "acceptance": {str(t): a.to_dict() for t, a in sorted(self.acceptance.items())},
            "notes": list(self.notes),
        }, indent=1)

    @staticmethod
    def from_json(text: str) -> Calibration:
        d = json.loads(text)
        if d.get("version") != CALIBRATION_VERSION:
            raise ValueError(f"calibration version {d.get('version')!r}, expected {CALIBRATION_VERSION}")
        return Calibration(
            key=dict(d["key"]), costs=StepCosts.from_dict(d["costs"]),
            stock_costs=StepCosts.from_dict(d["stock_costs"]),
            plan={int(r): str(m) for r, m in d["plan"].items()},
            products={int(r): {str(m): float(ms) for m, ms in v.items()} for r, v in d["products_ms"].items()},
            acceptance={float(t): AcceptanceTable.from_dict(a) for t, a in d["acceptance"].items()},
            seconds=float(d["seconds"]), when=str(d.get("when", "")), notes=tuple(d.get("notes", ())),
        )

    def table(self, temperature: float) -> AcceptanceTable:
        """The acceptance measured at the nearest calibrated temperature."""
        return self.acceptance[min(self.acceptance, key=lambda t: abs(t - temperature))]


def load_cached(key: dict, root: Path | None = None) -> Calibration | None:
    """The cached calibration for exactly this key; None when absent, unreadable, or made for another key."""
    path = machine.cache_file(key, root)
    try:
        cal = Calibration.from_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return cal if cal.key == key else None


def save(cal: Calibration, root: Path | None = None) -> Path:
    path = machine.cache_file(cal.key, root)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(cal.to_json(), encoding="utf-8")
    tmp.replace(path)  # never a half-written cache
    return path


def calibrated(pair, pair_kind: str, *, force: bool = False, root: Path | None = None,
               progress: Progress | None = None) -> Calibration:
    """This machine's calibration of `pair` (cached; `force` measures again), with its product plan applied."""
    key = machine.machine_key(pair_kind, str(pair.device))
    cal = None if force else load_cached(key, root)
    if cal is None:
        cal = measure(pair, key, progress or (lambda _: None))
        save(cal, root)
    lean = lean_target_of(pair)
    if lean is not None:
        apply_plan(lean, cal.plan)
    return cal


def lean_target_of(pair):
    """The pair's lean float32 target (what scores trees on CPU), or None."""
    from decoding.models.lean_target import LeanFloatLlama

    model = getattr(pair.target_session(), "model", None)
    return model if isinstance(model, LeanFloatLlama) else None


def measure(pair, key: dict, progress: Progress) -> Calibration:
    t0 = time.perf_counter()
    lean, notes = lean_target_of(pair), []
    plan, product_ms = {}, {}
    if lean is not None and lean.device.type == "cpu":
        progress("timing the lm_head's few-row products")
        product_ms = products.measure(lean, rows=tuple(range(1, 9)))
        plan = products.choose(product_ms)
    else:
        notes.append("no lean CPU target: the stock products only")
    prompts = prompts_for(key["pair"])
    prompt_ids = engine.encode(pair, DecodeConfig(), prompts[0])
    progress("timing target forwards of 1..32 rows, with and without the plan")
    heads = {}
    if lean is not None:
        apply_plan(lean, plan)
        heads = {"planned": lean.head}
        apply_plan(lean, {})
        heads["stock"] = lean.head
    curves = target_curves(pair, prompt_ids, heads)
    if lean is not None:
        lean.head = heads["planned"]  # the plan stays on
    stock = curves["stock"]
    planned = curves.get("planned", stock)
    progress("drafted steps: draft cost, step overhead and acceptance")
    draft, overhead, tables = steps_and_acceptance(pair, prompts)
    costs = StepCosts(planned, draft, overhead)
    return Calibration(key, costs, StepCosts(stock, draft, overhead), plan, product_ms, tables,
                       round(time.perf_counter() - t0, 2), time.strftime("%Y-%m-%d %H:%M:%S"), tuple(notes))


def target_curves(pair, prompt_ids: list[int], heads: dict[str, object], rows: tuple[int, ...] | None = None,
                  repeats: int = 3) -> dict[str, tuple[tuple[int, float], ...]]:
    """name -> (rows, median ms) of one target forward over a chain of `rows` nodes on a cached context, each
    followed by the commit a step makes (root kept), with each of `heads` (the lean target's head objects;
    {} for a pair without one) alternating call by call, so a busy machine slows them alike. One size at a
    time, after one untimed call each: a run repeats one tree size, and MKL's packed products keep only a few
    row buckets packed (packed_linear.py), so interleaving sizes would time the repacking no run pays."""
    rows = rows or ROWS
    lean = lean_target_of(pair)
    variants = heads or {"stock": None}
    target = pair.target_session()
    context = list(prompt_ids)
    target.start(context)
    curves: dict[str, list] = {name: [] for name in variants}
    for n in rows:
        times: dict[str, list[float]] = {name: [] for name in variants}
        for i in range(repeats + 1):
            for name, head in variants.items():
                if head is not None:
                    lean.head = head
                tree = DraftTree.root(context[-1])
                for j in range(n - 1):
                    tree = tree.add_draws(j, [prompt_ids[j % len(prompt_ids)]], merge=False)  # valid ids
                start = time.perf_counter()
                with torch.inference_mode():
                    score_tree(target, tree)  # [n, V]
                if i:
                    times[name].append(1000 * (time.perf_counter() - start))
                token = context[-2] if len(context) > 1 else context[-1]
                target.commit([0], token, tree)
                context.append(token)
        for name in variants:
            curves[name].append((n, statistics.median(times[name])))
    return {name: tuple(c) for name, c in curves.items()}


def _run_steps(pair, config: DecodeConfig, prompt: str) -> tuple[list, list[acceptance.Row]]:
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


def steps_and_acceptance(pair, prompts: tuple[str, ...], new_tokens: int = 24
                         ) -> tuple[tuple[tuple[int, float], ...], float, dict[float, AcceptanceTable]]:
    chain = DecodeConfig(verifier="sd", shape=Branching((1,) * 6), max_new_tokens=new_tokens, seed=0)
    per_level, overhead, tables = [], [], {}
    for temperature in TEMPERATURES:
        rows: list[acceptance.Row] = []
        for prompt in prompts:
            steps, got = _run_steps(pair, chain.with_(temperature=temperature), prompt)
            rows += got
            for wall, r in steps[1:]:  # the first step pays the prompt's prefill
                if r.draft_forwards:
                    per_level.append(r.draft_ms / r.draft_forwards)
                overhead.append(max(0.0, wall - r.draft_ms - r.target_ms))
        widths = (1,) if temperature == 0 else (1, 2)
        tables[temperature] = acceptance.table_from_rows(rows, widths)
    wide = DecodeConfig(verifier="rrs_wor", shape=Branching((4, 1)), max_new_tokens=8, temperature=0.8, seed=0)
    steps, _ = _run_steps(pair, wide, prompts[-1])
    one = statistics.median(per_level) if per_level else 0.0
    four = [r.draft_ms - one for _, r in steps[1:] if r.draft_forwards == 2]
    draft = ((1, one), (4, max(one, statistics.median(four)))) if four else ((1, one),)
    return draft, statistics.median(overhead) if overhead else 0.0, tables
