"""`StepCosts`: what the parts of a speculative step cost on one machine, in milliseconds.

Why a type of its own: speed is decided where the code runs (docs/speed.md). The same tree that wins on a
GPU, where a verify of 8 rows costs about one row, loses on a CPU where 3 rows cost 2x one row. These
numbers are measured by `decoding.speed.calibrate` and read by the chooser (`decoding.speed.chooser`) and by
`DecodeConfig.adaptive`; they travel inside the config (and so the trace), which is what makes an adaptive
run replayable: the costs it decided from are part of its config, never re-timed. Plain data, no torch.
"""

from __future__ import annotations

from dataclasses import dataclass

Curve = tuple[tuple[int, float], ...]  # (rows, ms), rows ascending and distinct


def _check_curve(name: str, curve: Curve) -> None:
    rows = [r for r, _ in curve]
    if not curve or rows != sorted(set(rows)) or rows[0] < 1:
        raise ValueError(f"{name} must list (rows, ms) for distinct ascending rows >= 1, got {curve!r}")
    if any(not (ms >= 0.0 and ms < 1e7) for _, ms in curve):
        raise ValueError(f"{name} must hold finite non-negative milliseconds, got {curve!r}")


def at(curve: Curve, rows: int) -> float:
    """The curve at `rows`: linear between measured sizes, the nearest end's slope beyond them."""
    if len(curve) == 1 or rows <= curve[0][0]:
        return curve[0][1] if len(curve) == 1 or rows == curve[0][0] else _line(curve[0], curve[1], rows)
    for left, right in zip(curve, curve[1:], strict=False):
        if rows <= right[0]:
            return _line(left, right, rows)
    return max(curve[-1][1], _line(curve[-2], curve[-1], rows))


def _line(a: tuple[int, float], b: tuple[int, float], rows: int) -> float:
    return max(0.0, a[1] + (b[1] - a[1]) * (rows - a[0]) / (b[0] - a[0]))


@dataclass(frozen=True)
class StepCosts:
    """Milliseconds on one machine. target: one target forward over N rows (the tree's nodes, root included;
    N = 1 is plain decoding's forward). draft: one draft forward over a level's N parent nodes. The rest of a
    step (warp, verify, commit, bookkeeping), paid by every step, also a target-alone one: overhead +
    overhead_per_row x N (warping each node's p and q is a softmax over the vocabulary: on a 2-core CPU the
    rest more than doubled from 1 row to 7). draft_first: what a drafted step's first draft forward costs
    beyond `draft` at 1 parent (a separate draft model first catches up on the tokens the last step committed:
    the int8 self-draft's first level cost a few ms more than its later ones; about 0 for a draft head).
    Measured: docs/speed.md, "Calibration and the chooser (issue 26)"."""

    target: Curve
    draft: Curve
    overhead: float = 0.0
    overhead_per_row: float = 0.0
    draft_first: float = 0.0

    def __post_init__(self) -> None:
        _check_curve("target", self.target)
        _check_curve("draft", self.draft)
        for name in ("overhead", "overhead_per_row", "draft_first"):
            if not (0.0 <= getattr(self, name) < 1e7):
                raise ValueError(f"{name} must be finite non-negative milliseconds, got {getattr(self, name)!r}")
        if self.target[0][0] != 1:
            raise ValueError("the target curve must start at 1 row (plain decoding's forward)")

    def target_ms(self, rows: int) -> float:
        return at(self.target, rows)

    def draft_ms(self, rows: int) -> float:
        return at(self.draft, rows)

    def rest_ms(self, rows: int) -> float:
        """A step's rest (everything but the draft and target forwards) for a tree of `rows` rows."""
        return self.overhead + self.overhead_per_row * rows

    def alone_ms(self) -> float:
        """One token of the target alone: one one-row forward and a step's rest."""
        return self.target_ms(1) + self.rest_ms(1)

    def step_ms(self, levels: tuple[int, ...]) -> float:
        """A step drafting a Branching tree `levels` (every node at depth d draws levels[d] children) and
        verifying it in one target forward; () is a target-alone step."""
        ms, width, nodes = (self.draft_first if levels else 0.0), 1, 1
        for b in levels:
            ms += self.draft_ms(width)  # the level's draft forward over its `width` parents
            width *= b
            nodes += width
        return ms + self.target_ms(nodes) + self.rest_ms(nodes)

    def to_dict(self) -> dict:
        return {"target": [[r, ms] for r, ms in self.target], "draft": [[r, ms] for r, ms in self.draft],
                "overhead": self.overhead, "overhead_per_row": self.overhead_per_row, "draft_first": self.draft_first}

    @staticmethod
    def from_dict(d: dict) -> StepCosts:
        """Strict: a trace is untrusted input, so every value must have its JSON type (one ValueError). A
        trace written before overhead_per_row or draft_first existed reads them as 0 (its arithmetic then)."""
        try:
            curves = [tuple((int(r), float(ms)) for r, ms in d[name]) for name in ("target", "draft")]
            rest = [float(d.get(name, 0.0)) for name in ("overhead", "overhead_per_row", "draft_first")]
            return StepCosts(curves[0], curves[1], *rest)
        except (KeyError, TypeError, ValueError) as err:
            raise ValueError(f"costs: expected {{'target': [[rows, ms], ...], 'draft': [...], 'overhead': ms, "
                             f"'overhead_per_row': ms, 'draft_first': ms}}: {err}") from None
