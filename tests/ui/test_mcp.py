"""`app.py --mcp`: the launched app serves Gradio's MCP server; an `mcp` client connects over its streamable
HTTP endpoint, lists exactly the tools of ui.endpoints.TOOLS, each described by its docstring, and calls
them: certify says rrs_wor is lossless and greedy is not, node_acceptance matches decoding.verify's own
numbers, and step_record refuses a tree over the server's caps with the page's message."""

from __future__ import annotations

import asyncio
import inspect
import json

import pytest
import torch

from decoding.verify import optimal
from decoding.verify.theory import routes as theory
from ui import api_tools
from ui.endpoints import TOOLS

pytestmark = pytest.mark.slow  # the app launched once with --mcp, shared with test_endpoints (conftest's api_server)
mcp = pytest.importorskip("mcp", reason="the mcp package (requirements.txt) serves and reads the MCP endpoint")
P, Q = [0.5, 0.3, 0.15, 0.05], [0.2, 0.5, 0.2, 0.1]


@pytest.fixture(scope="module")
def url(api_server):
    return api_server.url + "gradio_api/mcp/"


def session_calls(url: str, calls: list[tuple[str, dict]]) -> tuple[list, list]:
    """(the listed tools, each call's result) over one MCP session."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    async def go():
        async with streamablehttp_client(url) as (read, write, _), ClientSession(read, write) as session:
            await session.initialize()
            tools = (await session.list_tools()).tools
            return tools, [await session.call_tool(name, args) for name, args in calls]
    return asyncio.run(go())


def text(result) -> str:
    return "".join(c.text for c in result.content)


def test_the_mcp_server_lists_the_tools_and_answers_them(url):
    calls = [("certify", {"verifier": "rrs_wor", "language": "worked_example", "shape": "2,2"}),
             ("certify", {"verifier": "greedy", "language": "worked_example", "shape": "2"}),
             ("node_acceptance", {"p": P, "q": Q, "k": 2, "law": "without_replacement"}),
             ("step_record", {"prompt": "the cat", "verifier": "rrs", "branching": "3,3,3"}),
             ("step_record", {"prompt": "the cat", "verifier": "rrs", "branching": "2,2", "seed": 3, "steps": 2})]
    tools, (lossless, lossy, node, refused, step) = session_calls(url, calls)
    assert sorted(t.name for t in tools) == sorted(TOOLS)
    for tool in tools:  # the docstring's first line, and each parameter's line from its Args section
        doc = inspect.getdoc(getattr(api_tools, tool.name, None) or api_tools.step_tool(None))
        assert tool.description.startswith(doc.splitlines()[0])
        assert all(tool.inputSchema["properties"][name].get("description") for name in tool.inputSchema["properties"])
    good, bad = json.loads(text(lossless)), json.loads(text(lossy))
    assert good["verifier"] == "rrs_wor" and good["lossless"] is True and good["max_tv"] < 1e-9
    assert bad["lossless"] is False and bad["max_tv"] > 1e-3
    node = json.loads(text(node))
    p, q = torch.tensor(P, dtype=torch.float64), torch.tensor(Q, dtype=torch.float64)
    assert node["optimal_acceptance"] == pytest.approx(optimal.optimal_acceptance(p, q, 2, "without_replacement"))
    assert node["verifiers"]["rrs_wor"]["acceptance"] == pytest.approx(theory.acceptance("rrs_wor", p, q, 2).value)
    assert node["verifiers"]["rrs_wor"]["acceptance"] <= node["optimal_acceptance"] + 1e-12
    assert refused.isError and "the tree would have up to 39 nodes; this server's limit is 25" in text(refused)
    record = json.loads(text(step))
    assert record["index"] == 1 and record["verifier"] == "rrs" and len(record["nodes"]) == 7 and record["text"]
