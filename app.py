"""specscope's Gradio app: the Space's entry and composition root (launch, Blocks, wiring).

Each panel is a module in `ui/` with its layout and its handlers; `ui.views.Views` composes the
panels drawn from a session, so every redrawing handler returns one `{component: value}` dict.
Per-user data lives only in gr.State, as a plain, deep-copyable `ui.session.Session`; the only
process-wide objects are the read-only models behind `models.load_pair`'s cache. Every view is
drawn by `viz` from StepRecords, so an imported trace replays with no model loaded.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
from dataclasses import replace
from pathlib import Path

import gradio as gr

from decoding.lab.museum import MUSEUM_DIR
from decoding.models.hub import space
from decoding.verify.registry import VERIFIERS
from ui import (
    api_tools,
    compare,
    controls,
    decode,
    endpoints,
    engine_trace,
    help,
    inspector,
    lab,
    links,
    museum,
    page_leave,
    present,
    run_stats,
    speed,
    story,
    teach,
    trace_io,
    tree_view,
)
from ui.caps import CEILINGS, Caps
from ui.run_cache import RunCache
from ui.session import PAIRS, Controls, new_session
from ui.views import Views

PLOTLY_ONCE = Path(__file__).resolve().parent / "assets" / "plotly_once.js"
STORY_JS = Path(__file__).resolve().parent / "assets" / "story.js"
SELECT_LABEL_JS = Path(__file__).resolve().parent / "assets" / "select_label.js"
PRESENT_JS = Path(__file__).resolve().parent / "assets" / "present.js"
A11Y_JS = Path(__file__).resolve().parent / "assets" / "a11y.js"
CSS = (".specscope-status p { margin: 0.2em 0; } #tree-plot { min-height: 320px; } "
       # the status line's machine details (ui/views.status_text): one click away, quieter than the step line
       "#status details { font-size: 0.85em; opacity: 0.8; } #status summary { cursor: pointer; } "
       ".specscope-offscreen { position: absolute !important; left: -10000px; top: 0; width: 640px; } "
       # table headers break between words, never inside one ("candida te")
       "th span.header { word-break: normal !important; overflow-wrap: normal !important; hyphens: none; } "
       "#tests-table th span.header, #compare-table th span.header { font-size: 0.78em; } "
       # an empty plot (before the first Step, comparison, run or lab check) takes no room, not a placeholder icon
       "#compare-multiples:has(.empty), #compare-laws:has(.empty), #compare-runs-plot:has(.empty), "
       "#tree-plot:has(.empty), #generated-text:has(.empty), #node-plot:has(.empty), #stats-plot:has(.empty), "
       "#speed-plot:has(.empty), #lab-seq-plot:has(.empty), #lab-tradeoff-plot:has(.empty), "
       "#lab-price-plot:has(.empty), #museum-plot:has(.empty) "
       "{ display: none !important; } "
       # below ~1000 px the controls and the step's views stack, each at the page's whole width (two columns
       # there left the tree, the node chart and the tests table ~380 px: titles cut, one letter per line)
       "@media (max-width: 1000px) { #main-row { flex-direction: column; } "
       "#main-row > .column { width: 100%; min-width: 100% !important; } "
       # the node's tests keep the width their columns need whole (as at 1440 px) and scroll sideways below it
       "#tests-table .table-wrap { overflow-x: auto; } #tests-table .upload-container { min-width: 860px; } } "
       # a dropdown's chosen label too long for its box is shown whole, wrapped (assets/select_label.js); the
       # text, typed or shown, stops before the caret (Gradio lays the caret over the input's right end)
       ".secondary-wrap > input[role=combobox], .secondary-wrap > .specscope-label { padding-right: 2.2em; } "
       ".secondary-wrap.specscope-long:not(:focus-within) > input "
       "{ position: absolute; inset: 0; opacity: 0; z-index: 1; } "
       ".secondary-wrap > .specscope-label { display: none; } "
       ".secondary-wrap.specscope-long:not(:focus-within) > .specscope-label "
       "{ display: block; flex: 1 1 auto; white-space: normal; overflow-wrap: anywhere; padding: 0.3em 0; } "
       "#story-text { font-size: 1.05em; min-height: 3em; padding: 0.4em 0; } "
       ".story-bar { display: flex; gap: 0.5em; align-items: center; flex-wrap: wrap; } "
       ".story-bar button { min-width: 2.6em; padding: 0.2em 0.6em; border: 1px solid #bbb; border-radius: 6px; } "
       # no story yet (before a Step, after Reset): its controls read as disabled (assets/story.js disables them)
       "#story[data-n='0'] .story-bar button, #story[data-n='0'] .story-pace "
       "{ opacity: 0.4; cursor: not-allowed; pointer-events: none; } "
       "#story-position { font-weight: 600; margin-left: 0.5em; } "
       # projector mode and the dark theme (ui/present.py, assets/present.js)
       ".specscope-present-bar { display: flex; gap: 0.5em; align-items: center; flex-wrap: wrap; } "
       ".specscope-present-bar button { padding: 0.2em 0.7em; border: 1px solid #888; border-radius: 6px; } "
       ".specscope-present-bar button[aria-pressed=true] { background: #0969da; color: #fff; border-color: #0969da; } "
       # (rules about <html>'s classes: Gradio also copies each rule under .gradio-container, where they never match)
       ".specscope-keys { opacity: 0.75; font-size: 0.9em; } html:not(.specscope-present) #controls-toggle "
       "{ display: none; } "
       ".specscope-present .gradio-container { --text-xs: 14px; --text-sm: 17px; --text-md: 21px; --text-lg: 24px; "
       "--text-xl: 28px; max-width: 100% !important; } "
       ".specscope-present #intro, .specscope-present #launch-notices, .specscope-present .specscope-keys "
       "{ display: none; } "
       ".specscope-present:not(.specscope-controls-open) #main-row > .column:first-child { display: none; } "
       ".specscope-present:not(.specscope-controls-open) #main-row > .column:last-child "
       "{ flex: 1 1 100% !important; width: 100%; min-width: 100% !important; } "
       ".specscope-present #story-text { font-size: 1.5em; line-height: 1.4; } "
       ".specscope-present .story-bar button { font-size: 1.2em; min-width: 3em; } "
       ".specscope-present #tree-plot { min-height: 46vh; } "
       # the dark theme: Gradio's own (body.dark); the figures drawn white by plotly are inverted, hues kept
       ".dark .js-plotly-plot .main-svg { filter: invert(0.92) hue-rotate(180deg); } "
       # text contrast at least 4.5:1 (axe-core, WCAG AA; tests/browser/test_axe_browser.py): the theme's orange
       # buttons, grey notes and footer links were 2.3-4.4:1 on their backgrounds
       ":root { --button-primary-background-fill: #c2410c; --button-primary-background-fill-hover: #9a3412; "
       "--button-primary-text-color: #ffffff; --button-cancel-background-fill: #b91c1c; "
       "--button-cancel-background-fill-hover: #991b1b; --button-cancel-text-color: #ffffff; "
       "--block-info-text-color: #4b5563; --body-text-color-subdued: #4b5563; } "
       "body:not(.dark) button[role=tab][aria-selected=true] { color: #9a3412; } "
       "body:not(.dark) footer a, body:not(.dark) footer button { color: #4b5563; }")
INTRO = ("# specscope\nLive multi-candidate speculative decoding: a draft model (q) proposes a tree of tokens, "
         "the target (p) scores it in one forward, a verifier accepts a path.")


def build_page(default_pair: str = "embedded", notices: tuple[str, ...] = (),
               caps: Caps | None = None, runs: RunCache | None = None) -> tuple[gr.Blocks, Views]:
    """The Blocks and its Views (the handlers' handle on every component), wired; `caps` limit every run.

    `runs` is this app's cache of live runs (a new one by default; see ui.run_cache)."""
    caps = caps or Caps()
    runs = RunCache() if runs is None else runs
    default = replace(Controls(), pair=default_pair,
                      prompt=controls.example_prompts()["toy" if default_pair == "toy" else "text"][0]).within(caps)
    with gr.Blocks(title="specscope", analytics_enabled=False) as demo:
        gr.Markdown(INTRO, elem_id="intro")
        present.build()  # projector mode and dark theme buttons (handled in the page: assets/present.js)
        if notices:  # launch-time problems, e.g. a refused --verifier-file
            gr.Markdown("\n".join(f"⚠️ {n}" for n in notices), elem_id="launch-notices")
        state = gr.State(new_session)  # a callable: each page gets its own Session (and its own key)
        with gr.Row(elem_id="main-row"):  # stacked below ~1000 px (CSS)
            with gr.Column(scale=2, min_width=320):
                panel = controls.ControlsPanel.build(default, caps)
                sharing = links.LinkPanel.build()
                teach.build()
            with gr.Column(scale=5):
                told = story.StoryPanel.build()
                tree = tree_view.TreeView.build()
                tree_view.plotly_warmup()
                nodes = inspector.Inspector.build()
        with gr.Tabs() as tabs:  # the run charts are drawn only while their tab is open
            versus = compare.ComparePanel.build(default, caps)
            stats = run_stats.RunStats.build()
            traces = trace_io.TraceIO.build()
            with gr.Tab("Verifier lab", id="lab"):
                lab.build(VERIFIERS)
            with gr.Tab("Speed", id="speed"):
                fast = speed.build()
            exhibits = museum.build()
            help.build()
        views = Views(state, panel.status, [tree, nodes, stats, versus, told], controls=panel.widgets,
                      options=versus.options(), caps=caps)
        decode_queue = dict(concurrency_limit=_concurrency(), concurrency_id="decode")
        changes = controls.wire(views, panel, decode_queue, runs)
        tree_view.wire(views, tree, runs)
        inspector.wire(views, nodes, tree.slider)
        story.wire(views, told, nodes, tree.slider)
        links.wire(demo, views, sharing, tabs, tree.slider, default, decode_queue, runs)
        run_stats.wire(views, stats, decode_queue)
        changes += trace_io.wire(views, traces, runs, default, decode_queue)
        engine_trace.wire(traces.engine, state, runs)
        compare.wire(views, versus, decode_queue)
        speed.wire(fast, state, runs, decode_queue)
        museum.wire(exhibits, panel.widgets)
        run_stats.wire_lazy(views, stats, tabs, changes, runs)
        api_tools.register(caps)  # API-only endpoints (the MCP tools)
        demo.unload(page_leave.leave_handler(runs, demo))
    endpoints.hide_internal(demo)  # the API lists ui.endpoints.ENDPOINTS only
    return demo, views


def build_app(default_pair: str = "embedded", notices: tuple[str, ...] = (), caps: Caps | None = None,
              runs: RunCache | None = None) -> gr.Blocks:
    return build_page(default_pair, notices, caps, runs)[0]


def _concurrency() -> int:
    return max(1, int(os.environ.get("SPECSCOPE_CONCURRENCY", "2")))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="specscope: the Gradio app")
    parser.add_argument("--host", default=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
                        help="interface to listen on (env GRADIO_SERVER_NAME)")
    parser.add_argument("--port", type=int, default=int(os.environ.get("GRADIO_SERVER_PORT", "7860")),
                        help="port (env GRADIO_SERVER_PORT)")
    parser.add_argument("--pair", default="embedded", choices=[v for _, v in PAIRS if v != "custom"],
                        help="model pair preselected in the app")
    parser.add_argument("--device", default=None, help="auto (default), cpu, cuda or mps")
    parser.add_argument("--no-preload", action="store_true",
                        help="do not load the preselected pair in the background at start (nor calibrate it, the "
                             "first time on a machine)")
    parser.add_argument("--bench-step", type=int, default=0, metavar="N",
                        help="benchmark instead of serving: N Step clicks (3,2,2 tree) on --pair, timed "
                             "(= python -m bench step --pair P --clicks N)")
    parser.add_argument("--verifier-file", action="append", default=[], metavar="PATH",
                        help="a local Python file with your own verifier (README); repeatable; registered at launch")
    parser.add_argument("--museum", action="store_true",
                        help="register the museum's buggy rules (assets/museum/*.py) as custom verifiers, so the "
                             "Museum tab can open them on a live step")
    parser.add_argument("--mcp", action=argparse.BooleanOptionalAction, default=space.on_space(),
                        help="also serve the MCP server (its tools: " + ", ".join(endpoints.TOOLS)
                             + "); on by default on a Hugging Face Space")
    for name, (ceiling, what) in CEILINGS.items():
        default = getattr(Caps(), name)
        most = f"default and most: {ceiling}" if default == ceiling else f"default {default}, most {ceiling}"
        parser.add_argument(f"--{name.replace('_', '-')}", type=int, default=default, metavar="N",
                            help=f"limit per run on {what} ({most})")
    args = parser.parse_args(argv)
    try:
        args.caps = caps_of(args)
    except ValueError as err:
        parser.error(str(err))  # exit 2 with the one-line message
    return args


def caps_of(args: argparse.Namespace) -> Caps:
    return Caps(**{name: getattr(args, name) for name in CEILINGS})


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.bench_step:  # moved to `python -m bench step`; this flag stays and hands over to it
        from decoding.cli.handoff import hand_to_bench

        sys.exit(hand_to_bench(["step", "--pair", args.pair, "--clicks", str(args.bench_step)]))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    if args.device:
        os.environ["SPECSCOPE_DEVICE"] = args.device
    from decoding.lab.custom import register_files

    _, notices = register_files(args.verifier_file, VERIFIERS)  # explicit, once, before serving anyone
    if args.museum:  # the exhibits a probe refuses (a NaN law) stay out, as intended: no notice
        register_files([str(path) for path in sorted(MUSEUM_DIR.glob("*.py"))], VERIFIERS)
    for notice in notices:
        logging.getLogger("specscope.app").warning(notice)
    runs = RunCache()  # the app's live runs; the preload reads whether anyone stepped while it calibrated
    demo = build_app(default_pair=args.pair, notices=tuple(notices), caps=args.caps, runs=runs)
    if not args.no_preload:
        threading.Thread(target=decode.preload, args=(args.pair, runs), daemon=True, name="specscope-preload").start()
    serve(demo, args.host, args.port, mcp=args.mcp)


def serve(demo: gr.Blocks, host: str, port: int, block: bool = True, mcp: bool = False) -> None:
    """Queue and launch the page as the Space serves it (block=False returns once it listens: tests).

    `mcp`: also serve Gradio's MCP server at /gradio_api/mcp/ with only the tools in endpoints.TOOLS
    (Gradio would offer every public endpoint; the page's own endpoints take widget values, not questions)."""
    # run_history=False: gradio 6 otherwise keeps the last 100 runs of every event, inputs and outputs
    # (each Step's figures), in the browser's localStorage, re-read and re-written on every click: a
    # Step's cost grew with the session, up to the 5 MB quota and its retry loop.
    demo.queue(max_size=64).launch(server_name=host, server_port=port, css=CSS, head=head(), run_history=False,
                                   max_file_size="50mb", show_error=False, prevent_thread_lock=True,
                                   mcp_server=mcp)
    if mcp:
        endpoints.only_tools(demo)
    if block:
        demo.block_thread()


def head() -> str:
    """The page's <head> additions: assets/plotly_once.js (each Step figure drawn once, not twice),
    assets/story.js (the step's story moved through in the page, its keys), assets/select_label.js (a dropdown's
    long label shown whole), assets/present.js (projector mode, the dark theme) and assets/a11y.js (names and
    roles Gradio's markup lacks)."""
    return "".join(f"<script>\n{js.read_text(encoding='utf-8')}</script>"
                   for js in (PLOTLY_ONCE, STORY_JS, SELECT_LABEL_JS, PRESENT_JS, A11Y_JS))


if __name__ == "__main__":
    main()
