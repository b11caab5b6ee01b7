"""Whole Step clicks timed in-process, as the server runs them: resume + one step + every view redrawn
(`python -m bench step --pair embedded --clicks 8`; `python app.py --bench-step N` hands over to it).

No browser and no queue: what the handlers cost; bench/app_clicks.py times what a person waits for.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import astuple, fields, replace

from decoding.models.kinds import CHOICES, built_in_kind
from ui import controls, decode
from ui.session import Controls


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench step", description=__doc__.split("\n")[0])
    parser.add_argument("--pair", default="embedded", type=built_in_kind, metavar=CHOICES)
    parser.add_argument("--clicks", type=int, default=8, help="Step clicks per run (default 8)")
    parser.add_argument("--repeats", type=int, default=3, help="runs, one seed each (default 3)")
    args = parser.parse_args(argv)
    if args.clicks < 1 or args.repeats < 1:
        parser.error("--clicks and --repeats must be >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    bench_step(args.pair, args.clicks, args.repeats)
    return 0


def bench_step(kind: str, clicks: int, repeats: int = 3) -> None:
    """Time whole Step clicks (resume + one step + every view redrawn), as the server runs them."""
    import app

    _, views = app.build_page(kind)
    decode.load(replace(Controls(), pair=kind))  # model loading is not part of a click
    prompt = "the cat" if kind == "toy" else Controls().prompt
    times = []
    for seed in range(repeats):
        raw = replace(Controls(), pair=kind, prompt=prompt, seed=seed, max_new_tokens=256)
        named = dict(zip([f.name for f in fields(Controls)], astuple(raw), strict=True))
        session = None
        for _ in range(clicks):
            t0 = time.perf_counter()
            out = controls.step(views, views.inputs(session, **named), progress=None)
            times.append(time.perf_counter() - t0)
            session = out[views.state]
    print(f"{kind} pair, 3,2,2 tree, {len(times)} Step clicks ({repeats} runs x {clicks}): "
          f"median {1e3 * statistics.median(times):.0f} ms, p90 {1e3 * sorted(times)[int(0.9 * len(times))]:.0f} ms, "
          f"max {1e3 * max(times):.0f} ms per click (all views redrawn)")
