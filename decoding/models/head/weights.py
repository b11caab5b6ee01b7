"""A trained draft head on the target's own features (EAGLE-style, MLP only): a draft that costs ~1/10 of the target.

Why: on a 2-core CPU the int8 self-draft costs ~0.6-0.75 of a target forward, so speculation with it stays
about neutral (docs/speed.md, "Drafts that need no second model").
EAGLE (Li et al. 2024) drafts from the target's top-layer feature instead:
given the feature f_t that produced token x_{t+1}'s law and x_{t+1}'s embedding, a small network predicts
the next feature f_{t+1}, and the target's own lm_head turns it into q. Deeper draft nodes feed the head its
own predicted feature. Here the network is one fused input layer and one gated MLP block (no attention: f_t
already summarises the context); the head scores the first `head_size` token ids only (the most frequent
BPE merges, as fast_draft.TruncatedHead), q = 0 beyond them. q is whatever this function computes from the
context, fixed before a candidate is drawn, so every verifier stays exact (the target's law is untouched).

The weights ship in assets/draft_head/ with how they were trained (bench/train_head.py: the
target's own sampled answers to generated training prompts, none from the bench set).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

HEAD_DIR = Path(__file__).resolve().parents[3] / "assets" / "draft_head"
WEIGHTS, CONFIG = "head.safetensors", "head.json"


@dataclass(frozen=True)
class HeadConfig:
    hidden: int = 576  # the target's hidden size
    inner: int = 1536  # the MLP's width
    head_size: int = 8192  # how many token ids the draft scores (the first of ranked_ids.ranked_ids)
    eps: float = 1e-5


class DraftHead(nn.Module):
    """(feature f [.., hidden], token embedding e [.., hidden]) -> predicted next feature [.., hidden]."""

    def __init__(self, config: HeadConfig) -> None:
        super().__init__()
        self.config = config
        self.fc = nn.Linear(2 * config.hidden, config.hidden)
        self.norm = nn.RMSNorm(config.hidden, eps=config.eps)
        self.gate = nn.Linear(config.hidden, config.inner, bias=False)
        self.up = nn.Linear(config.hidden, config.inner, bias=False)
        self.down = nn.Linear(config.inner, config.hidden, bias=False)
        self.out_norm = nn.RMSNorm(config.hidden, eps=config.eps)

    def forward(self, f: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
        x = self.fc(torch.cat([f, e], dim=-1))  # [.., hidden]
        y = self.norm(x)
        x = x + self.down(F.silu(self.gate(y)) * self.up(y))
        return self.out_norm(x)  # [.., hidden]: in the space of the target's final-normed features


def draft_lm_rows(lm_head_weight: torch.Tensor, ids: torch.Tensor | int) -> torch.Tensor:
    """The head's output layer: the target's lm_head rows of the token `ids` it scores [H, hidden] (an int n: the
    first n ids; ranked_ids.py says which ids a head scores), rounded to float16 values
    (a copy, in the weight's dtype). The head's own weights ship in float16; with its output rows float16 values
    too, the native products keep the whole head in float16 panels, half the bytes a drafted level reads
    (few_rows.half_panels_where_exact). q moves by that rounding only (a logit by about 1e-3) and is still the law
    each node's candidates are drawn from: every verifier stays exact."""
    weight = lm_head_weight.detach()
    rows = weight[:ids] if isinstance(ids, int) else weight[ids.to(weight.device)]  # [H, hidden]
    return rows.to(torch.float16).to(weight.dtype)


def save_head(head: nn.Module, folder: Path, about: dict) -> None:
    """Weights (float16 safetensors) and config + how they were made (JSON); a fused head (fused.py) also writes
    its kind."""
    from safetensors.torch import save_file

    from decoding.models.head import fused

    folder.mkdir(parents=True, exist_ok=True)
    save_file({k: v.detach().to(device="cpu", dtype=torch.float16).contiguous() for k, v in head.state_dict().items()},
              str(folder / WEIGHTS))
    kind = {"kind": fused.KIND} if isinstance(head, fused.FusedHead) else {}
    (folder / CONFIG).write_text(json.dumps({**kind, "config": asdict(head.config), "about": about}, indent=1) + "\n")


def about(folder: Path = HEAD_DIR) -> dict:
    """head.json's "about": how the head was made (the command, data, training) and its card; {} where it has
    none. No torch."""
    return json.loads((folder / CONFIG).read_text()).get("about", {})


def card(folder: Path = HEAD_DIR) -> dict | None:
    """The head's card: head.json's "about" -> "held_out" (its "prompts", "count", "new_tokens" and "acceptance":
    {"shipped": the head it replaced, "new": this head}, each {temperature: {"by_depth", "nodes", "expected"}}),
    as the JSON has it; None where head.json has none (an older head, a user's own) or cannot be read. No torch."""
    try:
        held_out = about(folder)["held_out"]
        acceptance = held_out["acceptance"]
        both = [acceptance[side] for side in ("shipped", "new")]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):  # AttributeError: head.json not an object
        return None
    return held_out if all(isinstance(side, dict) and side for side in both) else None


KINDS = ("mlp", "fused")  # head.json's "kind" (absent: mlp, the heads shipped before the fused one)


def load_head(folder: Path = HEAD_DIR) -> nn.Module:
    """The shipped head (float32, eval mode): a DraftHead, or a FusedHead where head.json says kind "fused"; a
    clear error when the files are missing, do not fit, or name a kind this code does not know."""
    from safetensors.torch import load_file

    from decoding.models.head import fused

    try:
        about = json.loads((folder / CONFIG).read_text())
        kind = about.get("kind", "mlp")
    except (OSError, ValueError, AttributeError) as err:
        raise ValueError(f"the draft head in {folder} is missing or unreadable ({err})") from err
    if kind not in KINDS:
        raise ValueError(f"the draft head in {folder} is of kind {kind!r}, which this specscope cannot run (it "
                         f"knows {', '.join(KINDS)}): update specscope, or retrain it with python -m bench train-head")
    try:
        head = fused.FusedHead(fused.FusedConfig(**about["config"])) if kind == "fused" else \
            DraftHead(HeadConfig(**about["config"]))
        state = load_file(str(folder / WEIGHTS))
        head.load_state_dict({k: v.to(torch.float32) for k, v in state.items()})
    except (OSError, KeyError, TypeError, ValueError, RuntimeError) as err:
        raise ValueError(f"the draft head in {folder} is missing or unreadable ({err})") from err
    return head.eval().requires_grad_(False)
