"""What a step's story says that its record does not (viz.narrate.About): whether the verifier is lossy and
why, which draft drafted, whether q is the draft's untempered law, the shape's widths. Read from the registry
and the trace's config; no gradio here, so the replay file and the lesson (ui/replay_file.py, ui/lesson.py)
tell the story in the page's words without loading the page."""

from __future__ import annotations

from decoding.run.schema import Trace
from decoding.verify import laws
from decoding.verify.registry import VERIFIERS
from viz.narrate import About

# Why a lossy verifier's text does not follow p, said once at the end of its story.
LOSSY_WHY = {
    "greedy": "it keeps a draft only when it is the target's argmax, so its text follows argmax p, not p "
              "(the same only at temperature 0).",
    "typical": "it keeps any candidate the target finds typical (p above min(ε, δ·exp(−H))), so likely drafts "
               "pass more often than p would pick them.",
    "typical_medusa": "it keeps the longest typical path (p above min(ε, δ·exp(−H)) at each node), so likely "
                      "drafts pass more often than p would pick them.",
}


def about(key: str, trace: Trace | None) -> About:
    """What the story says that the record does not: is the verifier lossy and why, which draft drafted."""
    entry = VERIFIERS.get(key)
    lossless = True if entry is None else bool(entry.lossless)
    why = LOSSY_WHY.get(key) or ("its output law differs from the target's (docs/verifiers.md)."
                                 if not lossless else "")
    kind = str((trace.models if trace is not None else {}).get("kind", ""))
    config = trace.config if trace is not None else {}
    temperature = float(config.get("temperature", 1.0))
    untempered = entry is not None and laws.draft_temperature(entry.law, temperature) != temperature
    widths = () if config.get("sequences") else tuple(int(w) for w in config.get("branching") or ())
    floor = float(config.get("min_confidence") or 0.0)
    return About(lossless=lossless, lossy_why=why, draft_kind=kind, untempered=untempered, widths=widths,
                 floor=floor, greedy=temperature == 0)
