"""The import graph follows the declared architecture (ARCHITECTURE.md, "Dependency direction").

Every module's imports are read with `ast` (no import is executed, so a lazy import inside a
function counts as much as one at the top; imports under `if TYPE_CHECKING:` do not, they never run):

- no cycle among decoding modules;
- cli -> lab/compare -> run -> models -> verify, never backwards: decoding.verify imports no
  decoding.models/run/cli/lab/compare, decoding.models no decoding.run/cli/lab/compare,
  decoding.run no decoding.cli;
- decoding imports no gradio, viz or ui; viz imports no torch, gradio, transformers or tokenizers;
- bench (benchmarks, training, the app launched from outside) is the top: it may import app, ui, viz and
  decoding, and nothing imports bench; no module names a bench module in a string (a run-time import by
  name) except decoding/cli/handoff.py, which keeps `python -m decoding bench|train-head` working;
- no import cycle anywhere (app.py <-> ui was one);
- inside decoding.models: the lean and CUDA forwards and the TreeLM contract import no pair builder, head or hub
  module (the pairs are built on them, never the other way).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("decoding", "viz", "ui", "bench")
TOP_FILES = ("app.py",)  # modules outside the packages

# (importer prefix, forbidden import prefixes)
FORBIDDEN = [
    ("decoding.verify", ("decoding.models", "decoding.run", "decoding.cli", "decoding.lab", "decoding.compare")),
    ("decoding.models", ("decoding.run", "decoding.cli", "decoding.lab", "decoding.compare")),
    ("decoding.run", ("decoding.cli", "decoding.speed")),
    ("decoding.verify", ("decoding.speed",)),
    ("decoding.models", ("decoding.speed",)),
    ("decoding", ("gradio", "viz", "ui")),
    ("viz", ("torch", "gradio", "transformers", "tokenizers", "decoding.models", "ui")),
    ("decoding", ("bench", "app")),
    ("viz", ("bench", "app")),
    ("ui", ("bench", "app")),
    ("app", ("bench",)),
    # models/ by concern: the forward machinery (lean/, cuda/) and the contract know no pair, head or hub
    ("decoding.models.lean", ("decoding.models.head", "decoding.models.embedded", "decoding.models.hub",
                              "decoding.models.pairs", "decoding.models.cuda", "decoding.models.scoring")),
    ("decoding.models.cuda", ("decoding.models.head", "decoding.models.embedded", "decoding.models.hub",
                              "decoding.models.pairs", "decoding.models.scoring")),
    ("decoding.models.treelm", ("decoding.models.hf_treelm", "decoding.models.lean", "decoding.models.cuda",
                                "decoding.models.pairs")),
]
HANDOFF = "decoding.cli.handoff"  # the one module allowed to name bench's entry in a string


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
    files.update({module_name(root / f, root): root / f for f in TOP_FILES if (root / f).is_file()})
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


def named_bench_modules(root: Path = ROOT) -> list[str]:
    """`module: "bench...."` for each string constant naming a bench module outside bench (a run-time import
    by name, which `imports_of` cannot see), except in HANDOFF."""
    found = []
    for pkg_file in [*(p for pkg in PACKAGES if pkg != "bench" for p in (root / pkg).rglob("*.py")),
                     *(root / f for f in TOP_FILES)]:
        if not pkg_file.is_file() or module_name(pkg_file, root) == HANDOFF:
            continue
        for node in ast.walk(ast.parse(pkg_file.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("bench."):
                found.append(f"{module_name(pkg_file, root)}: {node.value!r}")
    return found


def cycles(graph: dict[str, set[str]], prefix: str = "") -> list[list[str]]:
    """Every cycle found by depth-first search among the modules under `prefix` (each reported once)."""
    nodes = {m for m in graph if not prefix or _within(m, prefix)}
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
    assert {"app", "bench.main", "bench.speed"} <= set(graph)
    assert "app" in graph["bench.app_step"] and "ui.session" in graph["bench.app_step"]  # bench may, as the top


def test_nothing_names_bench_but_the_handoff():
    found = named_bench_modules()
    assert not found, "run-time imports of bench by name: " + ", ".join(found)


def test_no_import_cycle_among_the_modules():
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
        ("decoding/cli/main.py", "from bench import speed", "decoding.cli.main -> bench"),
        ("ui/controls.py", "def f():\n    from bench.local_app import ROOT", "ui.controls -> bench.local_app"),
        ("ui/controls.py", "import app", "ui.controls -> app"),
        ("app.py", "from bench import app_step", "app -> bench"),
        ("decoding/models/lean/llama.py", "from decoding.models.head import weights",
         "decoding.models.lean.llama -> decoding.models.head.weights"),
        ("decoding/models/treelm.py", "from decoding.models.hf_treelm import HFTreeLM",
         "decoding.models.treelm -> decoding.models.hf_treelm"),
    ],
)
def test_a_deliberately_wrong_import_is_caught(tmp_path, module, line, expected):
    """The checks can fail: a copy of the repository's packages with one added wrong import."""
    copy_tree(tmp_path)
    target = tmp_path / module
    target.write_text(target.read_text() + "\n" + line + "\n")
    assert expected in wrong_arrows(import_graph(tmp_path))


def copy_tree(tmp_path: Path) -> None:
    """The repository's packages and top files, copied under `tmp_path` (to break one of them)."""
    sources = [p for pkg in PACKAGES if (ROOT / pkg).is_dir() for p in (ROOT / pkg).rglob("*.py")]
    for src in [*sources, *(ROOT / f for f in TOP_FILES)]:
        dst = tmp_path / src.relative_to(ROOT)
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_text(src.read_text())


def test_a_name_of_bench_outside_the_handoff_is_caught(tmp_path):
    copy_tree(tmp_path)
    target = tmp_path / "ui/controls.py"
    target.write_text(target.read_text() + '\nBENCH = importlib.import_module("bench.speed")\n')
    assert named_bench_modules(tmp_path) == ["ui.controls: 'bench.speed'"]


def test_the_app_ui_cycle_would_be_caught(tmp_path):
    """The cycle this layout once had (app.py's --bench-step imported ui/bench_app.py, which imported app)."""
    copy_tree(tmp_path)
    target = tmp_path / "ui/controls.py"
    target.write_text(target.read_text() + "\ndef f():\n    import app\n")
    assert any({"app", "ui.controls"} <= set(c) for c in cycles(import_graph(tmp_path)))


def test_a_deliberate_cycle_is_caught(tmp_path):
    for src in (ROOT / "decoding").rglob("*.py"):
        dst = tmp_path / src.relative_to(ROOT)
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_text(src.read_text())
    sampling = tmp_path / "decoding/verify/sampling.py"
    sampling.write_text(sampling.read_text() + "\nfrom decoding.verify import laws\n")  # laws imports sampling
    found = cycles(import_graph(tmp_path))
    assert any({"decoding.verify.laws", "decoding.verify.sampling"} <= set(c) for c in found), found
