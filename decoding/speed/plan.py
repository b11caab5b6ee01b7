"""One loader with this machine's plan: every entry point (the app, the CLI, the bench, `fastest()`) loads a pair
through `load_planned`, so one pair kind runs the same products wherever it is loaded.

A pair's loaded lean target is shared by every run of that pair in the process; its product plan (which
few-row product method each row count uses, lean/few_rows.py) is the one mutable thing on it (models/model_pair.py
says so). It changes p by float rounding at most. `load_planned` puts on the plan this machine's cached
calibration chose; `calibrate_once` measures one the first time a pair is used on a machine (the app does it in
the background at start, `preload`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from decoding.models import pairs
from decoding.models.model_pair import ModelPair, Progress
from decoding.speed import calibrate, machine

log = logging.getLogger("specscope.speed")


def load_planned(kind: str = "embedded", target: str | None = None, draft: str | None = None,
                 device: str = "auto", progress: Progress | None = None) -> ModelPair:
    """`load_pair(...)` with this machine's cached product plan put on (when a calibration of this pair on this
    machine is cached; else the products stay as they are). ModelLoadError with a readable message."""
    pair = pairs.load_pair(kind, target=target, draft=draft, device=device, progress=progress)
    calibrate.apply_cached_plan(pair, kind)
    return pair


def calibrate_once(pair: ModelPair, kind: str, activity: Callable[[], object] | None = None) -> None:
    """Calibrate the pair the first time it runs on this machine (docs/speed.md; a few seconds, then cached for
    this CPU, torch build, thread count and pair), so that every step runs with this machine's product plan;
    nothing when a calibration is cached (load_planned put its plan on) or when the pair has no lean CPU target
    (a GPU, a custom pair: nothing to choose). `activity`: a counter of the work that shared the cores meanwhile
    (the app's Steps); when it moved, the timings may be skewed: the plan stays on for this process, but the
    calibration is not kept, so the next start measures again."""
    key = machine.machine_key(kind, str(pair.device))
    if calibrate.lean_target_of(pair) is None or calibrate.load_cached(key):
        return
    log.info("calibrating the %s pair on this machine (once, then cached) ...", kind)
    before = activity() if activity is not None else None
    cal = calibrate.calibrated(pair, kind, progress=lambda message: log.info("calibrating: %s", message))
    log.info("calibrated in %.1f s; target products: %s", cal.seconds,
             cal.products_words() if cal.plan or cal.pad else "stock (no method beat it here)")
    if cal.shared:  # other processes took the cores: calibrated() did not cache it
        log.warning("calibrating the %s pair: %s", kind, cal.shared_note())
    elif activity is not None and activity() != before:
        machine.cache_file(key).unlink(missing_ok=True)
        log.warning("runs were stepped while the %s pair was calibrated, so its timings may be skewed: it is not "
                    "kept, and the next start calibrates again", kind)


def preload(kind: str, device: str = "auto", activity: Callable[[], object] | None = None) -> None:
    """Load a pair once (models are cached per process), so the first use does not wait for it, and calibrate it
    the first time on this machine. A failure is only logged: a background warm-up must never stop its caller;
    the user sees the failure when they use the pair."""
    try:
        calibrate_once(load_planned(kind, device=device, progress=lambda m: log.info("%s", m)), kind, activity)
    except Exception:  # noqa: BLE001 - a background warm-up must never stop the app
        log.exception("preloading the %s pair failed", kind)
