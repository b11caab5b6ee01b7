"""Time a record's per-node theory (exact acceptance and α*) against an earlier revision's code.

    python -m bench theory [--baseline REV] [--vocab 49152] [--nodes 20] [--ks 2,3,4] [--repeats 3]

Nodes look like an LLM's: logits ~ 3 N(0, 1), q = softmax(logits / T), p = softmax((logits + noise) / T),
T = 0.8. For each node and k, run.recorder.visit_theory (theory.acceptance + theory.optimal_acceptance,
without-replacement law, rrs_wor) and the same two calls of revision REV (read with `git show`, so
the repository must be a git checkout) are timed interleaved, `--repeats` times each; the table shows
the medians and the largest |new − old| of both numbers (the acceptance is a seeded Monte Carlo
estimate where rrs_wor has no exact route, k ≥ 3 at this vocabulary: same seed, same draws).
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import tempfile
import time
import types
from pathlib import Path

import torch

from decoding.run.recorder import visit_theory
from decoding.verify.registry import VERIFIERS
from decoding.verify.sampling import make_generator

BASELINE = "66ef243"  # the last revision before the fast exponential-race quadrature and the pruned α* scan
ROOT = Path(__file__).resolve().parents[1]


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m bench theory", description=__doc__.split("\n")[0])
    ap.add_argument("--baseline", default=BASELINE, help="git revision whose theory code is the reference")
    ap.add_argument("--vocab", type=int, default=49152)
    ap.add_argument("--nodes", type=int, default=20)
    ap.add_argument("--ks", default="2,3,4", help="candidate counts, comma separated")
    ap.add_argument("--repeats", type=int, default=3, help="timed calls per node and implementation")
    ap.add_argument("--temperature", type=float, default=0.8)
    ap.add_argument("--seed", type=int, default=0)
    return ap


THEORY_FILES = {  # a theory module -> its path now, then at earlier revisions (newest first)
    "race": ("decoding/verify/races/without_replacement.py", "decoding/verify/theory/race.py",
             "decoding/verify/theory_race.py"),
    "optimal": ("decoding/verify/optimal.py", "decoding/verify/theory/optimal.py"),
    "wor": ("decoding/verify/theory/wor.py", "decoding/verify/theory_wor.py"),
}
RACE_IMPORTS = ("from decoding.verify.races.without_replacement import wor_miss_prefixes",
                "from decoding.verify.theory.race import wor_miss_prefixes",
                "from decoding.verify.theory_race import wor_miss_prefixes")


EARLIER_NAMES = {"decoding.verify.acceptance ": "decoding.verify.theory.acceptance "}  # its imports, then -> now


def _source(rev: str, module: str) -> str:
    """The source of a theory module at revision `rev`, wherever the layout of that revision kept it (the
    modules it imports read from where they are now)."""
    for path in THEORY_FILES[module]:
        done = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=ROOT, capture_output=True, text=True)
        if done.returncode == 0:
            text = done.stdout
            for then, now in EARLIER_NAMES.items():
                text = text.replace(then, now)
            return text
    raise ValueError(f"cannot read {THEORY_FILES[module][0]} at revision {rev!r} (needs a git checkout): "
                     f"{done.stderr.strip()}")


def _module(name: str, source: str, folder: Path, **names) -> types.ModuleType:
    """Imports `source` as module `name` from a file in `folder`, with `names` predefined."""
    path = folder / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    module.__dict__.update(names)
    spec.loader.exec_module(module)
    return module


def baseline(rev: str):
    """visit_theory of revision `rev`: its theory_race, optimal and theory_wor, loaded side by side."""
    opt_src = _source(rev, "optimal")
    for line in RACE_IMPORTS:
        opt_src = opt_src.replace(line, "wor_miss_prefixes = _race.wor_miss_prefixes")
    with tempfile.TemporaryDirectory(prefix="bench_theory_") as tmp:  # the files are read once, at import
        folder = Path(tmp)
        race = _module("baseline_theory_race", _source(rev, "race"), folder)
        optimal = _module("baseline_optimal", opt_src, folder, _race=race)
        wor = _module("baseline_theory_wor", _source(rev, "wor"), folder)
    from decoding.verify.theory import routes as theory
    def old_visit(entry, p, q, k):
        p, q = theory.as_law(p), theory.as_law(q)
        if k == 1:
            acc = theory.acceptance(entry.name, p, q, k)
        else:
            acc = wor.rrs_wor_acceptance(p, q, k, generator=make_generator(0), samples=theory.RRS_WOR_SAMPLES)
        return acc.value, acc.stderr, optimal.optimal_acceptance(p, q, k, entry.law)

    return old_visit


def _nodes(args) -> list[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(args.seed)
    out = []
    for _ in range(args.nodes):
        logits = 3.0 * torch.randn(args.vocab, generator=g, dtype=torch.float64)
        noise = torch.randn(args.vocab, generator=g, dtype=torch.float64)
        out.append((torch.softmax((logits + noise) / args.temperature, 0), torch.softmax(logits / args.temperature, 0)))
    return out


def _timed(fn, *a) -> tuple[float, tuple]:
    start = time.perf_counter()
    result = fn(*a)
    return 1e3 * (time.perf_counter() - start), result


def bench_k(k: int, nodes, old_visit, repeats: int) -> dict:
    entry = VERIFIERS["rrs_wor"]
    new_ms, old_ms, d_acc, d_opt = [], [], 0.0, 0.0
    for p, q in nodes:
        for _ in range(repeats):  # interleaved, so load on a shared machine hits both alike
            t_new, new = _timed(visit_theory, entry, p, q, k)
            t_old, old = _timed(old_visit, entry, p, q, k)
            new_ms.append(t_new)
            old_ms.append(t_old)
        d_acc, d_opt = max(d_acc, abs(new[0] - old[0])), max(d_opt, abs(new[2] - old[2]))
    return {"old": statistics.median(old_ms), "new": statistics.median(new_ms), "d_acc": d_acc, "d_opt": d_opt,
            "stderr": new[1]}


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    ks = [int(x) for x in args.ks.split(",") if x.strip()]
    old_visit = baseline(args.baseline)
    nodes = _nodes(args)
    visit_theory(VERIFIERS["rrs_wor"], *nodes[0], 2)  # warm-up
    print(f"visit_theory (rrs_wor, without_replacement), V={args.vocab}, T={args.temperature}, {args.nodes} nodes "
          f"x {args.repeats} repeats, {torch.get_num_threads()} torch threads; baseline {args.baseline}")
    print(f"{'k':>3}{'old ms':>10}{'new ms':>10}{'speed-up':>10}{'max|d acc|':>13}{'max|d alpha*|':>15}")
    for k in ks:
        r = bench_k(k, nodes, old_visit, args.repeats)
        speed = r["old"] / r["new"]
        print(f"{k:>3}{r['old']:>10.1f}{r['new']:>10.1f}{speed:>9.2f}x{r['d_acc']:>13.2e}{r['d_opt']:>15.2e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
