"""A user's own verifier, from a local Python file named on the command line (never from the web page).

The file defines, at module level:
    LAW          one of the registry's candidate laws ("iid", "without_replacement", "hub",
                 "topk_plus_random", "topk", "any"): how the candidates it verifies are drawn;
    verify(p, q, candidates, generator) -> decoding.verify.verdict.NodeVerdict
    conditional(p, q, candidates) -> (accept [k], residual [V])   (the exact law, as the registry's)
and optionally NAME, TITLE, DESCRIPTION, LOSSLESS (default True: what it claims, and what the bonus
token at a leaf follows) and MAX_CANDIDATES. The file is imported, then probed on a few (p, q, candidates)
cases; anything wrong is one line naming the function and what it returned (CustomVerifierError).

The loaded entry is a registry-compatible `Verifier` marked `custom = True`. Nothing global changes on
load: `registry_with` returns a new dict; `register_custom(path, registry)` adds to the registry it is
handed, and only the app's launch (`--verifier-file`) calls it, explicitly, before serving anyone.
"""

from __future__ import annotations

import importlib.util
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import torch

from decoding.verify import laws
from decoding.verify.entry import Verifier
from decoding.verify.sampling import make_generator
from decoding.verify.verdict import NodeVerdict

PROBE_SEEDS = (0, 1, 2)
F64 = torch.float64


class CustomVerifierError(ValueError):
    """A custom verifier file that cannot be used; the message is one line."""


@dataclass(frozen=True)
class CustomVerifier(Verifier):
    source: str = ""  # the file it came from

    custom = True  # the app's menus show a "custom" badge


def load_custom(path: str | Path) -> CustomVerifier:
    """Import `path`, check its names, probe its functions; CustomVerifierError on anything wrong."""
    path = Path(path)
    module = _import(path)
    entry = _entry(module, path)
    probe(entry)
    return entry


def _import(path: Path):
    where = f"custom verifier file {str(path)!r}"
    if not path.is_file():
        raise CustomVerifierError(f"{where} not found (a local .py file)")
    if path.suffix != ".py":
        raise CustomVerifierError(f"{where} must be a Python file ending in .py")
    name = "specscope_custom_" + re.sub(r"\W", "_", path.stem)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise CustomVerifierError(f"{where} cannot be imported")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except SyntaxError as err:
        raise CustomVerifierError(f"{where}: syntax error at line {err.lineno}: {err.msg}") from None
    except Exception as err:
        raise CustomVerifierError(f"{where}: importing it raised {type(err).__name__}: {err}") from None
    return module


def _entry(module, path: Path) -> CustomVerifier:
    where = f"custom verifier file {str(path)!r}"
    law = getattr(module, "LAW", None)
    if law not in laws.LAWS:
        raise CustomVerifierError(f"{where}: LAW must be one of {', '.join(laws.LAWS)}, got {law!r}")
    for fn in ("verify", "conditional"):
        if not callable(getattr(module, fn, None)):
            args = "p, q, candidates, generator" if fn == "verify" else "p, q, candidates"
            raise CustomVerifierError(f"{where}: missing function {fn}({args})")
    name = str(getattr(module, "NAME", "custom_" + re.sub(r"\W", "_", path.stem)))
    max_k = getattr(module, "MAX_CANDIDATES", 2 if law == "hub" else None)
    return CustomVerifier(
        name=name,
        title=str(getattr(module, "TITLE", f"{name} (custom file {path.name})")),
        lossless=bool(getattr(module, "LOSSLESS", True)),
        law=law,
        max_candidates=max_k,
        description=str(getattr(module, "DESCRIPTION", (module.__doc__ or "").strip().split("\n")[0])),
        paper=f"custom file {path}",
        verify=module.verify,
        conditional=module.conditional,
        source=str(path),
    )


def probe_cases() -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(p, q) [V] pairs to probe with: the worked example of docs/verifiers.md §12 and an adversarial one."""
    return [
        (torch.tensor([0.50, 0.30, 0.15, 0.05], dtype=F64), torch.tensor([0.20, 0.50, 0.20, 0.10], dtype=F64)),
        (torch.tensor([0.0, 0.6, 0.4, 0.0], dtype=F64), torch.tensor([0.25, 0.25, 0.0, 0.5], dtype=F64)),
    ]


def probe(entry: CustomVerifier) -> None:
    """Call conditional and verify on a few drawn candidate tuples; refuse garbage with one line."""
    k = min(2, entry.max_candidates or 2)
    for p, q in probe_cases():
        for seed in PROBE_SEEDS:
            generator = make_generator(seed)
            candidates = laws.sample(entry.law, q, k, generator)
            _check_conditional(entry, p, q, candidates)
            _check_verify(entry, p, q, candidates, generator)


def _call(entry: CustomVerifier, fn: str, *args):
    try:
        return getattr(entry, fn)(*args)
    except Exception as err:
        raise CustomVerifierError(f"{entry.name}: {fn}(p, q, candidates={list(args[2])}) raised "
                                  f"{type(err).__name__}: {err}") from None


def _check_conditional(entry: CustomVerifier, p: torch.Tensor, q: torch.Tensor, candidates: list[int]) -> None:
    out = _call(entry, "conditional", p, q, candidates)
    head = f"{entry.name}: conditional(p, q, candidates={candidates}) returned"
    if not (isinstance(out, tuple) and len(out) == 2 and all(isinstance(t, torch.Tensor) for t in out)):
        raise CustomVerifierError(f"{head} {type(out).__name__}, expected tensors (accept [k], residual [V])")
    accept, residual = out
    if tuple(accept.shape) != (len(candidates),) or tuple(residual.shape) != (p.shape[0],):
        raise CustomVerifierError(f"{head} shapes {tuple(accept.shape)} and {tuple(residual.shape)}, "
                                  f"expected ({len(candidates)},) and ({p.shape[0]},)")
    a, r = accept.to(F64), residual.to(F64)
    if not (bool(a.isfinite().all()) and bool(r.isfinite().all())):
        raise CustomVerifierError(f"{head} non-finite values: accept {a.tolist()}, residual {r.tolist()}")
    if bool((a < -1e-12).any()) or float(a.sum()) > 1 + 1e-9 or bool((r < -1e-12).any()):
        raise CustomVerifierError(f"{head} accept {a.tolist()} (must be >= 0, sum <= 1), residual {r.tolist()}")
    stop = 1.0 - float(a.sum())
    if stop > 1e-9 and not math.isclose(float(r.sum()), 1.0, abs_tol=1e-6):
        raise CustomVerifierError(f"{head} a residual summing to {float(r.sum()):.6g} (must be a law: sum 1)")


def _check_verify(entry: CustomVerifier, p, q, candidates: list[int], generator: torch.Generator) -> None:
    out = _call(entry, "verify", p, q, candidates, generator)
    head = f"{entry.name}: verify(p, q, candidates={candidates}, generator) returned"
    if not isinstance(out, NodeVerdict):
        raise CustomVerifierError(f"{head} {type(out).__name__}, expected decoding.verify.verdict.NodeVerdict")
    if out.accepted is not None and not (isinstance(out.accepted, int) and 0 <= out.accepted < len(candidates)):
        raise CustomVerifierError(f"{head} accepted={out.accepted!r}, expected None or a candidate index")
    if not (isinstance(out.token, int) and 0 <= out.token < p.shape[0]):
        raise CustomVerifierError(f"{head} token={out.token!r}, expected a token id in 0..{p.shape[0] - 1}")


def registry_with(entry: Verifier, base: Mapping[str, Verifier]) -> dict[str, Verifier]:
    """A new registry: `base` plus `entry` (refused if its key is taken); `base` is left as it is."""
    if entry.name in base:
        raise CustomVerifierError(f"custom verifier name {entry.name!r} is taken by the registry; set NAME in the file")
    return {**base, entry.name: entry}


def register_custom(path: str | Path, registry: dict[str, Verifier]) -> str:
    """Load `path` and add it to `registry` (the caller's, passed explicitly: the app's launch); its key."""
    entry = load_custom(path)
    registry.update(registry_with(entry, registry))
    return entry.name


def is_custom(entry: object) -> bool:
    return bool(getattr(entry, "custom", False))


def register_files(paths: list[str], registry: dict[str, Verifier]) -> tuple[list[str], list[str]]:
    """The app's launch-time `--verifier-file` flags: (registered keys, one line per refused file).

    A bad file never stops the launch: the built-ins are still served and the line is shown.
    """
    keys, problems = [], []
    for path in paths:
        try:
            keys.append(register_custom(path, registry))
        except CustomVerifierError as err:
            problems.append(f"--verifier-file ignored: {err}")
    return keys, problems
