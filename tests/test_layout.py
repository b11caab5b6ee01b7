"""The import graph follows the declared architecture (ARCHITECTURE.md, "Dependency direction").

Every module's imports are read with `ast` (no import is executed, so a lazy import inside a
function counts as much as one at the top; imports under `if TYPE_CHECKING:` do not, they never run):

- no cycle among decoding modules;
- cli -> lab/compare -> run -> models -> verify, never backwards: decoding.verify imports no
  decoding.models/run/cli/lab/compare, decoding.models no decoding.run/cli/lab/compare,
  decoding.run no decoding.cli;
- decoding imports no gradio, viz or ui; viz imports no torch, gradio, transformers or tokenizers.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("decoding", "viz", "ui")

# (importer prefix, forbidden import prefixes)
FORBIDDEN = [
    ("decoding.verify", ("decoding.models", "decoding.run", "decoding.cli", "decoding.lab", "decoding.compare")),
    ("decoding.models", ("decoding.run", "decoding.cli", "decoding.lab", "decoding.compare")),
    ("decoding.run", ("decoding.cli",)),
    ("decoding", ("gradio", "viz", "ui")),
    ("viz", ("torch", "gradio", "transformers", "tokenizers", "decoding.models", "ui")),
]


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_only(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return True
    return False


def imports_of(source: str, name: str, is_package: bool) -> set[str]:
    """Absolute names of every module `source` imports (relative imports resolved against `name`)."""
    tree = ast.parse(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found: set[str] = set()
    for node in ast.walk(tree):
        if _type_checking_only(node, parents):
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = name.split(".") if is_package else name.split(".")[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join(package + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)  # `from pkg import module`
    return found


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """module -> the imported names (only those that are modules of this repository, plus externals as named)."""
    files = {module_name(p, root): p for pkg in PACKAGES for p in sorted((root / pkg).rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        raw = imports_of(path.read_text(), name, path.name == "__init__.py")
        graph[name] = {m if m in files else m for m in raw}
    return graph


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def wrong_arrows(graph: dict[str, set[str]]) -> list[str]:
    bad = []
    for importer, imported in graph.items():
        for scope, forbidden in FORBIDDEN:
            if _within(importer, scope):
                bad += [f"{importer} -> {m}" for m in sorted(imported) if any(_within(m, f) for f in forbidden)]
    return bad


def cycles(graph: dict[str, set[str]], prefix: str = "decoding") -> list[list[str]]:
    """Every cycle found by depth-first search among the modules under `prefix` (each reported once)."""
    nodes = {m for m in graph if _within(m, prefix)}
    edges = {m: sorted(n for n in graph[m] if n in nodes and n != m) for m in nodes}
    state: dict[str, int] = {}
    found: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in edges[node]:
            if state.get(nxt) == 1:
                found.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = 2

    for node in sorted(nodes):
        if node not in state:
            visit(node, [])
    return found


def test_the_graph_sees_the_packages():
    graph = import_graph()
    assert {"decoding.verify.registry", "decoding.run.engine", "decoding.models.pairs", "viz.tree_figure"} <= set(graph)
    assert "decoding.verify.entry" in graph["decoding.verify.registry"]
    assert "decoding.verify.walk" in graph["decoding.verify.entry"]  # a lazy import inside a method counts


def test_no_import_cycle_among_decoding_modules():
    found = cycles(import_graph())
    assert not found, "import cycles: " + "; ".join(" -> ".join(c) for c in found)


def test_no_import_against_the_declared_direction():
    bad = wrong_arrows(import_graph())
    assert not bad, "imports against the declared direction: " + ", ".join(bad)


@pytest.mark.parametrize(
    "module,line,expected",
    [
        ("decoding/verify/laws.py", "from decoding.run.engine import Run",
         "decoding.verify.laws -> decoding.run.engine"),
        ("decoding/verify/rules/sd.py", "from ...models import pairs", "decoding.verify.rules.sd -> decoding.models"),
        ("decoding/models/toy.py", "import decoding.run.config", "decoding.models.toy -> decoding.run.config"),
        ("decoding/run/engine.py", "import gradio as gr", "decoding.run.engine -> gradio"),
        ("viz/layout.py", "def f():\n    import torch", "viz.layout -> torch"),
    ],
)
def test_a_deliberately_wrong_import_is_caught(tmp_path, module, line, expected):
    """The checks can fail: a copy of the repository's packages with one added wrong import."""
    for pkg in PACKAGES:
        if (ROOT / pkg).is_dir():
            for src in (ROOT / pkg).rglob("*.py"):
                dst = tmp_path / src.relative_to(ROOT)
                dst.parent.mkdir(parents=True, exist_ok=True)
                dst.write_text(src.read_text())
    target = tmp_path / module
    target.write_text(target.read_text() + "\n" + line + "\n")
    assert expected in wrong_arrows(import_graph(tmp_path))


def test_a_deliberate_cycle_is_caught(tmp_path):
    for src in (ROOT / "decoding").rglob("*.py"):
        dst = tmp_path / src.relative_to(ROOT)
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_text(src.read_text())
    sampling = tmp_path / "decoding/verify/sampling.py"
    sampling.write_text(sampling.read_text() + "\nfrom decoding.verify import laws\n")  # laws imports sampling
    found = cycles(import_graph(tmp_path))
    assert any({"decoding.verify.laws", "decoding.verify.sampling"} <= set(c) for c in found), found
