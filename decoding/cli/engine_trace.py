"""`python -m decoding engine-trace FILE`: an engine's speculative-decoding record read and analysed (per-position
conditional acceptance with 95 % Wilson intervals, the accepted-length histogram, the cliff), beside specscope's
exact expectation for the same chain (`--expect-pair KIND --temperature T`, or `--expect-trace TRACE`: a run's own
records); `engine-trace TRACE --export vllm|sglang|llamacpp [-o OUT]` writes a specscope run in an engine's shape.
docs/verifiers.md §22. Exit 0, or 2 with one line on bad input (a bad record's reason)."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from decoding.run import engine_export, engine_shape, engine_traces


def add_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE", help="an engine record (vLLM / SGLang JSON, llama.cpp timings JSON or log "
                   "line); with --export, a specscope trace JSON")
    p.add_argument("--format", default=None, choices=engine_traces.ENGINES,
                   help="the record's engine (default: found from its fields)")
    p.add_argument("--export", default=None, choices=engine_export.SHAPES, metavar="SHAPE",
                   help=f"write the specscope trace FILE in an engine's shape ({', '.join(engine_export.SHAPES)}); "
                   "chain runs only")
    p.add_argument("-o", "--output", default=None, metavar="OUT", help="with --export: write here (default: stdout)")
    p.add_argument("--expect-pair", default=None, metavar="KIND",
                   help="the exact expectation from a built-in pair's shipped chain acceptance (embedded, "
                   "embedded-head, lookup)")
    p.add_argument("--temperature", type=float, default=0.8, help="with --expect-pair: 0 or 0.8 (shipped)")
    p.add_argument("--expect-trace", default=None, metavar="TRACE",
                   help="the exact expectation from a specscope trace's own records (per-depth exact acceptance)")
    p.add_argument("--json", default=None, metavar="OUT", help="write the analysis as JSON here")


def run(args: argparse.Namespace) -> int:
    if args.export:
        return export(args)
    if args.output:
        raise ValueError("-o goes with --export; the analysis goes to --json")
    record = engine_traces.read_file(args.file, args.format)
    analysis = engine_shape.analyse(record, expectation(args, record))
    print("\n".join(lines(analysis)))
    if args.json:
        Path(args.json).write_text(json.dumps(asdict(analysis), indent=1) + "\n", encoding="utf-8")
        print(f"analysis written to {args.json}", file=sys.stderr)
    return 0


def export(args: argparse.Namespace) -> int:
    from decoding.run.schema import read_trace_file

    if args.expect_pair or args.expect_trace or args.json or args.format:
        raise ValueError("--export writes a trace in an engine's shape: --format, --expect-* and --json do not apply")
    text = engine_export.export_text(read_trace_file(args.file), args.export)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
        print(f"{args.export} record written to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def expectation(args: argparse.Namespace, record: engine_traces.EngineRecord) -> engine_shape.Expected | None:
    if args.expect_pair and args.expect_trace:
        raise ValueError("give one of --expect-pair and --expect-trace")
    k = record.max_draft or 0
    if args.expect_pair:
        from decoding.speed.chain_expectation import chain_alphas

        alphas, source = chain_alphas(args.expect_pair, args.temperature)
        return engine_shape.expected(alphas, k or len(alphas), source)
    if args.expect_trace:
        from decoding.run.schema import read_trace_file

        alphas = engine_export.depth_alphas(read_trace_file(args.expect_trace).steps)
        if isinstance(alphas, str):
            raise ValueError(f"{args.expect_trace}: {alphas}")
        return engine_shape.expected(alphas, k or len(alphas), f"exact per node in {Path(args.expect_trace).name}")
    return None


def lines(analysis: engine_shape.Analysis) -> list[str]:
    record = analysis.record
    head = f"{record.title}: {record.accepted} of {record.drafted} drafts accepted"
    if record.acceptance_rate is not None:
        head += f" ({record.acceptance_rate:.4f})"
    head += (f", {record.steps} verification steps, mean acceptance length {record.mean_acceptance_length:.4f}"
             if record.steps else ", no step count in this record")
    out = [head]
    if record.reported:
        out.append("as reported: " + ", ".join(f"{name} = {value:.6g}" for name, value in record.reported))
    out += position_lines(analysis)
    histogram = analysis.histogram
    if histogram:
        out.append("accepted drafts per step (steps): " + ", ".join(f"{j}: {h}" for j, h in enumerate(histogram)))
    if analysis.expected is not None:
        exp = analysis.expected
        out.append(f"expected (exact, {exp.source}): P(exactly j) = "
                   + ", ".join(f"{j}: {pr:.4f}" for j, pr in enumerate(exp.histogram))
                   + f"; mean acceptance length {exp.mean_length:.4f}")
    return out


def position_lines(analysis: engine_shape.Analysis) -> list[str]:
    if not analysis.rates:
        return [f"positions: {analysis.positions_note}"]
    alphas = analysis.expected.alphas if analysis.expected is not None else ()
    out = [f"{'position':>8} {'reached':>8} {'accepted':>8} {'rate':>7}  {'95% Wilson':<16} specscope exact"]
    for r in analysis.rates:
        exact = f"{alphas[r.position - 1]:.4f}" if r.position <= len(alphas) else ""
        if r.rate is None:
            out.append(f"{r.position:>8} {r.reached:>8} {r.accepted:>8} {'':>7}  {'(not reached)':<16} {exact}")
        else:
            out.append(f"{r.position:>8} {r.reached:>8} {r.accepted:>8} {r.rate:>7.4f}  "
                       f"[{r.low:.3f}, {r.high:.3f}]   {exact}")
    if analysis.positions_note:
        out.append(f"note: {analysis.positions_note}")
    out.append(analysis.cliff_note)
    return out
