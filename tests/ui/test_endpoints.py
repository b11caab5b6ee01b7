"""The app's API as a script sees it (gradio_client on the launched toy app): exactly the endpoints named in
ui/endpoints.py and in the README's "Scripting the app" table, no `/partial_3`; the README's example runs
as printed; the old `/export` name still works; and every endpoint that starts a run refuses values over
the server's caps with the same message (one boundary: ui.session.configure)."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest
from gradio_client import Client

from tests.served import ROOT
from tests.ui.app_session import AppSession, arguments
from ui.endpoints import ENDPOINTS, TOOLS

pytestmark = pytest.mark.slow  # launches the app once, shared with test_mcp (conftest's api_server)
README = ROOT / "README.md"
SECTION = "## Scripting the app"
OVER = dict(pair="toy", target=None, draft=None, prompt="the cat", verifier="rrs", shape="branching per level",
            branching="3,3,3", sequences=2, depth=3, temperature=0.8, top_k=0, top_p=1.0, seed=2, max_new_tokens=6)
REFUSAL = "the tree would have up to 39 nodes; this server's limit is 25"


@pytest.fixture(scope="module")
def url(api_server):
    return api_server.url


def readme_section(path: Path = README) -> str:
    body = path.read_text(encoding="utf-8")
    start = body.index(SECTION)
    return body[start: body.index("\n## ", start + len(SECTION))]


def readme_endpoints() -> set[str]:
    """The names in the section's table (its rows start with | `/name` |)."""
    return set(re.findall(r"^\| `/(\w+)` \|", readme_section(), flags=re.MULTILINE))


def test_the_api_lists_exactly_the_registry_and_the_readme(url):
    info = Client(url, verbose=False).view_api(return_format="dict", print_info=False)
    listed = {name.lstrip("/") for name in info["named_endpoints"]}
    assert listed == set(ENDPOINTS), listed ^ set(ENDPOINTS)
    assert readme_endpoints() == set(ENDPOINTS), readme_endpoints() ^ set(ENDPOINTS)
    assert not info["unnamed_endpoints"]
    assert set(TOOLS) <= set(ENDPOINTS)


def test_step_and_run_take_the_controls_by_name(url):
    """The parameters are named after Controls' fields and the compare options, in this order: a new input
    is a deliberate change here, never a silent shift of a script's positional arguments."""
    from dataclasses import fields

    from ui.session import Controls

    named = Client(url, verbose=False).view_api(return_format="dict", print_info=False)["named_endpoints"]
    controls = [f.name for f in fields(Controls)]
    for endpoint in ("/step", "/run"):
        parameters = named[endpoint]["parameters"]
        assert [p["parameter_name"] for p in parameters] == [*controls, "compare", "compare_keys", "compare_mc"]
        assert all(p["parameter_has_default"] for p in parameters)
    assert [p["parameter_name"] for p in named["/compare_runs"]["parameters"]] == [*controls, "compare_keys",
                                                                                    "seeds"]


def test_the_readme_example_runs_as_printed(url):
    code = re.search(r"```python\n(.*?)```", readme_section(), flags=re.DOTALL).group(1)
    assert 'Client("http://127.0.0.1:7860/")' in code
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(code.replace("http://127.0.0.1:7860/", url), {})  # noqa: S102 - the README's own example
    lines = [line for line in out.getvalue().splitlines() if not line.startswith("Loaded as API")]
    status, (steps, lossless) = lines[0], lines[-2:]  # the status line is two Markdown lines
    assert status.startswith("**Step 3 of 3**") and "rrs\\_wor" in status and "tree 3,2" in status, status
    assert steps.startswith("3 steps: ") and steps[len("3 steps: "):].strip(), steps  # and the generated text
    assert lossless == "True"


def test_the_old_export_name_still_exports_the_trace(url):
    session = AppSession(url)
    session.step(dict(OVER, branching="2,2"))
    new = session.exported()
    file, _ = session.client.predict(api_name="/export")
    old = Path(file["path"] if isinstance(file, dict) else file).read_text(encoding="utf-8")
    assert len(json.loads(old)["steps"]) == len(new["steps"]) == 1


def _step(session: AppSession) -> str:
    return session.call("/step", OVER)[0]


def _run(session: AppSession) -> str:
    return session.call("/run", OVER)[0]


def _compare_step(session: AppSession) -> str:
    extra = {"compare the selected verifiers on every Step": True, "verifiers to compare": ["rrs", "spectr"]}
    return session.client.predict(*_with(session, "/step", extra), api_name="/step")[0]


def _compare_runs(session: AppSession) -> str:
    extra = {"verifiers to compare": ["rrs", "spectr"], "seeds": 1}
    return session.client.predict(*_with(session, "/compare_runs", extra), api_name="/compare_runs")[0]


def _step_record(session: AppSession) -> str:
    with pytest.raises(Exception) as err:  # gr.Error: the client raises with the message
        session.client.predict("the cat", "rrs", "3,3,3", 0.8, 0, 1, api_name="/step_record")
    return f"⚠️ {err.value}"


def _with(session: AppSession, endpoint: str, extra: dict) -> list:
    parameters = session.client.view_api(return_format="dict", print_info=False)["named_endpoints"][endpoint]
    args = arguments(parameters["parameters"], OVER)
    return [extra.get(p["label"], a) for p, a in zip(parameters["parameters"], args, strict=True)]


@pytest.mark.parametrize("call", [_step, _run, _compare_step, _compare_runs, _step_record],
                         ids=["step", "run", "compare step", "compare_runs", "step_record"])
def test_every_endpoint_that_starts_a_run_refuses_a_tree_over_the_caps_alike(url, call):
    status = call(AppSession(url))
    assert status.startswith("⚠️") and REFUSAL in status.replace("\\", ""), status
