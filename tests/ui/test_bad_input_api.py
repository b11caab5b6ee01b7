"""What a hostile client can send to the launched app's Step and import endpoints (through gradio_client,
the values travelling as JSON, as a browser's or a script's would): each gets a ⚠️ status line that says
what is wrong, and a valid Step on the same session works right after (the server keeps serving).

The app is launched with tight caps, so the caps set by the flags are shown to be the ones enforced."""

from __future__ import annotations

import time

import pytest
from gradio_client import handle_file

from tests.served import TOY, served
from tests.ui.app_session import AppSession

pytestmark = pytest.mark.slow  # launches the app (about 20 s on a busy 2-core machine) and makes ~60 calls
FLAGS = ("--max-nodes", "40", "--max-depth", "6", "--max-branch", "5", "--max-new-tokens", "64",
         "--max-prompt-chars", "2000")
VALID = dict(pair="toy", target=None, draft=None, prompt="the cat", verifier="rrs", shape="branching per level",
             branching="3,2", sequences=4, depth=4, temperature=0.8, top_k=0, top_p=1.0, seed=2, max_new_tokens=6)
SEQUENCES = "K sequences x depth"


@pytest.fixture(scope="module")
def url():
    with served(*TOY, *FLAGS, log_name="app-bad-input.log") as server:
        yield server.url


def plain(status: str) -> str:
    return status.replace("\\", "")  # the status is Markdown with user text escaped


def assert_still_serving(session: AppSession) -> None:
    status = session.step(VALID)
    assert "⚠️" not in status and "Step 1 of 1" in status, status


@pytest.mark.parametrize("change, message", [
    (dict(prompt=""), "the prompt is empty"),
    (dict(prompt=" \n\t  "), "the prompt is empty"),
    (dict(prompt=None), "the prompt is empty"),
    (dict(prompt="the cat " * 125_000), "the prompt has 1000000 characters; this server's limit is 2000"),
    (dict(branching="6"), "a node would have 6 children; this server's limit is 5 per node"),
    (dict(branching="1,1,1,1,1,1,1"), "the tree is 7 levels deep; this server's limit is 6"),
    (dict(branching="5,5,2"), "the tree would have up to 80 nodes; this server's limit is 40"),
    (dict(shape=SEQUENCES, sequences=9, depth=2, verifier="spectr"), "K sequences must be between 1 and 5, got 9"),
    (dict(shape=SEQUENCES, sequences=2, depth=7, verifier="spectr"), "depth must be between 1 and 6, got 7"),
    (dict(max_new_tokens=65), "max new tokens must be between 1 and 64, got 65"),
    (dict(max_new_tokens=10**12), "max new tokens must be between 1 and 64"),
    (dict(temperature=-1), "temperature must be between 0 and 2, got -1"),
    (dict(temperature="NaN"), "temperature must be a finite number"),
    (dict(temperature=1e9), "temperature must be between 0 and 2, got 1000000000"),
    (dict(temperature="hot"), "temperature must be a number"),
    (dict(top_p=0), "top-p must be between 0.05 and 1, got 0"),
    (dict(top_p=1.5), "top-p must be between 0.05 and 1, got 1.5"),
    (dict(top_k=-1), "top-k must be between 0 and 1000000, got -1"),
    (dict(top_k=2.5), "top-k must be a whole number"),
    (dict(seed=[1, 2]), "seed must be a number"),
    (dict(branching="a,b"), "tree shape must be comma-separated positive integers"),
    (dict(branching="0"), "tree shape must be comma-separated positive integers"),
    (dict(branching="-1"), "tree shape must be comma-separated positive integers"),
    (dict(verifier="__import__('os')"), "unknown verifier"),
    (dict(pair="custom", target="/no/such/model", draft="/no/such/draft"), "not found"),
])
def test_a_bad_step_gives_a_clear_message_and_the_next_step_works(url, change, message):
    session = AppSession(url)
    status = session.step({**VALID, **change})
    assert status.startswith("⚠️") and message in plain(status), status
    assert_still_serving(session)


@pytest.mark.parametrize("body, message", [
    (b"not json at all", "not a JSON file"),
    (b'{"format": "specscope-trace", "version": 99}', "version 99 is not supported"),
    (b"[" * 100_000 + b"]" * 100_000, "nests objects/lists more than"),
    (b"\xff\xfe\x00garbage", "not UTF-8"),
])
def test_a_bad_trace_file_gives_a_clear_message_and_the_next_step_works(url, tmp_path, body, message):
    path = tmp_path / "bad.json"
    path.write_bytes(body)
    session = AppSession(url)
    status = session.client.predict(handle_file(str(path)), api_name="/import_trace")[0]
    assert status.startswith("⚠️") and message in plain(status), status
    assert_still_serving(session)


def test_compare_walks_over_the_cap_are_refused_through_the_api_at_once(url):
    """The issue's call: /step with compare on, nine verifiers and compare_mc=100000 (it held an embedded-pair
    server for 140 s). This server's cap is the default, 2,000 walks: refused in well under 2 s."""
    session = AppSession(url)
    nine = ["rrs", "rrs_wor", "spectr", "khisti_is", "hu_greedy", "pointmass", "gls", "ot_optimal", "traversal"]
    start = time.perf_counter()
    status = session.client.predict(**VALID, compare=True, compare_keys=nine, compare_mc=100000, api_name="/step")[0]
    assert time.perf_counter() - start < 2, status
    assert status.startswith("⚠️") and "100000 Monte-Carlo walks per compared verifier; this server's limit is " \
        "2000" in plain(status), status
    assert_still_serving(session)
