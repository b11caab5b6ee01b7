"""Benchmark (not a test): specscope against plain decoding and transformers' speculative paths.

    python -m bench speed [--quick] [--pair embedded] [--configs sd:1,1,1,1 rrs_wor:3,2,2]
        [--temperatures 0,0.8] [--prompts 4] [--repeats 3] [--max-new-tokens 40] [--threads N]
        [--paths fast,recorded,recorded-lazy[,recorded-eager]] [--also-pairs lookup ...]
        [--device cpu|cuda] [--json PATH] [--chart PATH.html]

For each case (prompt x repetition x temperature) every method runs once, in an order rotated from
case to case (interleaved, so a busy machine slows every method alike): (a) the target alone with
`model.generate`, (b) transformers' assisted generation with the same draft (`assistant_model=`),
(c) its prompt lookup (`prompt_lookup_num_tokens=`), then specscope's paths for each chosen verifier x
tree shape (bench_speed_methods.SPECSCOPE_PATHS):
  fast            record=False: emitted tokens only, no per-node records (what `generate` and FASTEST run);
  recorded        what the app runs: every step recorded (nodes, tests, p/q tops, exact E[tokens/step]) with
                  lazy theory, plus the exact and optimal acceptance (alpha, alpha*) of the one step the page
                  then shows, the last (a Run click; ui/decode.py);
  recorded-lazy   the same records with no theory at all (the records' own cost);
  recorded-eager  opt-in: the theory of every step in the step (the app before lazy theory; what a Step
                  click per step pays, since each step is shown).
Speeds are reported as ratios to `generate` within the same case (median and spread over cases); the
recorded runs also give block efficiency with a 95 % confidence interval, the exact expected tokens per
step (from the recorded p and q), and acceptance by depth (the exact alpha filled after the timing, for
the steps whose rows the run keeps). `--paths fast` times the fast path alone (quicker);
`--also-pairs KIND ...` adds each config's fast path on other built-in pairs sharing the target (e.g.
embedded vs embedded-head: two drafts compared in the same interleaved run, against the same generate).
Output: a markdown table, `--json PATH`, a plotly chart.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

from bench import speed_report as report
from bench.speed_methods import BASELINES, SPECSCOPE_PATHS, Case, Unavailable, specscope
from decoding.models.kinds import BUILT_IN, any_kind, built_in_kind
from decoding.run.config import DecodeConfig, parse_branching

PROMPTS_FILE = Path(__file__).resolve().parents[1] / "assets" / "bench_prompts.json"
DEFAULT_PROMPTS = 4  # prompts of PROMPTS_FILE timed without --prompts
QUICK = {"prompts": 2, "repeats": 2, "max_new_tokens": 12}
PATHS = ("fast", "recorded", "recorded-lazy")  # the default --paths (recorded-eager is opt-in)


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m bench speed", description=__doc__.split("\n")[0])
    ap.add_argument("--pair", default="embedded", type=any_kind, metavar="{" + ",".join([*BUILT_IN, "custom"]) + "}")
    ap.add_argument("--target", default=None, help="with --pair custom: target hub id or folder")
    ap.add_argument("--draft", default=None, help="with --pair custom: draft hub id or folder")
    ap.add_argument("--device", default="cpu", help="cpu, cuda, or auto")
    ap.add_argument("--configs", nargs="+", default=None,
                    help="verifier:tree[:adaptive|:conf=C] items, e.g. sd:1,1,1,1 sd:1,1,1,1:adaptive "
                         "sd:1,1,1,1:conf=0.3 (a minimum confidence, DecodeConfig.min_confidence) rrs_wor:3,2,2, or "
                         "'fastest': what decoding.fastest.fastest() chooses for --pair on this machine at each "
                         "temperature (calibrated first; cached) (default: FASTEST and rrs_wor:3,2,2)")
    ap.add_argument("--temperatures", default="0,0.8", help="comma-separated temperatures")
    ap.add_argument("--prompts", type=int, default=None,
                    help="how many prompts (default: 4 of assets/bench_prompts.json, every one of --prompts-file)")
    ap.add_argument("--prompts-file", type=Path, default=None,
                    help="a JSON file {\"prompts\": [{\"kind\", \"prompt\"}, ...]} instead (held-out prompts)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--max-new-tokens", type=int, default=40)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    ap.add_argument("--paths", default=",".join(PATHS), help="comma-separated specscope paths to time: "
                    "fast, recorded, recorded-lazy, recorded-eager (block efficiency and its CI need 'recorded')")
    ap.add_argument("--also-pairs", nargs="+", default=[], type=built_in_kind, metavar="KIND",
                    help="also time each config's fast path on these built-in pairs (same cases, interleaved)")
    ap.add_argument("--quick", action="store_true", help="about a minute: 2 prompts, 2 repeats, 12 tokens")
    ap.add_argument("--json", default=None, help="write every number to this JSON file")
    ap.add_argument("--chart", default=None, help="plotly chart HTML (default: next to --json, else none)")
    return ap


def parse_configs(items: list[str] | None) -> dict[str, DecodeConfig]:
    """'verifier:tree' items -> {label: DecodeConfig}; default FASTEST's config and a 3,2,2 rrs_wor tree."""
    if not items:
        from decoding.fastest import FASTEST

        fast = FASTEST[1]
        items = [f"{fast.verifier}:{fast.shape_text()}" + (":adaptive" if fast.adaptive else ""), "rrs_wor:3,2,2"]
    out = {}
    for item in items:
        verifier, sep, rest = item.partition(":")
        tree, _, flag = rest.partition(":")
        floor = _floor(flag)
        if not sep or not (flag in ("", "adaptive") or floor is not None):
            raise ValueError(f"a config is verifier:tree[:adaptive|:conf=C], e.g. sd:1,1,1,1 or sd:1,1,1,1:conf=0.3; "
                             f"got {item!r}")
        levels = parse_branching(tree, "--configs")
        out[item] = DecodeConfig(verifier=verifier, branching=levels, adaptive=flag == "adaptive",
                                 min_confidence=floor or 0.0)
    return out


def _floor(flag: str) -> float | None:
    """'conf=0.3' -> 0.3 (the config checks the range); None for anything else."""
    name, _, value = flag.partition("=")
    try:
        return float(value) if name == "conf" else None
    except ValueError:
        return None


def fastest_configs(pair, kind: str, temps: list[float]) -> dict[str, DecodeConfig]:
    """{label: config}: what fastest() chooses for this pair here at each temperature (the pair calibrated first,
    its product plan applied), labelled with the shape, e.g. 'fastest@T=0 sd:1,1' or 'fastest@T=0 target alone'."""
    from decoding.fastest import choose_for

    out = {}
    for t in temps:
        pick = choose_for(pair, kind, t, progress=lambda m: print(f"calibrating: {m}", file=sys.stderr))
        print(f"fastest() at T = {t}: {pick.choice.why()}", file=sys.stderr)
        out[f"fastest@T={t:g} {pick.choice.best.label()}"] = pick.config(t).with_(record=True)
    return out


def parse_temperatures(text: str) -> list[float]:
    try:
        temps = [float(t) for t in text.split(",")]
    except ValueError:
        raise ValueError(f"--temperatures takes comma-separated numbers like 0,0.8; got {text!r}") from None
    if not temps or any(not 0 <= t <= 10 for t in temps):
        raise ValueError(f"temperatures must be between 0 and 10, got {text!r}")
    return temps


def load_prompts(n: int | None, path: Path | None = None) -> list[dict]:
    """The first n prompts of `path` (default file: n = 4; a file of the user's: all of them when n is None)."""
    try:
        prompts = json.loads((path or PROMPTS_FILE).read_text(encoding="utf-8"))["prompts"]
        prompts = [{"kind": str(p["kind"]), "prompt": str(p["prompt"])} for p in prompts]
    except (KeyError, TypeError, json.JSONDecodeError) as err:
        raise ValueError(f"{path}: expected {{\"prompts\": [{{\"kind\", \"prompt\"}}, ...]}} ({err})") from None
    n = n if n is not None else (len(prompts) if path else DEFAULT_PROMPTS)
    if not 1 <= n <= len(prompts):
        raise ValueError(f"--prompts must be between 1 and {len(prompts)}")
    return prompts[:n]


def parse_paths(text: str) -> tuple[str, ...]:
    paths = tuple(p.strip() for p in text.split(",") if p.strip())
    if not paths or any(p not in SPECSCOPE_PATHS for p in paths):
        raise ValueError(f"--paths takes a comma-separated subset of {','.join(SPECSCOPE_PATHS)}; got {text!r}")
    return paths


def methods_of(configs: dict[str, DecodeConfig], paths: tuple[str, ...] = PATHS, also: dict | None = None) -> dict:
    """Every timed method by name: transformers' three and specscope's target alone, then specscope's chosen
    paths per config, then each config's fast path on the `also` pairs ({kind: pair})."""
    out = dict(BASELINES)
    for label, config in configs.items():
        out |= {f"specscope {path} {label}": specscope(config, path) for path in paths}
        for kind, other in (also or {}).items():
            out[report.other_pair_method(label, kind)] = on_pair(other, specscope(config, "fast"))
    return out


def on_pair(other, method):
    """`method` run on `other` instead of the benchmark's pair (same case)."""
    return lambda _pair, case: method(other, case)


def run_cases(pair, methods: dict, cases: list[tuple[str, Case]]) -> tuple[list[dict], dict[str, str]]:
    """Run every method on every case, rotating the order; rows of raw timings and unavailable methods."""
    rows, unavailable = [], {}
    names = list(methods)
    for i, (kind, case) in enumerate(cases):
        order = names[i % len(names):] + names[: i % len(names)]
        for name in order:
            if name in unavailable:
                continue
            try:
                timed = methods[name](pair, case)
            except Unavailable as why:
                unavailable[name] = str(why)
                continue
            rows.append(report.row(name, kind, i, case, timed))
        print(f"  case {i + 1}/{len(cases)} done", file=sys.stderr, flush=True)
    return rows, unavailable


def build_cases(pair, prompts: list[dict], temps: list[float], repeats: int, max_new: int) -> list[tuple[str, Case]]:
    cases = []
    for rep in range(repeats):
        for item in prompts:
            ids = tuple(pair.encode_prompt(item["prompt"], True))
            cases += [(item["kind"], Case(item["prompt"], ids, t, rep, max_new)) for t in temps]
    return cases


def warm_up(pair, methods: dict, case: Case) -> None:
    """One short untimed run of each method (first calls allocate caches and pick kernels)."""
    short = Case(case.prompt, case.ids, case.temperature, case.seed, 4)
    for method in methods.values():
        try:
            method(pair, short)
        except Unavailable:
            pass


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.quick:
        vars(args).update(QUICK)
    temps = parse_temperatures(args.temperatures)
    wants_fastest = bool(args.configs) and "fastest" in args.configs
    configs = parse_configs([c for c in args.configs if c != "fastest"] or None if wants_fastest else args.configs)
    paths = parse_paths(args.paths)
    prompts = load_prompts(args.prompts, args.prompts_file)
    args.prompts = len(prompts)  # what the report's settings say
    if args.threads:
        torch.set_num_threads(args.threads)
    from decoding.speed.plan import load_planned

    pair = load_planned(args.pair, target=args.target, draft=args.draft, device=args.device,
                            progress=lambda m: print(m, file=sys.stderr))
    also = {kind: load_planned(kind, device=args.device, progress=lambda m: print(m, file=sys.stderr))
            for kind in args.also_pairs if kind != args.pair}
    if wants_fastest:
        configs = fastest_configs(pair, args.pair, temps) | (configs if len(args.configs) > 1 else {})
    methods = methods_of(configs, paths, also)
    cases = build_cases(pair, prompts, temps, args.repeats, args.max_new_tokens)
    warm_up(pair, methods, cases[0][1])
    rows, unavailable = run_cases(pair, methods, cases)
    result = report.summarise(rows, unavailable, configs, temps, report.settings(args, pair, argv), list(also))
    print(report.markdown(result))
    report.write_outputs(result, args.json, args.chart)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
