"""The app's public API: every endpoint a script (`gradio_client`) or an agent (MCP) may call, named once.

The convention: an event a user would script is wired with `**endpoints.public("name")`; its name is
snake_case, a verb or `<panel>_<verb>`, and it is listed in ENDPOINTS with one line saying what it does.
The README's "Scripting the app" table lists the same names (tests/ui/test_endpoints.py compares the
three: this registry, the served `view_api()` and the README). Every other event is internal to the page
(a tab select, a widget toggle, a chained chart redraw, gr.State's per-page init): `hide_internal(demo)`
makes it private once the Blocks is built, so a new internal event can never leak into the API as
`/partial_9`. Why a registry: the names are a contract (a user's script), so they change in one place.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

ENDPOINTS: dict[str, str] = {
    "step": "One speculative step of this session's run (a new run when a control changed): status line, tree, "
            "text, inspector, compare view.",
    "run": "Step until the run finishes, streaming every step (cancel the job to stop it).",
    "stop": "After a Run was cancelled: redraw the step it left, with that step's exact theory.",
    "reset": "A new, empty session (its live run leaves the server's cache).",
    "scrub": "Replay step N (1-based) of this session from its records, with no model work.",
    "inspect_node": "One node of the shown step: p, q and the residual, and its tests in order.",
    "export_trace": "The session's trace as a JSON file (every step's records) and a status line.",
    "export_html": "The session's run as one self-contained HTML replay page (no server, no network: the story, "
                   "the tree, every node's figure and tests, every step) and a status line.",
    "import_trace": "Replay an uploaded trace file: every view drawn from its records; where this server can "
                    "re-run it, its run becomes the session's (Step continues it; outputs after the views: the "
                    "controls set to its settings).",
    "baseline": "Decode as many tokens with the target alone, for the speed comparison (run statistics).",
    "compare_allowed": "Every lossless verifier the controls' tree shape allows (the compare selection).",
    "compare_runs": "Each selected verifier decodes the whole prompt with the same seeds: tokens per target "
                    "forward with a confidence interval.",
    "lab_node": "The verifier lab at one node: each verifier's exact output law and acceptance against alpha*.",
    "lab_certify": "Certify one verifier on a tree shape over the lab's tiny language, at sequence level.",
    "share_link": "The link (a URL query) of the demo on screen, and the `python -m decoding generate` line that "
                  "decodes the same text.",
    # API-only endpoints (ui/api_tools.py), also the MCP server's tools: their docstrings describe them.
    "certify": "",
    "node_acceptance": "",
    "step_record": "",
}
LEGACY: dict[str, str] = {"export": "export_trace"}  # old name -> new: still callable, no longer listed
TOOLS = ("certify", "node_acceptance", "step_record")  # the endpoints served as MCP tools (app --mcp)


def public(name: str) -> dict[str, Any]:
    """The keyword arguments that publish an event as endpoint `name` (KeyError for an unlisted name)."""
    if name not in ENDPOINTS:
        raise KeyError(f"{name!r} is not in ui.endpoints.ENDPOINTS: list it there (and in the README) first")
    return {"api_name": name, "api_description": ENDPOINTS[name] or None}


def hide_internal(demo: gr.Blocks) -> None:
    """Every event not in ENDPOINTS becomes private (not listed, not callable by API clients); a LEGACY
    name stays callable but unlisted ("undocumented")."""
    for fn in demo.fns.values():
        if fn.api_name in LEGACY:
            fn.api_visibility = "undocumented"
        elif fn.api_name not in ENDPOINTS:
            fn.api_visibility = "private"


def only_tools(demo: gr.Blocks) -> None:
    """Keep only the TOOLS in the launched app's MCP server (Gradio 6 offers every public endpoint as a
    tool and has no per-event switch; the page's endpoints take widget values and return figures)."""
    server = demo.mcp_server_obj
    if server is None:
        return
    wanted = {f"/{name}" for name in TOOLS}
    server.tool_to_endpoint = {tool: ep for tool, ep in server.tool_to_endpoint.items() if ep in wanted}
