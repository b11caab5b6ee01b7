"""Tiny languages: a context-dependent target p and draft q over a few tokens, read from a small file.

File format (JSON):
    {"vocab": ["a", "b", "c"],
     "target": {"": [.5, .3, .2], "0": [...], "0,1": [...]},
     "draft":  {"": [...], ...}}
A key is the comma-joined token ids of the prefix after the step's root ("" is the root itself). A
prefix with no row of its own uses the row of its longest listed prefix, so `{"": p}` alone is the
context-free single-node case. Rows must be finite, non-negative and hold positive mass; a row that
does not sum to 1 is normalised and a note says so (the lab shows the notes).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch

Prefix = tuple[int, ...]
F64 = torch.float64
SUM_TOLERANCE = 1e-9  # a row summing to 1 within this is taken as is (no note)


@dataclass(frozen=True)
class TinyLanguage:
    name: str
    vocab: tuple[str, ...]
    target: dict[Prefix, torch.Tensor]  # prefix -> [V] float64 p(. | prefix)
    draft: dict[Prefix, torch.Tensor]  # prefix -> [V] float64 q(. | prefix)
    notes: tuple[str, ...] = ()

    @property
    def V(self) -> int:
        return len(self.vocab)

    def p(self, prefix: Prefix) -> torch.Tensor:
        """[V] target law after `prefix` (longest listed prefix)."""
        return _lookup(self.target, prefix)

    def q(self, prefix: Prefix) -> torch.Tensor:
        """[V] draft law after `prefix` (longest listed prefix)."""
        return _lookup(self.draft, prefix)

    def text(self, tokens: Prefix) -> str:
        """Token ids as their vocabulary strings, e.g. "a b"."""
        return " ".join(self.vocab[t] for t in tokens)

    def to_dict(self) -> dict:
        """The file format (plain JSON data)."""
        return {
            "name": self.name,
            "vocab": list(self.vocab),
            "target": {_key(k): v.tolist() for k, v in self.target.items()},
            "draft": {_key(k): v.tolist() for k, v in self.draft.items()},
        }


def _lookup(rows: dict[Prefix, torch.Tensor], prefix: Prefix) -> torch.Tensor:
    for n in range(len(prefix), -1, -1):
        row = rows.get(tuple(prefix[:n]))
        if row is not None:
            return row
    raise KeyError("no root row")  # unreachable: validation requires the "" row


def _key(prefix: Prefix) -> str:
    return ",".join(str(t) for t in prefix)


def load(path: str | Path) -> TinyLanguage:
    """Read and validate a language file; ValueError with one clear line on anything wrong."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"language file {str(path)!r} not found") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"cannot read language file {str(path)!r}: {err}") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"language file {str(path)!r} is not valid JSON: {err}") from None
    return from_dict(data, name=data.get("name", path.stem) if isinstance(data, dict) else path.stem)


def from_dict(data: object, name: str = "language") -> TinyLanguage:
    """Validate the file format's data (see the module docstring) into a TinyLanguage."""
    if not isinstance(data, dict):
        raise ValueError("a language is a JSON object with keys vocab, target, draft")
    vocab = data.get("vocab")
    if not isinstance(vocab, list) or len(vocab) < 2 or not all(isinstance(t, str) for t in vocab):
        raise ValueError("'vocab' must be a list of at least 2 token strings")
    if len(set(vocab)) != len(vocab):
        raise ValueError(f"'vocab' has repeated tokens: {vocab}")
    notes: list[str] = []
    target = _rows(data.get("target"), "target", len(vocab), notes)
    draft = _rows(data.get("draft"), "draft", len(vocab), notes)
    return TinyLanguage(str(data.get("name", name)), tuple(vocab), target, draft, tuple(notes))


def _rows(rows: object, side: str, V: int, notes: list[str]) -> dict[Prefix, torch.Tensor]:
    if not isinstance(rows, dict) or not rows:
        raise ValueError(f"'{side}' must be an object of rows keyed by prefix, e.g. {{\"\": [...]}}")
    if "" not in rows:
        raise ValueError(f"'{side}' needs the root row \"\" (the prefix right after the step's root)")
    return {_prefix(key, side, V): _row(value, f"{side}[{key!r}]", V, notes) for key, value in rows.items()}


def _prefix(key: object, side: str, V: int) -> Prefix:
    if not isinstance(key, str):
        raise ValueError(f"'{side}' key {key!r} must be a string of comma-joined token ids")
    if key == "":
        return ()
    try:
        prefix = tuple(int(part) for part in key.split(","))
    except ValueError:
        raise ValueError(f"'{side}' key {key!r} must be comma-joined token ids like \"0,1\"") from None
    if any(not 0 <= t < V for t in prefix):
        raise ValueError(f"'{side}' key {key!r} names a token id outside 0..{V - 1}")
    return prefix


def _row(values: object, where: str, V: int, notes: list[str]) -> torch.Tensor:
    if not isinstance(values, list) or len(values) != V:
        raise ValueError(f"{where} must be a list of {V} probabilities (one per vocab token)")
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        raise ValueError(f"{where} must hold numbers only, got {values}")
    row = torch.tensor(values, dtype=F64)  # [V]
    return normalise_row(row, where, notes)


def normalise_row(row: torch.Tensor, where: str, notes: list[str]) -> torch.Tensor:
    """Check one [V] row (finite, non-negative, positive mass) and normalise it, noting when it had to."""
    if not bool(torch.isfinite(row).all()):
        raise ValueError(f"{where} holds a non-finite value: {row.tolist()}")
    if bool((row < 0).any()):
        raise ValueError(f"{where} holds a negative probability: {row.tolist()}")
    total = float(row.sum())
    if not total > 0:
        raise ValueError(f"{where} has no mass (all zeros)")
    if abs(total - 1.0) > SUM_TOLERANCE:
        notes.append(f"{where} summed to {total:.6g}; normalised")
    return row / total


def random_language(seed: int, V: int, depth: int, name: str | None = None) -> TinyLanguage:
    """A seeded context-dependent language: its own p and q row for every prefix up to `depth`.

    Rows are Dirichlet(0.8) draws; about a third of the rows get one zero (different tokens in p and
    q), so the adversarial cases q(x) = 0 < p(x) and p(x) = 0 < q(x) come up.
    """
    generator = torch.Generator().manual_seed(seed)
    target: dict[Prefix, torch.Tensor] = {}
    draft: dict[Prefix, torch.Tensor] = {}
    for prefix in _prefixes(V, depth):
        p, q = _dirichlet(generator, V), _dirichlet(generator, V)
        if torch.rand((), generator=generator) < 1 / 3:
            i, j = torch.randperm(V, generator=generator)[:2].tolist()
            p[i], q[j] = 0.0, 0.0
        target[prefix], draft[prefix] = p / p.sum(), q / q.sum()
    vocab = tuple("abcdefghijklmnopqrstuvwxyz"[i] if i < 26 else f"t{i}" for i in range(V))
    return TinyLanguage(name or f"random(seed={seed}, V={V})", vocab, target, draft)


def _prefixes(V: int, depth: int) -> list[Prefix]:
    out: list[Prefix] = [()]
    frontier: list[Prefix] = [()]
    for _ in range(depth):
        frontier = [pre + (t,) for pre in frontier for t in range(V)]
        out.extend(frontier)
    return out


def _dirichlet(generator: torch.Generator, V: int) -> torch.Tensor:
    gamma = torch._standard_gamma(torch.full((V,), 0.8, dtype=F64), generator=generator)  # [V]
    return gamma + 1e-12  # keeps every row's mass positive


PRESETS_DIR = Path(__file__).resolve().parents[2] / "assets" / "languages"


def presets() -> dict[str, Path]:
    """Shipped languages by name (file stem), in file-name order."""
    return {path.stem: path for path in sorted(PRESETS_DIR.glob("*.json"))}
