"""Many users at once on the launched app (toy pair): 8 gradio_client sessions x 10 Steps in parallel,
each with its own prompt, seed and verifier. Each session's exported trace must equal the same settings
run alone (the handlers called in this process, one session, nothing else running), timings aside; a
second identical round must leave the server's resident memory within 5 % of the first (a finished
session's state does not pile up); Reset leaves a session with no run."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import app
from decoding.run.schema import trace_to_json
from tests.served import TOY, served
from tests.ui.app_session import AppSession, stepped_alone, stepped_remotely
from ui import controls as ui_controls
from ui import trace_io

pytestmark = pytest.mark.slow  # two rounds of 80 Steps through the server
USERS, STEPS = 8, 10
PROMPTS = ("the cat", "a big dog sat on the mat .", "the dog ran", "a cat sat on", "the big mat", "a dog and",
           "the cat ran on the", "a big cat")
VERIFIERS = ("rrs", "rrs_wor", "sd", "spectr")
BASE = dict(pair="toy", target=None, draft=None, shape="branching per level", branching="3,2", sequences=4,
            depth=4, temperature=1.0, top_k=0, top_p=1.0, max_new_tokens=64)


def settings(user: int) -> dict:
    return {**BASE, "prompt": PROMPTS[user], "seed": 100 + user, "verifier": VERIFIERS[user % len(VERIFIERS)],
            "branching": "1,1,1" if VERIFIERS[user % len(VERIFIERS)] == "sd" else "3,2"}


def alone(user: int) -> tuple[str, dict]:
    """The same settings stepped alone through the handlers in this process: (last status, trace)."""
    return stepped_alone("toy", settings(user), STEPS)


def served_user(url: str, user: int) -> tuple[str, dict]:
    return stepped_remotely(url, settings(user), STEPS)


def round_of_users(url: str) -> list[tuple[str, dict]]:
    with ThreadPoolExecutor(max_workers=USERS) as pool:
        return list(pool.map(lambda user: served_user(url, user), range(USERS)))


def resident_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS line")


@pytest.fixture(scope="module")
def server():
    with served(*TOY, log_name="app-many-users.log") as launched:
        yield launched


def test_eight_users_at_once_each_get_their_own_run_and_memory_stays_flat(server):
    url, pid = server.url, server.pid
    expected = [alone(user) for user in range(USERS)]
    assert len({json.dumps(trace, sort_keys=True) for _, trace in expected}) == USERS  # the users differ
    first = round_of_users(url)
    after_first = resident_kib(pid)
    second = round_of_users(url)
    after_second = resident_kib(pid)
    for user in range(USERS):
        for got in (first[user], second[user]):
            assert "⚠️" not in got[0] and got[0] == expected[user][0], (user, got[0])
            assert got[1] == expected[user][1], f"user {user}'s trace differs from the same settings run alone"
    assert abs(after_second - after_first) <= 0.05 * after_first, (after_first, after_second)


def test_reset_leaves_the_session_with_no_run(server):
    session = AppSession(server.url)
    for n in (1, 2, 3):
        assert f"Step {n} of {n}" in session.step(settings(0))
    assert session.client.predict(api_name="/reset")[0].startswith("Reset.")
    exported, status = session.client.predict(api_name="/export")
    assert exported is None and "Nothing to export" in status  # the session holds no trace
    assert "Step 1 of 1" in session.step(settings(0))  # the same controls start over: no run was kept


def test_the_alone_reference_is_the_exported_trace(tmp_path):
    """The export endpoint writes exactly trace_to_json of the session's trace (so the comparison is fair)."""
    _, views = app.build_page("toy")
    out = views.named(ui_controls.step(views, views.inputs(None, **settings(1)), progress=None))
    path, _ = trace_io.export(out.session)
    assert Path(path).read_text(encoding="utf-8") == trace_to_json(out.session.trace)
