"""Which verifiers a compare step may run on a tree shape, and which of them share a drafted tree."""

from __future__ import annotations

from decoding.run.config import DecodeConfig
from decoding.verify.registry import VERIFIERS, check_keys


def parse_keys(text: str) -> list[str]:
    """'rrs,rrs_wor' -> ['rrs', 'rrs_wor'], refusing unknown or repeated keys."""
    keys = [k.strip() for k in str(text).split(",") if k.strip()]
    if not keys:
        raise ValueError("--verifiers needs at least one verifier key, e.g. rrs,rrs_wor,spectr,pointmass")
    check_keys(keys)
    if len(set(keys)) != len(keys):
        raise ValueError(f"a verifier is listed twice in {text!r}")
    return keys


def check_selection(keys: list[str], config: DecodeConfig) -> None:
    """Refuse (never drop) a verifier the shape does not allow, with the config's own message."""
    for key in keys:
        try:
            config.with_(verifier=key)
        except ValueError as err:
            raise ValueError(f"cannot compare {key!r} on tree {config.shape_text()}: {err}") from None


def tree_group(key: str, run_key: str, config: DecodeConfig) -> str:
    """The drafted tree a verifier judges: its candidate law's; `any`-law rules judge the run verifier's.

    K independent sequences are i.i.d. drafts for everyone: one tree for all.
    """
    run_law = str(VERIFIERS[run_key].law)
    if config.sequences:
        return "sequences"
    law = str(VERIFIERS[key].law)
    return run_law if law == "any" else law


def groups_of(keys: list[str], run_key: str, config: DecodeConfig) -> list[str]:
    """Distinct tree groups, the run verifier's first (its tree gets forest ids first)."""
    ordered = [tree_group(run_key, run_key, config)] + [tree_group(k, run_key, config) for k in keys]
    return list(dict.fromkeys(ordered))


def allowed_keys(config: DecodeConfig, lossless_only: bool = True) -> list[str]:
    """Every registry key the shape allows (the app's default selection)."""
    out = []
    for key, entry in VERIFIERS.items():
        if lossless_only and not entry.lossless:
            continue
        try:
            config.with_(verifier=key)
        except ValueError:
            continue
        out.append(key)
    return out
