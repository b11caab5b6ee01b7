"""The docs match the code: ARCHITECTURE.md's folder tree names every Python module of app.py, ui/, viz/,
decoding/ and bench/ (one line each: what it is), and every repository file a doc cites exists (README.md,
ARCHITECTURE.md, docs/*.md): a reader who follows a path finds the file."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("ui", "viz", "decoding", "bench")
DOCS = (ROOT / "README.md", ROOT / "ARCHITECTURE.md", *sorted((ROOT / "docs").glob("*.md")))
SKIP = {".git", ".venv", "output", "__pycache__", ".pytest_cache", ".ruff_cache"}
ELSEWHERE = {"simulation.py", "algorithm.py", "algorithm_clean.py",  # files of the HSD authors' repository
             "cactus/cactus.py",  # the Cactus authors' (docs/verifiers.md §18)
             "mlx_lm/generate.py", "rejection_sampler_utils.py", "vllm/v1/worker/gpu/spec_decode/rejection_sampler.py",
             "vllm/v1/worker/gpu/spec_decode/rejection_sampler_utils.py", "ssd/utils/verify.py"}  # engines' (§19, §20)
CONTINUATION = 20  # a tree line indented this far continues the description above it


def repo_files() -> list[str]:
    return sorted(str(p.relative_to(ROOT)) for p in ROOT.rglob("*")
                  if p.is_file() and not SKIP & set(p.relative_to(ROOT).parts))


def modules() -> list[str]:
    """Every Python module the tree must name (packages' __init__.py aside)."""
    found = ["app.py"]
    for package in PACKAGES:
        found += [f for f in repo_files() if f.startswith(f"{package}/") and f.endswith(".py")
                  and not f.endswith("__init__.py")]
    return found


def tree_block() -> list[str]:
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    start = text.index("## The folder tree")
    block = text[text.index("```", start) + 3:]
    return block[:block.index("```")].splitlines()[1:]


def tree_paths() -> set[str]:
    """The paths the folder tree names: an entry's indent nests it under the folder entries above it;
    "a.py, b.py" names two; `<key>` stands for any name (rules/<key>.py: one file per verifier)."""
    paths, stack = set(), []  # stack: (indent, "folder/")
    for line in tree_block():
        indent = len(line) - len(line.lstrip(" "))
        if not line.strip() or indent >= CONTINUATION:
            continue
        names = re.match(r"[\w./<>*-]+(?:,\s*[\w./<>*-]+)*", line.strip()).group(0)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        prefix = "".join(folder for _, folder in stack)
        for name in (n.strip() for n in names.split(",")):
            paths.add(prefix + name.replace("<key>", "*"))
        if names.endswith("/") and "," not in names:
            stack.append((indent, names))
    return paths


def test_architecture_names_every_module():
    named = tree_paths()
    missing = [m for m in modules() if not any(fnmatch.fnmatch(m, pattern) for pattern in named)]
    assert not missing, f"ARCHITECTURE.md's folder tree does not name: {missing}"


def cited(text: str) -> set[str]:
    """Paths a doc cites: in `code` (with a / or a .py/.md/.js name), as a link target, or any bare *.md."""
    found = set(re.findall(r"\]\(([\w./<>*-]+)\)", text))
    for code in re.findall(r"`([^`\n]+)`", text):
        found |= {t for t in code.split() if re.fullmatch(r"[\w./<>*-]+\.(py|md|js|json|txt|toml|png)", t)
                  and ("/" in t or t.endswith((".py", ".md", ".js")))}
    found |= set(re.findall(r"\b[\w./-]+\.md\b", text))
    return {f for f in found if not f.startswith(("http", "../", "/")) and "." in f and f not in ELSEWHERE}


def exists(path: str, files: list[str]) -> bool:
    """A file of the repository is `path` or ends with /`path` (docs cite "rules/rrs.py" inside decoding/verify)."""
    pattern = path.replace("<key>", "*")
    return any(fnmatch.fnmatch(f, pattern) or fnmatch.fnmatch(f, f"*/{pattern}") for f in files)


def test_every_file_a_doc_cites_exists():
    files = repo_files()
    broken = {f"{doc.name}: {path}" for doc in DOCS for path in cited(doc.read_text(encoding="utf-8"))
              if not exists(path, files)}
    assert not broken, f"docs cite files that are not in the repository: {sorted(broken)}"


def test_the_readme_opens_with_the_registrys_counts():
    """The README's first count of verifiers is the registry's (it said fifteen when the registry had 18)."""
    from decoding.verify.registry import VERIFIERS

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    said = re.search(r"It ships (\d+) verification algorithms behind one registry: (\d+) token-level rules", text)
    tree = re.search(r"and (\d+) tree-level ones", text)
    levels = [entry.level for entry in VERIFIERS.values()]
    assert said and tree
    assert (int(said[1]), int(said[2]), int(tree[1])) == (len(levels), levels.count("node"), levels.count("tree"))


def test_the_readme_shows_the_layout_before_the_app():
    """A newcomer meets the code's layout early (it was at line 530 of 563)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert text.index("## Layout") < text.index("## The app:") < 8000
