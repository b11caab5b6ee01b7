"""The API-only endpoints (`gr.api`, no widget), also served as the MCP server's tools (`app.py --mcp`).

An agent or a script asks the exact questions specscope answers without driving the page: certify a
verifier at sequence level, one node's exact acceptance against alpha*, one decoding step's record on
the toy pair. Their docstrings are the tools' descriptions (Gradio's MCP server reads the Args and
Returns sections; each Returns line is one clause, Gradio joins them with commas), so they say exactly
what each takes and returns. Each returns a JSON string: an agent reads JSON, not Python's repr. The
step tool reads its settings through the app's one control boundary (ui.session.configure) with this
server's caps; the others are bounded here (small trees and vocabularies: the lab enumerates every drafted tree).
"""

from __future__ import annotations

import json

import gradio as gr
import torch

from decoding.lab import certify as certify_mod
from decoding.lab import language as lang
from decoding.run import engine
from decoding.run.config import parse_branching
from decoding.run.schema import step_to_dict
from decoding.speed.plan import load_planned
from decoding.verify import optimal
from decoding.verify.registry import VERIFIERS, lookup
from decoding.verify.theory import routes as theory
from ui.caps import Caps
from ui.endpoints import public
from ui.lab import check_size
from ui.session import configure

MAX_LAB_LEVELS, MAX_LAB_CHILDREN, MAX_V = 3, 3, 64  # certify enumerates every tree: keep it small
# and, within these, the lab's own cap on the trees enumerated (ui.lab.MAX_CERTIFY_WORK): 3,3,3 is ~1e23 trees
MAX_STEPS = 8


def certify(verifier: str, language: str = "worked_example", shape: str = "2,2",
            p: list[float] | None = None, q: list[float] | None = None) -> str:
    """Certify a verifier exactly: is the law of the tokens it emits the target's, on a tiny language and tree?

    Args:
        verifier: a verifier key: sd, rrs, rrs_wor, spectr, spechub, khisti_is, hu_greedy, pointmass, block, ...
        language: a tiny language: worked_example, context3, disjoint, near_deterministic or uniform_draft.
        shape: candidates per level of the drafted tree, e.g. "2,2" (at most 3 levels of at most 3, with few
            enough drafted trees to enumerate in seconds: a larger one is refused with the limit).
        p: optional target probabilities at the root, one per token of the language (renormalised).
        q: optional draft probabilities at the root, like p (give both or neither).
    Returns:
        A JSON object, the certificate as `certify --json` writes it
        verifier and lossless (true when the exact check and the Monte-Carlo check of its verify both pass)
        max_tv (the total variation between the emitted and the target joint law, lossless up to 1e-9)
        cases (the drafted trees checked) and worst_case
        expected_tokens and expected_accepted per step
    """
    entry = _verifier(verifier)
    tiny = _language(language, p, q)
    try:
        levels = parse_branching(shape, field="shape")
        if len(levels) > MAX_LAB_LEVELS or max(levels) > MAX_LAB_CHILDREN:
            raise ValueError(f"shape {shape!r}: at most {MAX_LAB_LEVELS} levels of at most {MAX_LAB_CHILDREN} "
                             "candidates")
        check_size(entry, tiny, levels)
        return json.dumps(certify_mod.certify(entry, [tiny], levels).to_json())
    except ValueError as err:
        raise gr.Error(str(err)) from None


def node_acceptance(p: list[float], q: list[float], k: int, law: str = "without_replacement") -> str:
    """One node's exact acceptance: alpha* for k candidates drawn by a law, and each node-level verifier using it.

    Args:
        p: the target's probabilities at the node, one per token (2 to 64 tokens; renormalised).
        q: the draft's probabilities at the node, same length as p (renormalised).
        k: how many candidates the draft proposes at the node (1 to 8).
        law: the candidate law: iid, without_replacement, hub, topk_plus_random, topk or any.
    Returns:
        A JSON object with law and k
        optimal_acceptance (alpha*: the most any verifier can accept with k candidates drawn by that law)
        membership_bound (P(the target's token is among the candidates): an upper bound on alpha*)
        verifiers: {key: {"acceptance", "method"}} for each node-level verifier of that law taking k candidates
    """
    p_row, q_row = _row(p, "p"), _row(q, "q")
    if p_row.shape != q_row.shape:
        raise gr.Error(f"p has {p_row.numel()} values and q {q_row.numel()}: give one per token for both")
    if isinstance(k, bool) or not 1 <= int(k) <= 8 or int(k) != k:
        raise gr.Error(f"k must be a whole number from 1 to 8, got {k!r}")
    k = int(k)
    try:
        out = {"law": law, "k": k, "optimal_acceptance": optimal.optimal_acceptance(p_row, q_row, k, law),
               "membership_bound": optimal.membership_bound(p_row, q_row, k, law), "verifiers": {}}
    except ValueError as err:
        raise gr.Error(str(err)) from None
    for key, entry in VERIFIERS.items():
        if entry.level != "node" or str(entry.law) != law:
            continue
        try:
            value = theory.acceptance(key, p_row, q_row, k)
        except ValueError:  # this verifier takes fewer candidates, or needs a larger vocabulary
            continue
        out["verifiers"][key] = {"acceptance": value.value, "method": value.method}
    return json.dumps(out)


def step_tool(caps: Caps):
    """`step_record` bound to this server's caps (the same refusals as the page's Step)."""
    def step_record(prompt: str = "the cat", verifier: str = "rrs_wor", branching: str = "3,2,2",
                    temperature: float = 0.8, seed: int = 0, steps: int = 1) -> str:
        """Decode on the toy pair (a 12-word language) and return the last step's full record.

        Args:
            prompt: words of the toy pair's 12-word language, e.g. "the cat".
            verifier: a verifier key (see certify); the tree shape must suit it (block: one chain, e.g. "1,1,1").
            branching: candidates per node at each depth, e.g. "3,2,2" (within this server's caps).
            temperature: sampling temperature, 0 (greedy) to 2.
            seed: the run's seed (the same seed gives the same steps).
            steps: how many steps to decode (1 to 8); the record of the last one is returned.
        Returns:
            A JSON object, the step's record as a trace file writes it
            nodes (id, parent, token, text, status, p and q of the token)
            visits (each verified node: its candidates, tests, alpha_exact and alpha_optimal, i.e. alpha*)
            accepted_path (node ids, root first) and emitted (the tokens this step adds, with their origin)
            expected_tokens (the exact E[tokens] of this step given its tree); and text, the text so far
        """
        if isinstance(steps, bool) or not 1 <= int(steps) <= MAX_STEPS:
            raise gr.Error(f"steps must be a whole number from 1 to {MAX_STEPS}, got {steps!r}")
        try:
            checked = configure(caps, dict(pair="toy", prompt=prompt, verifier=verifier, branching=branching,
                                           temperature=temperature, seed=seed, max_new_tokens=64))
            pair = load_planned("toy")
            run = engine.start(pair, checked.config, checked.controls.prompt)
            record = None
            for _ in range(int(steps)):
                record = run.step() or record
        except ValueError as err:
            raise gr.Error(str(err)) from None
        return json.dumps({**step_to_dict(record), "text": run.trace().text})
    return step_record


def _verifier(key: str):
    try:
        return lookup(key)
    except ValueError as err:
        raise gr.Error(str(err)) from err


def _language(name: str, p: list[float] | None, q: list[float] | None) -> lang.TinyLanguage:
    presets = lang.presets()
    if name not in presets:
        raise gr.Error(f"unknown language {name!r}; choose one of: {', '.join(presets)}")
    tiny = lang.load(presets[name])
    if p is None and q is None:
        return tiny
    if p is None or q is None:
        raise gr.Error("give both p and q (the root rows), or neither")
    p_row, q_row = _row(p, "p"), _row(q, "q")
    if p_row.numel() != tiny.V or q_row.numel() != tiny.V:
        raise gr.Error(f"the language {name!r} has {tiny.V} tokens ({', '.join(tiny.vocab)}): give p and q "
                       f"with one value each")
    return lang.TinyLanguage(tiny.name, tiny.vocab, {**tiny.target, (): p_row}, {**tiny.draft, (): q_row}, tiny.notes)


def _row(values: list[float], name: str) -> torch.Tensor:
    """A probability row from a list of numbers (renormalised); gr.Error with one line otherwise."""
    try:
        row = torch.tensor([float(v) for v in values], dtype=torch.float64)  # [V]
    except (TypeError, ValueError):
        raise gr.Error(f"{name} must be a list of numbers") from None
    if not 2 <= row.numel() <= MAX_V or not torch.isfinite(row).all() or (row < 0).any() or row.sum() <= 0:
        raise gr.Error(f"{name} must hold 2 to {MAX_V} finite, non-negative numbers with a positive sum")
    return row / row.sum()


def register(caps: Caps) -> None:
    """Add the tools to the Blocks being built (call inside `with gr.Blocks()`)."""
    for fn in (certify, node_acceptance, step_tool(caps)):
        gr.api(fn, **public(fn.__name__))
