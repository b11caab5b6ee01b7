"""Calibrate a pair on this machine: the costs of a step's parts, the few-row product plan, the acceptance.

What is timed, with the threads in use (a few seconds once the pair is loaded; cached per machine and
pair, machine.py, as a small JSON; `force` redoes it):
- the target forward for PLAN_ROWS rows with every product method of models/few_rows.PRODUCTS this torch
  build has, on every product of the lean target; the plan takes the fastest per row count (products.py);
- the target forward for 1..32 rows (a chain fed on a cached context and committed, as a step does) with
  the plan (the curve after: the method stage's times at PLAN_ROWS above 1, the other sizes of ROWS and 1 row
  again, with more repeats, timed with the plan on; the curve before is the stock method's at PLAN_ROWS);
- the draft, per level of 1, 2 and 4 parents, and the rest of a step (warp, verify, commit) as a line in the
  tree's rows, from real engine steps;
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

from decoding.models.embedded import cache_root
from decoding.models.few_rows import apply_plan, available_products, prepare_copies, release_copies
from decoding.models.target import score_tree
from decoding.run import engine
from decoding.run.config import Branching, DecodeConfig
from decoding.run.costs import StepCosts
from decoding.speed import machine, pair_acceptance, products
from decoding.speed.chooser import AcceptanceTable
from decoding.speed.pair_acceptance import run_steps  # noqa: F401  (bench predict's name for it)
from decoding.verify.tree import DraftTree

CALIBRATION_VERSION = 3  # 2: the plan covers every product, chosen from whole forwards; 3: the rest per row
ROWS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32)  # target forward sizes timed (a chain of 8 is 9 rows)
PLAN_ROWS = (1, 2, 4, 8)  # sizes every product method is timed at (a plan's choice at 8 holds above it)
FLAT_ROWS, STEEP = 16, 1.25  # sizes above FLAT_ROWS are timed only where FLAT_ROWS rows cost <= STEEP x one
ONE_ROW_EXTRA = 4  # more repeats of the one-row forward in the curve (cheap, and every speed-up's base)
DROP = 2.0  # a method this many times slower than the fastest at a size is timed no further
WARM_S = 1.5  # an accelerator's untimed warm-up before any timing (warm_up)
TEMPERATURES = pair_acceptance.TEMPERATURES
COST_TOKENS = 16  # the chain that times the draft's levels and the rests when the acceptance is known
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

    def to_json(self) -> str:
        return json.dumps({
            "version": CALIBRATION_VERSION, "key": self.key, "when": self.when, "seconds": round(self.seconds, 2),
            "costs": self.costs.to_dict(), "stock_costs": self.stock_costs.to_dict(),
            "plan": {str(r): m for r, m in sorted(self.plan.items())},
            "forward_ms_by_method": {str(r): {m: round(ms, 3) for m, ms in v.items()}
                                     for r, v in sorted(self.products.items())},
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
            products={int(r): {str(m): float(ms) for m, ms in v.items()} for r, v in d["forward_ms_by_method"].items()},
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
               progress: Progress | None = None, fresh_acceptance: bool = False) -> Calibration:
    """This machine's calibration of `pair` (cached; `force` measures again), with its product plan applied.
    The acceptance is the pair's (pair_acceptance.py: shipped or cached once measured); `fresh_acceptance`
    measures it again (and implies `force`)."""
    key = machine.machine_key(pair_kind, str(pair.device))
    cal = None if force or fresh_acceptance else load_cached(key, root)
    if cal is None:
        cal = measure(pair, key, progress or (lambda _: None), root=root, fresh_acceptance=fresh_acceptance)
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


def measure(pair, key: dict, progress: Progress, *, root: Path | None = None, fresh_acceptance: bool = False
            ) -> Calibration:
    t0 = time.perf_counter()
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
        plan = products.expand(products.choose(forward_ms), PLAN_ROWS)
        release_copies(lean, set(plan.values()))  # the losers' weight copies (a model's size each)
    else:
        notes.append("no lean CPU target: the stock products only")
    # every size timed again with the plan alone on: the method stage alternates methods, and there the chosen
    # one's 2, 4 and 8 rows read 40-43 ms where a run, one method throughout, pays 34-35 (its 3 and 6 rows,
    # timed here, read 34-35): good for ranking methods, biased for the curve
    progress(f"timing target forwards of 1 to {ROWS[-1]} rows with the plan")
    planned = target_curve(pair, prompt_ids, plan if lean is not None else None, forward=forward)
    if lean is not None:
        apply_plan(lean, plan)  # the drafted steps run with it
    stock = tuple((n, by["stock"]) for n, by in sorted(forward_ms.items())) or planned  # the curve before
    progress("drafted steps: draft cost and step overhead (and the acceptance, unless known for this pair)")
    draft, rest, tables, source = steps_and_acceptance(pair, key["pair"], prompts, root, fresh_acceptance)
    notes.append(f"acceptance: {source}")
    costs = StepCosts(planned, draft.curve, *rest, draft_first=draft.first_extra)
    return Calibration(key, costs, StepCosts(stock, draft.curve, *rest, draft_first=draft.first_extra), plan,
                       forward_ms, tables,
                       round(time.perf_counter() - t0, 2), time.strftime("%Y-%m-%d %H:%M:%S"), tuple(notes))


def target_curve(pair, prompt_ids: list[int], plan: dict[int, str] | None, rows: tuple[int, ...] | None = None,
                 repeats: int = 3, known: dict[int, float] | None = None, forward: _Forwards | None = None
                 ) -> tuple[tuple[int, float], ...]:
    """(rows, median ms) of one target forward over a chain of `rows` nodes on a cached context, each followed
    by the commit a step makes (root kept), with `plan` put on the lean target (None: the pair's forward as it
    is). Sizes in `known` (already timed with this plan: the method stage's) are not timed again, and sizes
    above FLAT_ROWS only while the curve is flat (on a 2-core CPU, 16 rows cost 1.4x one: timing 24 and 32 was
    0.55 s of a calibration that should take under 10 s, for trees no choice takes there). One size at
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
    one's. On a 2-core VM numpy's forward took 0.26 s against 35 ms: timing it everywhere would be a third of
    the calibration. Stock, the baseline, is always timed."""
    forward = forward or _Forwards(pair, prompt_ids)
    for method in methods:  # oneDNN's reorder (0.25 s once) is not a forward's cost
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

    def __call__(self, n: int, plan: dict[int, str] | None) -> float:
        if plan is not None and self.lean is not None:
            apply_plan(self.lean, plan)
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


def steps_and_acceptance(pair, pair_kind: str, prompts: tuple[str, ...], root: Path | None = None,
                         fresh: bool = False
                         ) -> tuple[DraftCosts, tuple[float, float], dict[float, AcceptanceTable], str]:
    """(the draft's costs, the rest's line (ms, ms per row), temperature -> acceptance, where the acceptance came
    from) from short engine runs. The acceptance is the pair's (pair_acceptance.py): shipped or cached, else measured
    now from chains over the prompts at each temperature, whose steps then also give the draft's cost of one
    parent's level and the rests; when it is known, one chain of COST_TOKENS at T = 0 gives those. Then a chain of
    1 (a step's first level: first_level), trees for wider draft levels (draft_curve) and the target alone (the
    rest of a one-row step)."""
    key = pair_acceptance.pair_key(pair, pair_kind, prompts)
    tables, source = (None, "") if fresh else pair_acceptance.known(key, root or cache_root())
    if tables is None:
        tables, runs = pair_acceptance.measure(pair, prompts)
        pair_acceptance.save(key, tables, root or cache_root())
        source = (f"measured now ({len(prompts)} prompts x {pair_acceptance.NEW_TOKENS} tokens at each temperature; "
                  "kept for this pair)")
    else:
        runs = [run_steps(pair, pair_acceptance.chain(0.0, COST_TOKENS), prompts[0])[0]]
    first, first_rests = first_level(pair, prompts[0])
    one = later_level(runs, first)
    rests = [rest for steps in runs for rest in _rests(steps)] + first_rests
    draft, wide_rests = draft_curve(pair, prompts, one, one if first is None else first)
    alone = DecodeConfig(verifier="sd", shape=Branching((1,)), drafting=False, max_new_tokens=6, seed=0)
    steps, _ = run_steps(pair, alone, prompts[0])
    costs = DraftCosts(draft, max(0.0, (first or one) - one))
    return costs, rest_line(rests + wide_rests + _rests(steps)), tables, source


@dataclass(frozen=True)
class DraftCosts:
    curve: tuple[tuple[int, float], ...]  # StepCosts.draft: a level over N parents, the first level's extra aside
    first_extra: float  # StepCosts.draft_first


def first_level(pair, prompt: str, new_tokens: int = 12) -> tuple[float | None, list[tuple[int, float]]]:
    """(median ms of a chain of 1's draft forward, None when no step drafted; its steps' rests): a step's first
    level, which pays the draft's catching up on the tokens the last step committed."""
    steps, _ = run_steps(pair, pair_acceptance.chain(0.0, new_tokens, depth=1), prompt)
    firsts = [r.draft_ms for _, r in steps[1:] if r.draft_forwards == 1]
    return (statistics.median(firsts) if firsts else None), _rests(steps)


def later_level(runs: list[list], first: float | None) -> float:
    """The median ms of a draft level after the first in the chains' steps ((draft ms - first) / (levels - 1));
    without a first level's time, a level's mean ((draft ms) / levels); 0 when nothing was drafted."""
    if first is None:
        levels = [r.draft_ms / r.draft_forwards for steps in runs for _, r in steps[1:] if r.draft_forwards]
    else:
        levels = [(r.draft_ms - first) / (r.draft_forwards - 1) for steps in runs for _, r in steps[1:]
                  if r.draft_forwards >= 2]
    return max(0.0, statistics.median(levels)) if levels else (first or 0.0)


def _rests(steps: list) -> list[tuple[int, float]]:
    """(rows, ms) of each step's rest after the first (which pays the prompt's prefill): its wall time less the
    draft and target forwards and the record's building (a record=False run builds none)."""
    return [(len(r.nodes), max(0.0, wall - r.draft_ms - r.target_ms - r.record_ms)) for wall, r in steps[1:]]


def rest_line(points: list[tuple[int, float]]) -> tuple[float, float]:
    """(ms, ms per row) of a line through the median rest at each row count (least squares, a median per
    size so that one disturbed step moves nothing), both kept non-negative; one size: its median, flat."""
    by_rows: dict[int, list[float]] = {}
    for rows, ms in points:
        by_rows.setdefault(rows, []).append(ms)
    xs = sorted(by_rows)
    ys = [statistics.median(by_rows[x]) for x in xs]
    if not xs:
        return 0.0, 0.0
    if len(xs) == 1:
        return ys[0], 0.0
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    slope = max(0.0, sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs))
    return max(0.0, my - slope * mx), slope


def draft_curve(pair, prompts: tuple[str, ...], one: float, first: float, widths: tuple[int, ...] = (2, 4)
                ) -> tuple[tuple[tuple[int, float], ...], list[tuple[int, float]]]:
    """The draft's cost of one level by its parent count: `one` (1 parent, a level after the first), then for
    each width w short runs of trees (w, 1), whose second level drafts over w parents (a step's draft ms less
    `first`, its first level's; the last prompt first; the next only when a run ended before a step after the
    first drafted both levels); and those steps' rests.
    Each size is timed, not interpolated: the embedded head's level of 2 parents costs what 4 cost, twice
    one's."""
    curve, rests = [(1, one)], []
    for width in widths:
        wide = DecodeConfig(verifier="rrs_wor", shape=Branching((width, 1)), max_new_tokens=8, temperature=0.8,
                            seed=0)
        level: list[float] = []
        for prompt in reversed(prompts):
            steps, _ = run_steps(pair, wide, prompt)
            level += [r.draft_ms - first for _, r in steps[1:] if r.draft_forwards == 2]
            rests += _rests(steps)
            if level:
                curve.append((width, max(one, statistics.median(level))))
                break
    return tuple(curve), rests
