"""A benchmark (not a test) of the story's ◀/▶ in headless Chromium, run by `./specscope bench app` after its
Step clicks: press ▶ then ◀ (alternately, in runs of 5) and time each press until the new event is drawn
(position label, narration and tree highlight set, then the next frame painted). The inspector following the
event is a server call after the story rests; its time is reported apart (what a per-event round trip would
cost each press had the story been stepped on the server)."""

from __future__ import annotations

import statistics

PRESS_JS = """async (presses) => {
  const pos = () => document.querySelector('#story-position')?.innerText || '';
  const frame = () => new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
  const n = document.querySelectorAll('#story-events > li').length;
  const out = [];
  for (let i = 0; i < presses; i++) {
    const at = Number(document.querySelector('#story').dataset.at || 0);
    const forward = Math.floor(i / 5) % 2 === 0 ? at + 1 < n : at === 0;
    const before = pos();
    const t0 = performance.now();
    document.querySelector(forward ? '#story-next' : '#story-prev').click();
    while (pos() === before && performance.now() - t0 < 5000) await new Promise(r => setTimeout(r, 0));
    await frame();
    out.push(performance.now() - t0);
  }
  return out;
}"""

FOLLOW_JS = """async () => {
  const li = Array.from(document.querySelectorAll('#story-events > li'));
  const at = Number(document.querySelector('#story').dataset.at || 0);
  const target = li.findIndex((e, i) => i !== at && e.dataset.node !== li[at].dataset.node);
  if (target < 0) return null;
  const want = li[target].dataset.node + ':';
  const select = () => document.querySelector('#node-select input')?.value || '';
  const t0 = performance.now();
  const step = target > at ? '#story-next' : '#story-prev';
  for (let i = 0; i < Math.abs(target - at); i++) document.querySelector(step).click();
  while (!select().startsWith(want) && performance.now() - t0 < 10000) await new Promise(r => setTimeout(r, 5));
  return performance.now() - t0;
}"""


def measure(page, presses: int = 40, follows: int = 5) -> tuple[list[float], list[float]]:
    """(ms per ◀/▶ press, ms until the inspector shows the new event's node) on the page's shown step."""
    page.wait_for_selector("#story-events > li", state="attached", timeout=60_000)
    times = page.evaluate(PRESS_JS, presses)
    followed = [ms for ms in (page.evaluate(FOLLOW_JS) for _ in range(follows)) if ms is not None]
    return times, followed


def report(pair: str, times: list[float], followed: list[float]) -> str:
    if not times:
        return f"{pair}: the story had no events to press through"
    ordered = sorted(times)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    inspector = (f"; the inspector follows (120 ms rest + server call): median {statistics.median(followed):.0f} ms"
                 if followed else "")
    return (f"{pair} pair, story ◀/▶: {len(times)} presses, press -> event drawn: median "
            f"{statistics.median(times):.1f} ms, p90 {p90:.1f} ms, max {ordered[-1]:.1f} ms{inspector}")
