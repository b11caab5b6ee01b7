"""Numbers, table, JSON and chart of `bench speed` (pure functions of the raw timing rows).

Ratios are taken within one case (same prompt, repetition and temperature, run back to back), then
summarised over cases by their median and spread (min, max): a busy machine moves absolute speeds a
lot and ratios much less.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

import torch

from decoding.run.config import DecodeConfig
from decoding.run.schema import StepRecord

Z95 = 1.959964


def row(method: str, kind: str, case_index: int, case, timed) -> dict:
    return {"method": method, "kind": kind, "case": case_index, "prompt": case.prompt[:60],
            "temperature": case.temperature, "repeat": case.seed, "tokens": timed.tokens,
            "seconds": timed.seconds, "tokens_per_second": timed.tokens_per_second,
            "record_seconds": sum(s.record_ms for s in timed.steps) / 1e3, "steps": list(timed.steps)}


def spread(values: list[float]) -> dict | None:
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def ratios(rows: list[dict], method: str, reference: str, temperature: float) -> dict | None:
    """tokens/s of `method` over `reference`, per case at this temperature: median and spread."""
    speed = {(r["method"], r["case"]): r["tokens_per_second"] for r in rows if r["temperature"] == temperature}
    cases = sorted({c for m, c in speed if m == method})
    return spread([speed[method, c] / speed[reference, c] for c in cases
                   if (reference, c) in speed and speed[reference, c] > 0])


def block_efficiency(steps: list[StepRecord]) -> dict:
    """Tokens per step (= per target forward) of untruncated steps, a 95 % CI, and the exact expectation."""
    whole = [s for s in steps if len(s.emitted) == len(s.accepted_path)]  # not cut by EOS or the budget
    tokens = [len(s.emitted) for s in whole]
    expected = [s.expected_tokens for s in whole if s.expected_tokens is not None]
    mean = statistics.fmean(tokens) if tokens else 0.0
    half = Z95 * statistics.stdev(tokens) / math.sqrt(len(tokens)) if len(tokens) > 1 else math.inf
    exact = statistics.fmean(expected) if expected else None
    return {"steps": len(tokens), "mean": mean, "ci95": [mean - half, mean + half], "exact_expected": exact,
            "exact_within_ci": exact is not None and abs(exact - mean) <= half}


def acceptance_by_depth(steps: list[StepRecord]) -> list[dict]:
    """Per depth of the verifying node: visits, accepted, rate, mean exact alpha (when recorded)."""
    rows = defaultdict(list)
    for s in steps:
        for v in s.visits:
            rows[s.nodes[v.node].depth].append(v)
    out = []
    for depth, visits in sorted(rows.items()):
        alphas = [v.alpha_exact for v in visits if v.alpha_exact is not None]
        accepted = sum(v.accepted is not None for v in visits)
        out.append({"depth": depth, "visits": len(visits), "accepted": accepted, "rate": accepted / len(visits),
                    "alpha_exact": statistics.fmean(alphas) if alphas else None})
    return out


def config_result(rows: list[dict], label: str, config: DecodeConfig, t: float) -> dict:
    fast, recorded, lazy, eager = (f"specscope {path} {label}"
                                   for path in ("fast", "recorded", "recorded-lazy", "recorded-eager"))
    steps = [s for r in rows if r["method"] == recorded and r["temperature"] == t for s in r["steps"]]
    rec_rows = [r for r in rows if r["method"] == recorded and r["temperature"] == t]
    record_share = [r["record_seconds"] / r["seconds"] for r in rec_rows if r["seconds"] > 0]
    return {
        "label": label, "verifier": config.verifier, "tree": config.shape_text(), "temperature": t,
        "block_efficiency": block_efficiency(steps), "acceptance_by_depth": acceptance_by_depth(steps),
        "fast_vs_generate": ratios(rows, fast, "generate", t),
        "recorded_vs_generate": ratios(rows, recorded, "generate", t),
        "fast_vs_assisted": ratios(rows, fast, "assisted", t),
        "fast_vs_target_alone": ratios(rows, fast, "target_alone", t),  # speculation's own share of the speed
        "recorded_time_over_fast": ratios(rows, fast, recorded, t),  # time per token, recorded / fast
        "lazy_time_over_fast": ratios(rows, fast, lazy, t),  # records without the theory, over the fast path
        "eager_time_over_fast": ratios(rows, fast, eager, t),  # every step's theory in the step (opt-in path)
        "record_share_of_recorded": spread(record_share),
    }


def other_pair_method(label: str, kind: str) -> str:
    """Name of a config's fast path timed on another pair (`bench speed --also-pairs`)."""
    return f"specscope fast {label} [{kind}]"


def other_pairs(rows: list[dict], configs: dict[str, DecodeConfig], temps: list[float], kinds: list[str]) -> list:
    """Each config's fast path on each other pair: speed ratio to generate, and to the main pair's fast path."""
    return [{"pair": kind, "label": label, "temperature": t,
             "fast_vs_generate": ratios(rows, other_pair_method(label, kind), "generate", t),
             "fast_vs_main_pair_fast": ratios(rows, other_pair_method(label, kind), f"specscope fast {label}", t)}
            for t in temps for label in configs for kind in kinds]


def summarise(rows: list[dict], unavailable: dict[str, str], configs: dict[str, DecodeConfig],
              temps: list[float], settings: dict, also_pairs: list[str] | None = None) -> dict:
    methods = list(dict.fromkeys(r["method"] for r in rows))
    speeds = {m: {str(t): spread([r["tokens_per_second"] for r in rows if r["method"] == m
                                  and r["temperature"] == t]) for t in temps} for m in methods}
    baselines = {m: {str(t): ratios(rows, m, "generate", t) for t in temps}
                 for m in ("assisted", "prompt_lookup", "target_alone")}
    return {
        "settings": settings,
        "unavailable": unavailable,
        "tokens_per_second": speeds,
        "baselines_vs_generate": baselines,
        "configs": [config_result(rows, label, cfg, t) for t in temps for label, cfg in configs.items()],
        "other_pairs": other_pairs(rows, configs, temps, also_pairs or []),
        "runs": [{k: v for k, v in r.items() if k != "steps"} for r in rows],
    }


def settings(args, pair, argv) -> dict:
    return {"command": "python -m bench speed " + " ".join(argv or sys.argv[1:]),
            "pair": pair.describe(), "device": pair.device, "threads": torch.get_num_threads(),
            "prompts": args.prompts, "repeats": args.repeats, "max_new_tokens": args.max_new_tokens,
            "temperatures": args.temperatures, "quick": bool(args.quick), "torch": torch.__version__}


BASELINE_NAMES = {"assisted": "transformers assisted", "prompt_lookup": "transformers prompt_lookup",
                  "target_alone": "specscope target alone (no draft, same forward)"}


def _fmt(s: dict | None) -> str:
    return "—" if not s else f"{s['median']:.2f}x [{s['min']:.2f}-{s['max']:.2f}]"


def markdown(result: dict) -> str:
    head = ["| T | method | x generate (median [min-max]) | x assisted | x target alone | block eff. (95% CI) | "
            "exact E[tokens/step] | acceptance by depth | recorded / fast time | lazy-theory / fast time | "
            "eager-theory / fast time |",
            "|---" * 11 + "|"]
    lines = []
    for m, by_t in result["baselines_vs_generate"].items():
        lines += [f"| {t} | {BASELINE_NAMES.get(m, m)} | {_fmt(s)} | | | | | | | | |" for t, s in by_t.items() if s]
    for c in result["configs"]:
        be, acc = c["block_efficiency"], c["acceptance_by_depth"]
        ci = f"{be['mean']:.2f} [{be['ci95'][0]:.2f}, {be['ci95'][1]:.2f}]" if be["steps"] else "— (no recorded path)"
        exact = f"{be['exact_expected']:.2f}" if be["exact_expected"] is not None else "—"
        depth = " ".join(f"{a['rate']:.2f}" for a in acc)
        lines.append(f"| {c['temperature']} | specscope {c['label']} (fast) | {_fmt(c['fast_vs_generate'])} | "
                     f"{_fmt(c['fast_vs_assisted'])} | {_fmt(c.get('fast_vs_target_alone'))} | {ci} | {exact} | "
                     f"{depth} | "
                     f"{_fmt(c['recorded_time_over_fast'])} | {_fmt(c['lazy_time_over_fast'])} | "
                     f"{_fmt(c.get('eager_time_over_fast'))} |")
    lines += [f"| {o['temperature']} | specscope {o['label']} (fast) on pair {o['pair']} | "
              f"{_fmt(o['fast_vs_generate'])} | {_fmt(o['fast_vs_main_pair_fast'])} x the main pair's fast path | "
              "| | | | | | |" for o in result.get("other_pairs", [])]
    notes = [f"- {m}: unavailable ({why})" for m, why in result["unavailable"].items()]
    base = result["tokens_per_second"].get("generate", {})
    notes += [f"- plain generate() at T = {t}: {s['median']:.1f} tokens/s (median of {s['n']} runs)"
              for t, s in base.items() if s]
    return "\n".join([f"`{result['settings']['command']}`", "", *head, *lines, *notes])


def chart(result: dict):
    """Grouped bars: median speed ratio to generate per method and temperature, min-max as error bars."""
    import plotly.graph_objects as go

    fig = go.Figure()
    series = {BASELINE_NAMES.get(m, m): by_t for m, by_t in result["baselines_vs_generate"].items()}
    for c in result["configs"]:
        series.setdefault(f"specscope {c['label']} fast", {})[str(c["temperature"])] = c["fast_vs_generate"]
        series.setdefault(f"specscope {c['label']} recorded", {})[str(c["temperature"])] = c["recorded_vs_generate"]
    for name, by_t in series.items():
        temps = [t for t, s in by_t.items() if s]
        med = [by_t[t]["median"] for t in temps]
        fig.add_trace(go.Bar(name=name, x=[f"T = {t}" for t in temps], y=med, error_y={
            "type": "data", "symmetric": False, "array": [by_t[t]["max"] - m for t, m in zip(temps, med, strict=True)],
            "arrayminus": [m - by_t[t]["min"] for t, m in zip(temps, med, strict=True)]}))
    fig.add_hline(y=1.0, line_dash="dot", annotation_text="plain generate()")
    fig.update_layout(barmode="group", title="speed relative to the target alone (median, min-max over cases)",
                      yaxis_title="tokens/s ÷ generate() tokens/s", plot_bgcolor="white")
    return fig


def write_outputs(result: dict, json_path: str | None, chart_path: str | None) -> None:
    chart_path = chart_path or (str(Path(json_path).with_suffix(".html")) if json_path else None)
    if chart_path:
        result["chart"] = write_chart(result, Path(chart_path))
    if json_path:
        Path(json_path).write_text(json.dumps(result, indent=1), encoding="utf-8")
        print(f"numbers written to {json_path}", file=sys.stderr)


def write_chart(result: dict, path: Path) -> dict:
    """HTML always; PNG too where kaleido (requirements-dev.txt) finds a Chromium, else a note says why not."""
    fig = chart(result)
    fig.write_html(path, include_plotlyjs="cdn")
    out = {"html": str(path), "png": None, "png_note": "kaleido is not installed: HTML only"}
    try:
        fig.write_image(path.with_suffix(".png"))
        out.update(png=str(path.with_suffix(".png")), png_note="")
    except (ImportError, ValueError, RuntimeError) as err:
        out["png_note"] = f"no PNG ({type(err).__name__}: {str(err)[:160]}; kaleido needs a Chromium)"
    print(f"chart written to {path}" + (f" and {out['png']}" if out["png"] else f" ({out['png_note']})"),
          file=sys.stderr)
    return out
