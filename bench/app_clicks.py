"""A benchmark of the app's Step (not a test): click-to-render latency in a real browser (`./specscope bench
app`; the in-process handler time is bench/app_step.py).

The browser benchmark launches app.py on a free port, one process per pair (so the embedded model is
loaded in one process at a time), drives headless Chromium with playwright and times, inside the page,
a Step click until the status line and the tree figure show the new step: what a person waits for, queue, payload and
rendering included. The first click of a run (it starts the run) is reported on its own.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from bench.local_app import CHROMIUM, ROOT, chromium, launched

# In the page: click Step, poll until the status names step n and the tree figure's title shows step n
# (drawn, not only sent), or a warning shows; milliseconds and the status text.
CLICK_JS = """async (n) => {
  const status = () => document.querySelector('#status')?.innerText || '';
  const tree = () => document.querySelector('#tree-plot .gtitle')?.textContent || '';
  const t0 = performance.now();
  document.querySelector('#step-btn button, button#step-btn').click();
  for (;;) {
    const text = status();
    const drawn = text.includes(`Step ${n} of ${n}`) && tree().startsWith(`step ${n} `);
    const done = drawn || text.includes('\\u26a0') || text.includes('has finished');
    if (done || performance.now() - t0 > 180000) return [performance.now() - t0, text];
    await new Promise(r => setTimeout(r, 5));
  }
}"""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="./specscope bench app",
                                     description="click-to-render latency of Step in headless Chromium")
    parser.add_argument("--pairs", default="toy,embedded", help="comma-separated pairs (default toy,embedded)")
    parser.add_argument("--clicks", type=int, default=10, help="Step clicks per pair after the first (default 10)")
    parser.add_argument("--app-dir", type=Path, default=ROOT, help="the checkout whose app.py is launched")
    parser.add_argument("--python", default=sys.executable, help="the interpreter that runs app.py")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    app_py = args.app_dir / "app.py"
    if args.clicks < 1 or not app_py.is_file() or not Path(CHROMIUM).exists():
        print(f"bench app: need --clicks >= 1, {app_py} and {CHROMIUM}", file=sys.stderr)
        return 2
    for pair in [p.strip() for p in args.pairs.split(",") if p.strip()]:
        first, times, problem = bench_pair(args, pair)
        print(report(pair, first, times, problem), flush=True)
    return 0


def report(pair: str, first: float, times: list[float], problem: str | None) -> str:
    if problem:
        return f"{pair}: the status showed a warning, not a step: {problem!r}"
    if not times:
        return f"{pair}: the run ended after its first click ({first:.0f} ms); nothing more to time"
    ordered = sorted(times)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return (f"{pair} pair, 3,2,2 tree: {len(times)} Step clicks, click -> new status: "
            f"median {statistics.median(times):.0f} ms, p90 {p90:.0f} ms, max {ordered[-1]:.0f} ms "
            f"(first click of the run: {first:.0f} ms)")


def bench_pair(args: argparse.Namespace, pair: str) -> tuple[float, list[float], str | None]:
    """(first click ms, later clicks ms, the warning if the status showed one) for one pair. The app
    preloads the pair at start; the first click waits for it."""
    log = Path(tempfile.gettempdir()) / f"specscope-bench-app-{pair}.log"
    with launched(["--pair", pair], log, app_dir=args.app_dir, python=args.python, timeout_s=300) as (url, _), \
            chromium() as browser:
        page = browser.new_page(viewport={"width": 1440, "height": 1000})
        page.goto(url)
        page.wait_for_selector("#step-btn", timeout=120_000)
        first, text = page.evaluate(CLICK_JS, 1)
        times = []
        for n in range(2, args.clicks + 2):
            if "running" not in text:
                break  # a warning, or the run finished: no more steps to time
            ms, text = page.evaluate(CLICK_JS, n)
            times.append(ms)
    return first, times, (text.strip() if "\u26a0" in text else None)


if __name__ == "__main__":
    sys.exit(main())
