"""Soak: many short sessions on the launched app through `gradio_client`, each leaving its page, round after
round; the server's resident memory after each round should stay flat (a left session's run, its KV caches
and its state must not pile up).

    python -m tests.soak [--pair embedded] [--sessions 20] [--steps 10] [--rounds 2] [--workers 4] [--max-growth 0.05]

Each session is one Client (its own page and gr.State): `--steps` Steps with its own prompt, seed and
verifier, then `close()`, which ends its heartbeat stream: the server sees the page leave and its unload
handler (ui/page_leave.py) drops the session's live run (ui.run_cache.RunCache.leave), forgets the pages
whose kept state Gradio has deleted, and trims the heap (ui/heap.py). Between rounds the script waits for
those leaves (`--leave-wait`, past Gradio's 15 s heartbeat). Exit 1 when the resident memory after the last
round is more than `--max-growth` above the memory after the first (that round loads and warms everything).
A script, not a test: 400 embedded Steps take minutes on a 2-core machine.

Gradio itself keeps a left page's gr.State (here the Session: its run state and every step's record) for
an hour, so a reconnecting page finds it (gradio/state_holder.py, STATE_TTL_WHEN_CLOSED; the environment
variable GRADIO_IS_E2E_TEST=1 makes that 1 s and the heartbeat 0.25 s): run with it to measure what
specscope itself keeps. Measured numbers: docs/speed.md, "Resident memory: the soak".
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.local_app import ROOT, launched

PROMPTS = ("Why is the sky blue?", "Name three fruits.", "Write a haiku about rain.", "What is 2 + 2?",
           "Tell me a joke.", "What is a prime number?", "Describe a cat.", "How do plants grow?")
VERIFIERS = ("rrs_wor", "sd", "spectr", "rrs")
LABELS = {"pair": "model pair (target p, draft q)", "prompt": "prompt", "verifier": "verifier",
          "branching": "children per node at each depth", "seed": "seed", "max_new_tokens": "max new tokens",
          "temperature": "temperature (0 = greedy)"}


def settings(pair: str, session: int, steps: int) -> dict:
    """Session `session`'s controls (by widget label): its own prompt, seed and verifier; enough tokens for
    every Step to decode (a run that ends early would make the next Steps cheap no-ops)."""
    verifier = VERIFIERS[session % len(VERIFIERS)]
    prompt = PROMPTS[session % len(PROMPTS)] if pair != "toy" else "the cat"
    chosen = dict(pair=pair, prompt=prompt, verifier=verifier, branching="1,1,1" if verifier == "sd" else "2,2",
                  seed=1000 + session, max_new_tokens=min(256, 8 * steps), temperature=1.0)
    return {LABELS[name]: value for name, value in chosen.items()}


def one_session(url: str, pair: str, session: int, steps: int) -> tuple[int, str]:
    """A page: `steps` Steps (fewer when its run ends at end-of-sequence), then the page leaves; returns
    (Steps that decoded, the last status line)."""
    from gradio_client import Client

    client = Client(url, verbose=False, download_files=False)
    try:
        parameters = client.view_api(return_format="dict", print_info=False)["named_endpoints"]["/step"]["parameters"]
        mine = settings(pair, session, steps)
        args = [mine.get(p["label"], p.get("parameter_default")) for p in parameters]
        status, done = "", 0
        for _ in range(steps):
            status = client.predict(*args, api_name="/step")[0]
            if f"Step {done + 1} of {done + 1}" not in status:
                break  # the run finished (or a problem: the caller reports it)
            done += 1
        return done, status
    finally:
        client.close()  # the heartbeat stream ends: the server's unload handler runs for this page


def resident_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def soak(pair: str, sessions: int, steps: int, rounds: int, workers: int, leave_wait: float) -> list[float]:
    """Resident memory (MiB) of the server after each round; raises when a Step fails."""
    after = []
    with launched(["--pair", pair], ROOT / "tests" / "output" / "soak.log", timeout_s=600) as (url, pid):
        print(f"app on {url} (pid {pid}), {resident_mib(pid):.0f} MiB before the first Step", flush=True)
        for r in range(rounds):
            t0 = time.perf_counter()
            with ThreadPoolExecutor(max_workers=workers) as pool:
                results = list(pool.map(lambda s: one_session(url, pair, s, steps), range(sessions)))
            bad = [status for done, status in results if done < steps and "has finished" not in status]
            if bad:
                raise RuntimeError(f"round {r + 1}: {len(bad)} sessions failed: {bad[0]!r}")
            took, done = time.perf_counter() - t0, sum(d for d, _ in results)
            time.sleep(leave_wait)  # every page's leave reaches the server
            after.append(resident_mib(pid))
            print(f"round {r + 1}: {sessions} sessions, {done} Steps ({steps} each unless the run ended) in "
                  f"{took:.0f} s; "
                  f"resident {after[-1]:.0f} MiB after the leaves", flush=True)
    return after


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pair", default="embedded", choices=["embedded", "embedded-head", "lookup", "toy"])
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workers", type=int, default=4, help="sessions at once")
    parser.add_argument("--leave-wait", type=float, default=20.0, help="seconds for the page leaves to land")
    parser.add_argument("--max-growth", type=float, default=0.05)
    args = parser.parse_args(argv)
    if min(args.sessions, args.steps, args.rounds, args.workers) < 1 or args.rounds < 2:
        parser.error("sessions, steps and workers must be at least 1, rounds at least 2")
    after = soak(args.pair, args.sessions, args.steps, args.rounds, args.workers, args.leave_wait)
    growth = after[-1] / after[0] - 1
    print(f"resident memory: {after[0]:.0f} MiB after round 1, {after[-1]:.0f} MiB after round {len(after)}: "
          f"{100 * growth:+.1f} % (limit {100 * args.max_growth:.0f} %)")
    return 0 if growth <= args.max_growth else 1


if __name__ == "__main__":
    sys.exit(main())
