"""Benchmarks of the app's Step: in-process handler time (`bench_step`)."""

from __future__ import annotations

import statistics
import time
from dataclasses import astuple, fields, replace

from ui import controls, decode
from ui.session import Controls


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
