"""Many users at once on the embedded pair (SmolLM2-135M + its int8 self-draft): 4 gradio_client sessions
x 5 Steps in parallel, each with its own prompt, seed and verifier, against the app served from this
process. Each session's exported trace must equal the same settings stepped alone (the handlers called
in this process, one session, its own run cache, nothing else running), timings aside.

Served here, not launched, so that the model is loaded once (the alone reference shares it): the rule
is one embedded-model process at a time on the 2-core machine."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

import app
from tests.served import served_here
from tests.ui.app_session import stepped_alone, stepped_remotely

pytestmark = pytest.mark.slow  # loads the embedded model; 20 Steps alone, then 20 at once
USERS, STEPS = 4, 5
PROMPTS = ("Why is the sky blue?", "Name three fruits.", "Write a haiku about rain.", "What is 2 + 2?")
VERIFIERS = ("rrs_wor", "sd", "spectr", "rrs")
BASE = dict(pair="embedded", target=None, draft=None, shape="branching per level", sequences=4, depth=4,
            temperature=1.0, top_k=0, top_p=1.0, max_new_tokens=48)


def settings(user: int) -> dict:
    verifier = VERIFIERS[user]
    return {**BASE, "prompt": PROMPTS[user], "seed": 200 + user, "verifier": verifier,
            "branching": "1,1,1" if verifier == "sd" else "2,2"}


def alone(user: int) -> tuple[str, dict]:
    """The same settings stepped alone through the handlers in this process: (last status, trace)."""
    return stepped_alone("embedded", settings(user), STEPS)


def served_user(url: str, user: int) -> tuple[str, dict]:
    return stepped_remotely(url, settings(user), STEPS)


@pytest.fixture(scope="module")
def url():
    demo, _ = app.build_page("embedded")
    with served_here(demo) as server:
        yield server.url


def test_four_users_at_once_each_get_the_run_they_would_get_alone(url):
    expected = [alone(user) for user in range(USERS)]
    assert len({json.dumps(trace, sort_keys=True) for _, trace in expected}) == USERS  # the users differ
    with ThreadPoolExecutor(max_workers=USERS) as pool:
        got = list(pool.map(lambda user: served_user(url, user), range(USERS)))
    for user in range(USERS):
        status, trace = got[user]
        assert "⚠️" not in status and status == expected[user][0], (user, status)
        assert f"Step {STEPS} of {STEPS}" in status
        assert trace == expected[user][1], f"user {user}'s trace differs from the same settings run alone"
