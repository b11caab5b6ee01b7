"""Calibrate a pair on this machine: the costs of a step's parts, the few-row product plan, the acceptance.

What is timed, with the threads in use (a few seconds once the pair is loaded; cached per machine and
pair, machine.py, as a small JSON; `force` redoes it):
- the target forward for PLAN_ROWS rows with every product method of models/few_rows.PRODUCTS this torch
  build has, on every product of the lean target; the plan takes the fastest per row count (products.py);
- the target forward for 1..32 rows (a chain fed on a cached context and committed, as a step does) with
  the plan alone on, every size timed again (the curve after; 1 row with more repeats; the curve before is
  the stock method's at PLAN_ROWS); then each small size that a larger one nearly matches timed run as that
  one, zero rows added, against itself unpadded, the padding kept where it is faster (padded_curve);
- the draft, per level of 1, 2 and 4 parents and a step's first level, and the rest of a step (warp, verify,
  commit) as a line in the tree's rows, from real engine steps (step_costs.py);
- on an accelerator, 1.5 s of untimed forwards first (warm_up).
The acceptance is the pair's, not the machine's (pair_acceptance.py): shipped for the built-in pairs or cached
once measured (chains over every prompt at T = 0 and 0.8, from the runs' own p and q: acceptance.py), so a
calibration mostly times the machine. The prompts are CALIBRATION_PROMPTS: neither they nor their topics are
in the bench's, the head's training or validation prompts (a topic the head was trained on would make the
acceptance look better than a user's).
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from decoding.models.lean.few_rows import (
    apply_plan,
    available_products,
    pad_of,
    plan_of,
    prepare_copies,
    release_copies,
    row_limits,
)
from decoding.models.target import score_tree
from decoding.run import engine
from decoding.run.config import DecodeConfig
from decoding.run.costs import StepCosts
from decoding.speed import machine, others, pair_acceptance, products
from decoding.speed.chooser import AcceptanceTable
from decoding.speed.step_costs import steps_and_acceptance
from decoding.verify.tree import DraftTree

CALIBRATION_VERSION = 8  # 2: the plan from whole forwards; 3: the rest per row; 4: T = 0 top-k acceptance;
# 5: padding; 6: the native product; 7: numpy's BLAS on torch's threads (models/lean/blas_threads.py)
# 8: the AVX-512 native product (native512)
ROWS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32)  # target forward sizes timed (a chain of 8 is 9 rows)
PLAN_ROWS = (1, 2, 4, 8)  # sizes every product method is timed at (a plan's choice at 8 holds above it)
FLAT_ROWS, STEEP = 16, 1.25  # sizes above FLAT_ROWS are timed only where FLAT_ROWS rows cost <= STEEP x one
ONE_ROW_EXTRA = 4  # more repeats of the one-row forward in the curve (cheap, and every speed-up's base)
DROP = 2.0  # a method this many times slower than the fastest at a size is timed no further
WARM_S = 1.5  # an accelerator's untimed warm-up before any timing (warm_up)
TEMPERATURES = pair_acceptance.TEMPERATURES
CALIBRATION_PROMPTS = (
    "Explain how to fold a paper crane, step by step.",
    "Write a Python function that returns the initials of a full name.",
    "How does a thermos keep drinks hot or cold?",
    "Write a Bash script that renames every .jpeg file in a folder to .jpg.",
)
PROMPTS_BY_KIND = {"toy": ("the cat", "a big dog")}  # pairs whose vocabulary cannot say the prompts above
Progress = Callable[[str], None]


def prompts_for(pair_kind: str) -> tuple[str, ...]:
    return PROMPTS_BY_KIND.get(pair_kind, CALIBRATION_PROMPTS)


@dataclass(frozen=True)
class PadTrial:
    """A timed size run as `run_as` rows against itself unpadded, alternately: the medians, in ms."""

    run_as: int
    unpadded_ms: float
    padded_ms: float
    kept: bool


@dataclass(frozen=True)
class Calibration:
    key: dict
    costs: StepCosts  # with the chosen product plan
    stock_costs: StepCosts  # the same target forwards without it (the curve before)
    plan: dict[int, str]  # rows -> few_rows.PRODUCTS key, for every product of the lean target
    products: dict[int, dict[str, float]]  # rows -> method -> median ms of one target forward (PLAN_ROWS)
    acceptance: dict[float, AcceptanceTable]  # temperature -> table
    seconds: float  # how long the calibration took (the pair already loaded)
    when: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)
    pad: dict[int, int] = field(default_factory=dict)  # rows -> rows run as (zero rows added), with the plan
    pad_trials: dict[int, PadTrial] = field(default_factory=dict)  # timed size -> its padding's trial
    others_cores: float | None = None  # cores other processes kept busy while it timed (None: unknown, a GPU)
    shared: bool = False  # those cores and its threads needed more than the machine has: not cached (others.py)

    def shared_note(self) -> str:
        """The note that other processes took the cores while it timed (then it is not cached), or ""."""
        return next((n for n in self.notes if n.startswith(others.SAID)), "") if self.shared else ""

    def products_words(self) -> str:
        """What computes the target's products, in words: the plan and its padding."""
        return products.describe(self.plan, pad=self.pad)

    def to_json(self) -> str:
        return json.dumps({
            "version": CALIBRATION_VERSION, "key": self.key, "when": self.when, "seconds": round(self.seconds, 2),
            "costs": self.costs.to_dict(), "stock_costs": self.stock_costs.to_dict(),
            "plan": {str(r): m for r, m in sorted(self.plan.items())},
            "pad": {str(r): b for r, b in sorted(self.pad.items())},
            "pad_trials": {str(r): {"run_as": t.run_as, "unpadded_ms": round(t.unpadded_ms, 3),
                                    "padded_ms": round(t.padded_ms, 3), "kept": t.kept}
                           for r, t in sorted(self.pad_trials.items())},
            "forward_ms_by_method": {str(r): {m: round(ms, 3) for m, ms in v.items()}
                                     for r, v in sorted(self.products.items())},
            "acceptance": {str(t): a.to_dict() for t, a in sorted(self.acceptance.items())},
            "notes": list(self.notes),
            "others_cores": None if self.others_cores is None else round(self.others_cores, 2),
            "shared": self.shared,
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
            products={int(r): {str(m): float(ms) for m, ms in v.items()} for r, v in d["forward_ms_by_method"].items()},
            acceptance={float(t): AcceptanceTable.from_dict(a) for t, a in d["acceptance"].items()},
            seconds=float(d["seconds"]), when=str(d.get("when", "")), notes=tuple(d.get("notes", ())),
            pad={int(r): int(b) for r, b in d.get("pad", {}).items()},
            pad_trials={int(r): PadTrial(int(t["run_as"]), float(t["unpadded_ms"]), float(t["padded_ms"]),
                                         bool(t["kept"])) for r, t in d.get("pad_trials", {}).items()},
            others_cores=None if d.get("others_cores") is None else float(d["others_cores"]),
            shared=bool(d.get("shared", False)),
        )

    def table(self, temperature: float) -> AcceptanceTable:
        """The acceptance measured at the nearest calibrated temperature."""
        return self.acceptance[min(self.acceptance, key=lambda t: abs(t - temperature))]


def load_cached(key: dict, root: Path | None = None) -> Calibration | None:
    """The cached calibration for exactly this key; None when absent, unreadable, made for another key, or
    when its plan names a product method that does not run here now (the native one, after its compiler went)."""
    path = machine.cache_file(key, root)
    try:
        cal = Calibration.from_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    runs_here = set(cal.plan.values()) <= set(available_products())
    return cal if cal.key == key and runs_here else None


def save(cal: Calibration, root: Path | None = None) -> Path:
    return machine.write_atomic(machine.cache_file(cal.key, root), cal.to_json())


def calibrated(pair, pair_kind: str, *, force: bool = False, root: Path | None = None,
               progress: Progress | None = None, fresh_acceptance: bool = False) -> Calibration:
    """This machine's calibration of `pair` (cached; `force` measures again), with its product plan applied.
    The acceptance is the pair's (pair_acceptance.py: shipped or cached once measured); `fresh_acceptance`
    measures it again (and implies `force`)."""
    key = machine.machine_key(pair_kind, str(pair.device))
    cal = None if force or fresh_acceptance else load_cached(key, root)
    if cal is None:
        cal = measure(pair, key, progress or (lambda _: None), root=root, fresh_acceptance=fresh_acceptance)
        if not cal.shared:  # timed while other processes took the cores: used by this process, never cached
            save(cal, root)
    put_plan(pair, cal.plan, cal.pad)
    return cal


def apply_cached_plan(pair, pair_kind: str, root: Path | None = None) -> dict[int, str] | None:
    """Put this machine's cached product plan on the pair's lean target when a calibration of this pair on this
    machine is cached (what the app does each time it loads a pair: a user who calibrated once decodes with the
    faster products from the first Step); the plan put on, or None: nothing cached or no lean target (the
    products stay as they are). Measures nothing; a no-op when the plan (and its padding) is on already."""
    lean = lean_target_of(pair)
    cal = load_cached(machine.machine_key(pair_kind, str(pair.device)), root) if lean is not None else None
    if cal is None:
        return None
    if plan_of(lean) != cal.plan or pad_of(lean) != cal.pad:
        put_plan(pair, cal.plan, cal.pad)
    return cal.plan


def put_plan(pair, plan: dict[int, str], pad: dict[int, int]) -> None:
    """The product plan and its padding on the pair's lean target and on its draft's products where it has lean
    ones (the draft head's: the same few-row products, models/lean_head.py), dropping the weight copies of the
    methods the plan does not use."""
    for lean in (lean_target_of(pair), getattr(pair, "draft_products", None)):
        if lean is not None:
            apply_plan(lean, plan, pad)
            release_copies(lean, set(plan.values()))


def _scorer(pair):
    """The model the pair's target session scores trees with (None for a model-free one)."""
    return getattr(pair.target_session(), "model", None)


def lean_target_of(pair):
    """The pair's lean float32 target (what scores trees on CPU), or None."""
    from decoding.models.lean.target import LeanFloatLlama

    model = _scorer(pair)
    return model if isinstance(model, LeanFloatLlama) else None


def target_words(pair) -> str:
    """What scores the pair's trees, in words, where it is not the lean CPU target."""
    from decoding.models.cuda.graphed_target import GraphedLlama

    model = _scorer(pair)
    if isinstance(model, GraphedLlama):
        return "the forward replayed from CUDA graphs" if model.graphs else "the graphed target's forward, eagerly"
    return "transformers' forward" if model is not None else "no model"


def measure(pair, key: dict, progress: Progress, *, root: Path | None = None, fresh_acceptance: bool = False
            ) -> Calibration:
    t0, meter = time.perf_counter(), others.OthersMeter()
    lean, notes = lean_target_of(pair), []
    prompts = prompts_for(key["pair"])
    prompt_ids = engine.encode(pair, DecodeConfig(), prompts[0])
    plan, forward_ms, forward = {}, {}, _Forwards(pair, prompt_ids)  # one prefill serves both stages
    if str(pair.device) != "cpu":
        progress("warming the accelerator up (untimed forwards of every size)")
        warm_up(forward, ROWS)
    if lean is not None and lean.device.type == "cpu":
        methods = available_products()
        progress(f"timing the target forward with each product method ({', '.join(methods)})")
        forward_ms = method_table(pair, prompt_ids, methods, forward=forward)
        plan = products.plan_from(forward_ms, row_limits())
        release_copies(lean, set(plan.values()))  # the losers' weight copies (a model's size each)
    else:
        notes.append(f"no lean CPU target ({target_words(pair)}): the stock products only")
    # every size timed again with the plan alone on: the method stage alternates methods, and there the chosen
    # one's 2, 4 and 8 rows read slower than a run, one method throughout, pays (docs/speed.md, "Calibration
    # and the chooser (issue 26)"): good for ranking methods, biased for the curve
    progress(f"timing target forwards of 1 to {ROWS[-1]} rows with the plan")
    planned = target_curve(pair, prompt_ids, plan if lean is not None else None, forward=forward)
    pad, trials = {}, {}
    if lean is not None:
        if lean.device.type == "cpu":
            planned, pad, trials = padded_curve(plan, planned, forward, progress)
        put_plan(pair, plan, pad)  # the drafted steps run with it (the draft's products too)
    stock = tuple((n, by["stock"]) for n, by in sorted(forward_ms.items())) or planned  # the curve before
    progress("drafted steps: draft cost and step overhead (and the acceptance, unless known for this pair)")
    draft, rest, tables, source = steps_and_acceptance(pair, key["pair"], prompts, root, fresh_acceptance)
    notes.append(f"acceptance: {source}")
    costs = StepCosts(planned, draft.curve, *rest, draft_first=draft.first_extra)
    others_cores, cores = meter.cores() if str(pair.device) == "cpu" else None, others.usable_cores()
    shared = others.shared(others_cores, key["threads"], cores)
    if shared:
        notes.append(others.words(others_cores, key["threads"], cores))
    return Calibration(key, costs, StepCosts(stock, draft.curve, *rest, draft_first=draft.first_extra), plan,
                       forward_ms, tables, round(time.perf_counter() - t0, 2), time.strftime("%Y-%m-%d %H:%M:%S"),
                       tuple(notes), pad, trials, others_cores, shared)


def padded_curve(plan: dict[int, str], planned: tuple[tuple[int, float], ...], forward: _Forwards,
                 progress: Progress, repeats: int = 3
                 ) -> tuple[tuple[tuple[int, float], ...], dict[int, int], dict[int, PadTrial]]:
    """The curve with the padding that pays here, and that padding for every row count: each small size a
    larger timed one nearly matches (products.pad_trials) is timed run as that one and unpadded, alternately
    (`repeats` of each after one untimed pair: the machine's drift hits both alike), and the padding is kept
    where its median is faster (products.kept_pads). A padded forward can cost less than the larger size
    itself (attention and the norms see the real rows only), or no less than the unpadded one (noise read as
    a dip, or another kernel). Also each trial, for the reader."""
    tried = products.pad_trials(planned)
    if not tried:
        return planned, {}, {}
    progress(f"timing {', '.join(f'{n} rows run as {b}' for n, b in sorted(tried.items()))}, and unpadded")
    timed = {}
    for n, b in sorted(tried.items()):
        pairs = [(forward(n, plan), forward(n, plan, {n: b})) for _ in range(repeats + 1)][1:]  # first untimed
        timed[n] = (statistics.median(u for u, _ in pairs), statistics.median(p for _, p in pairs))
    kept = products.kept_pads(tried, timed)
    curve = tuple((n, timed[n][1] if n in kept else ms) for n, ms in planned)
    trials = {n: PadTrial(b, *timed[n], n in kept) for n, b in tried.items()}
    return curve, products.expand_pads(kept, tuple(n for n, _ in planned)), trials


def target_curve(pair, prompt_ids: list[int], plan: dict[int, str] | None, rows: tuple[int, ...] | None = None,
                 repeats: int = 3, known: dict[int, float] | None = None, forward: _Forwards | None = None
                 ) -> tuple[tuple[int, float], ...]:
    """(rows, median ms) of one target forward over a chain of `rows` nodes on a cached context, each followed
    by the commit a step makes (root kept), with `plan` put on the lean target (None: the pair's forward as it
    is). Sizes in `known` (times already taken with this plan) are not timed again, and sizes
    above FLAT_ROWS only while the curve is flat (on a 2-core CPU's steep curve timing 24 and 32 rows was a
    noticeable part of a calibration that should take under 10 s, for trees no choice takes there: docs/speed.md,
    "Measurements the code's comments cite"). One size at
    a time, after one untimed call each: a run repeats one tree size, and MKL's packed products keep only a few
    row buckets packed (packed_linear.py), so interleaving sizes would time the repacking no run pays."""
    forward, known = forward or _Forwards(pair, prompt_ids), dict(known or {})
    curve = dict(known)
    for n in sorted(rows or ROWS):
        if n > FLAT_ROWS and _steep(curve):
            break  # no tree this large can pay on this curve: the chooser extends its last slope
        if n not in known:
            times = [forward(n, plan) for _ in range(repeats + 1 + ONE_ROW_EXTRA * (n == 1))][1:]  # first untimed
            curve[n] = statistics.median(times)
    return tuple(sorted(curve.items()))


def warm_up(forward: _Forwards, sizes: tuple[int, ...], seconds: float = WARM_S) -> int:
    """Untimed forwards of every size in turn, for `seconds` and at least once each; the number made. On an
    H200 the curve timed without it had 2..8 rows at 1.5-1.9x one row where the runs after paid 1.1-1.2x:
    the first forwards of a process pay the GPU's clock ramp and its kernels' first loads (one untimed call
    per size does not cover them). A CPU needs none (its calibration time is the budget)."""
    end, made = time.perf_counter() + seconds, 0
    while not made or time.perf_counter() < end:
        for n in sizes:
            forward(n, None)
            made += 1
    return made


def _steep(curve: dict[int, float]) -> bool:
    """Whether FLAT_ROWS rows already cost more than STEEP x one row (a CPU's curve; a GPU's stays flat)."""
    return 1 in curve and FLAT_ROWS in curve and curve[FLAT_ROWS] > STEEP * curve[1]


def method_table(pair, prompt_ids: list[int], methods: tuple[str, ...], rows: tuple[int, ...] = PLAN_ROWS,
                 repeats: int = 2, forward: _Forwards | None = None) -> dict[int, dict[str, float]]:
    """rows -> method -> median ms of the target forward with `method` on every product (as target_curve
    times it). A method that cannot be chosen is timed no further, at that size or any larger one: one whose
    untimed first forward costs more than 2 x DROP x the fastest first forward (the weight copies are made
    before, so a first forward is a forward), or whose first timed forward costs more than DROP x the fastest
    one's. On a 2-core VM numpy's forward took several times the others' (docs/speed.md, "Few-row products"):
    timing it everywhere would be a third of the calibration. Stock, the baseline, is always timed."""
    forward = forward or _Forwards(pair, prompt_ids)
    # oneDNN's reorder, made once here, is not a forward's cost (docs/speed.md, "Calibration and the chooser
    # (issue 26)")
    for method in methods:
        prepare_copies(getattr(forward, "lean", None), method)
    alive, table = list(methods), {}
    for n in rows:
        times: dict[str, list[float]] = {m: [] for m in alive}
        for i in range(repeats + 1):
            first = {m: forward(n, products.uniform(m)) for m in alive}
            for m, ms in first.items():
                if i:
                    times[m].append(ms)
            limit = (2 * DROP if i == 0 else DROP) * min(first.values())
            if i <= 1:  # after the untimed round and the first timed one: drop the hopeless
                alive = [m for m in alive if m == "stock" or first[m] <= limit]
        table[n] = {m: statistics.median(ms) for m, ms in times.items() if ms}
    return table


class _Forwards:
    """Timed target forwards over chains of n nodes on one growing cached context (each committed as a step
    commits it), with a product plan put on the lean target first (None: the pair's forward as it is)."""

    def __init__(self, pair, prompt_ids: list[int]) -> None:
        self.lean, self.target, self.ids = lean_target_of(pair), pair.target_session(), list(prompt_ids)
        self.context = list(prompt_ids)
        self.target.start(self.context)

    def __call__(self, n: int, plan: dict[int, str] | None, pad: dict[int, int] | None = None) -> float:
        if plan is not None and self.lean is not None:
            apply_plan(self.lean, plan, pad)
        tree = DraftTree.root(self.context[-1])
        for j in range(n - 1):
            tree = tree.add_draws(j, [self.ids[j % len(self.ids)]], merge=False)  # valid ids
        start = time.perf_counter()
        with torch.inference_mode():
            score_tree(self.target, tree)  # [n, V]
        ms = 1000 * (time.perf_counter() - start)
        token = self.context[-2] if len(self.context) > 1 else self.context[-1]
        self.target.commit([0], token, tree)
        self.context.append(token)
        return ms
