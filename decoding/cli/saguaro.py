"""`python -m decoding saguaro [--fan-out F] [--scale C] [--depth D] [--json FILE]`: Saguaro sampling (SSD's draft
law q', decoding/verify/saguaro.py) on the lab's tiny languages, beside C = 1 (plain SD): each step's exact cache-hit
probability over whole chains (lab/saguaro.chain_hit), SD against q' certified, and the exact TV of the same drafts
verified against the raw q (the mistake; docs/verifiers.md §23). Exit 0 when SD against q' certifies lossless at
every C shown; 3 otherwise; 2 on bad input (one line)."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

from decoding.lab import language as lang
from decoding.lab.certify import Certificate, certify
from decoding.lab.saguaro import chain_hit
from decoding.verify import saguaro

EXIT_OK, EXIT_FAILED = 0, 3
# The tests' (F, C) (tests/verify/test_saguaro.py, §23.3). SSD's own fan-out default is 3 (Config.async_fan_out),
# but q' rescales F + 1 tokens: with F = 3 that is every token of the shipped languages (V <= 4), where q' = q.
# SSD's sampler_x has no default (None: no rescale, i.e. C = 1, which is printed beside C anyway).
FAN_OUT, SCALE, DEPTH = 1, 0.5, 2
MAX_DEPTH = 4  # every chain is enumerated: depth 4 takes about 2 s on the six languages, depth 5 twice that


@dataclass(frozen=True)
class Measured:
    """One C on every language: the exact cache-hit per language, SD against q' certified, and the same drafts
    verified against the raw q (exact TV only)."""

    scale: float
    hits: tuple[float, ...]
    certificate: Certificate
    raw_q: Certificate

    def to_json(self) -> dict:
        names = [case.language for case in self.certificate.cases]
        return {"scale": self.scale, "cache_hit": dict(zip(names, self.hits, strict=True)),
                "mean_cache_hit": sum(self.hits) / len(self.hits), "certificate": self.certificate.to_json(),
                "raw_q": {"max_tv": self.raw_q.max_tv, "tv": {case.language: case.tv for case in self.raw_q.cases}}}


def add_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--fan-out", default=FAN_OUT, metavar="F",
                   help=f"tokens the drafter caches per position; q' rescales q's top F + 1 (default {FAN_OUT})")
    p.add_argument("--scale", default=SCALE, metavar="C",
                   help=f"SSD's sampler_x: q's top F + 1 tokens times C, renormalised (default {SCALE}; 1 is SD)")
    p.add_argument("--depth", default=DEPTH, metavar="D", help=f"drafted chain length, 1 to {MAX_DEPTH} "
                   f"(default {DEPTH})")
    p.add_argument("--json", default=None, metavar="FILE", help="write the numbers here")


def settings(args: argparse.Namespace) -> tuple[int, float, int]:
    """(F, C, depth) from the flags; ValueError in one line when out of range (saguaro.check_settings says F, C)."""
    fan_out, scale, depth = _number(args.fan_out, int), _number(args.scale, float), _number(args.depth, int)
    saguaro.check_settings(fan_out, scale)
    if not isinstance(depth, int) or not 1 <= depth <= MAX_DEPTH:
        raise ValueError(f"--depth must be a whole number from 1 to {MAX_DEPTH} (every chain is enumerated), "
                         f"got {depth!r}")
    return fan_out, float(scale), depth


def _number(value, kind):
    """The flag's text as `kind`, or the text itself when it is not one (the checks then name it)."""
    try:
        return kind(value)
    except (TypeError, ValueError):
        return value


def measure(languages: list[lang.TinyLanguage], depth: int, fan_out: int, scale: float) -> Measured:
    shape = (1,) * depth
    hits = tuple(chain_hit(language, depth, fan_out, scale) for language in languages)
    good = certify(saguaro.entry(fan_out, scale), languages, shape)
    raw = certify(saguaro.entry(fan_out, scale, verified_against_q_prime=False), languages, shape, mc_trees=0)
    return Measured(scale, hits, good, raw)


def run(args: argparse.Namespace) -> int:
    fan_out, scale, depth = settings(args)
    languages = [lang.load(path) for path in lang.presets().values()]
    laws = [measure(languages, depth, fan_out, c) for c in dict.fromkeys((scale, 1.0))]
    print("\n".join(lines(languages, depth, fan_out, laws)))
    lossless = all(m.certificate.lossless for m in laws)
    if args.json:
        Path(args.json).write_text(json.dumps({
            "fan_out": fan_out, "scale": scale, "depth": depth, "languages": [x.name for x in languages],
            "laws": [m.to_json() for m in laws], "lossless": lossless}, indent=2), encoding="utf-8")
    return EXIT_OK if lossless else EXIT_FAILED


def lines(languages: list[lang.TinyLanguage], depth: int, fan_out: int, laws: list[Measured]) -> list[str]:
    """The table (a row per language: P(hit), E[tokens/step], TV against the raw q, per C), then the verdicts."""
    heads = [f"C={m.scale:g}" for m in laws]
    out = [f"Saguaro sampling (SSD), F = {fan_out}, {' against '.join(heads)} (plain SD): chains of depth {depth} "
           f"on {len(languages)} tiny languages (assets/languages)",
           f"  {'language':<20}{'V':>3}" + "".join(f"{'P(hit) ' + h:>16}" for h in heads)
           + "".join(f"{'E[tok] ' + h:>16}" for h in heads) + "".join(f"{'TV raw q ' + h:>16}" for h in heads)]
    for i, language in enumerate(languages):
        out.append(f"  {language.name:<20}{language.V:>3}" + "".join(f"{m.hits[i]:>16.4f}" for m in laws)
                   + "".join(f"{m.certificate.cases[i].expected_tokens:>16.4f}" for m in laws)
                   + "".join(f"{m.raw_q.cases[i].tv:>16.4f}" for m in laws))
    out.append(f"  {'mean':<23}" + "".join(f"{sum(m.hits) / len(m.hits):>16.4f}" for m in laws))
    for m in laws:
        out.append(_verdict(m))
    same = [x.name for x in languages if x.V <= fan_out + 1]
    if same:
        out.append(f"note: F + 1 >= V on {', '.join(same)}: q' = q there (Saguaro is plain SD)")
    return out


def _verdict(m: Measured) -> str:
    cert, raw = m.certificate, m.raw_q
    mc = "Monte Carlo " + ("DISAGREES" if any(c.flagged for c in cert.monte_carlo) else "agrees")
    worst = max(raw.cases, key=lambda case: case.tv)
    where = f" ({worst.language})" if not raw.exact_ok else " (no loss: q' = q on these rows)"
    return (f"C={m.scale:g}: SD against q' {'LOSSLESS (certified)' if cert.lossless else 'NOT lossless'}, max TV "
            f"{cert.max_tv:.1e} over {cert.n_trees} drafted chains, {mc}; the same drafts verified against the raw "
            f"q: max TV {raw.max_tv:.4f}{where}")
