"""Shareable links: opening a page whose URL query holds a demo sets the controls and runs its Steps; the
"copy link" button gives the link of what is on screen, with the equivalent `python -m decoding generate`.

The query is read by ui/link_query.py through the control boundary (bad values: a notice and the default).
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from typing import Any

import gradio as gr

from ui import decode, endpoints
from ui.link_query import TABS, Link, cli_command, link_query, read_link
from ui.run_cache import RunCache
from ui.session import Configured, Controls, Session
from ui.views import Out, Views, md

TAB_LABELS = {"Compare verifiers": "compare", "Run statistics": "stats", "Trace: export / import": "trace",
              "Verifier lab": "lab", "Speed": "speed", "Museum": "museum", "How to read this": "help"}
# After the server wrote "?query" into the link box: the full URL (plus the tab on screen), copied.
COPY_JS = """(q) => {
  if (!q || !q.startsWith('?')) return q;
  const labels = LABELS;
  const tab = document.querySelector('button[role="tab"][aria-selected="true"]');
  const id = tab ? labels[tab.innerText.trim()] : '';
  const url = location.origin + location.pathname + q + (id ? '&tab=' + id : '');
  try { navigator.clipboard.writeText(url).catch(() => {}); } catch (e) {}
  return url;
}""".replace("LABELS", json.dumps(TAB_LABELS))


@dataclass
class LinkPanel:
    copy: gr.Button
    link: gr.Textbox
    cli: gr.Markdown
    notice: gr.Markdown

    @classmethod
    def build(cls) -> LinkPanel:
        with gr.Accordion("share this demo", open=False, elem_id="share"):
            copy = gr.Button("copy link", size="sm", elem_id="copy-link")
            link = gr.Textbox(label="link to what is on screen (opening it runs the same Steps)",
                              interactive=False, elem_id="share-link")
            cli = gr.Markdown(elem_id="link-cli")
        notice = gr.Markdown(elem_id="link-notice")
        return cls(copy, link, cli, notice)


def share(views: Views, values: dict, slider: Any = None) -> tuple[str, str]:
    """("?query", the CLI line) of the shown demo: the controls the shown run was started with (else the
    widgets'), the shown step as `steps`, the compared verifiers of the shown step."""
    session: Session = values.get(views.state) or Session()
    position = values.get(slider) if slider is not None else None
    try:
        controls = session.controls or views.read_controls(values)
    except ValueError as err:
        return f"⚠️ {err}", ""
    steps = 0
    if session.controls is not None and session.steps:
        try:
            steps = min(max(1, int(float(position or len(session.steps)))), len(session.steps))
        except (TypeError, ValueError):
            steps = len(session.steps)
    shown = session.steps[steps - 1] if steps else None
    keys = tuple(v.key for v in shown.compare.verdicts) if shown is not None and shown.compare else ()
    cli = f"Same text from the command line:  \n`{cli_command(controls)}`"
    return "?" + link_query(Link(controls, steps, keys)), cli


def open_link(views: Views, panel: LinkPanel, tabs: gr.Tabs, default: Controls, session: Session | None,
              query: dict[str, str], runs: RunCache | None = None, request: gr.Request | None = None) -> Out:
    """A page opened with a demo in its query: the controls set, `steps` Steps run, every view drawn."""
    session = session or Session()
    if not query:  # a plain page load: the notice only (an empty dict is one value to gradio: a traceback a load)
        return {panel.notice: ""}
    link, notices = read_link(query, default, views.caps)
    out = _set_widgets(views, link)
    if link.tab in TABS:
        out[tabs] = gr.Tabs(selected=link.tab)
    try:
        after = run_steps(views, session, link, runs, request)
    except ValueError as err:
        notices.append(str(err))
        after = session
    out.update(views.draw(after))
    if notices:
        gr.Warning(html.escape(notices[0]))  # a toast is HTML, not Markdown
    out[panel.notice] = "  \n".join(f"⚠️ {md(n)}" for n in notices)
    return out


def _set_widgets(views: Views, link: Link) -> Out:
    out = views.widgets_for(link.controls)
    if "compare" in views.options:
        out[views.options["compare"]] = bool(link.compare)
        if link.compare:
            out[views.options["compare_keys"]] = list(link.compare)
    return out


def run_steps(views: Views, session: Session, link: Link, runs: RunCache | None,
              request: gr.Request | None) -> Session:
    """A new run of the link's controls, `link.steps` Steps (fewer when the run ends first)."""
    if link.steps <= 0:
        return session
    from ui.compare import default_draws

    configured = Configured(link.controls, link.controls.config(views.caps))  # read_link checked the caps
    run, fresh = decode.open_run(Session(key=session.key), configured, None, link.compare,
                                 default_draws(views.caps) if link.compare else 0, runs=runs)
    for _ in range(link.steps):
        if decode.advance(run) is None or run.done:
            break
    decode.fill_shown(run)
    after = decode.commit(session, link.controls, run, fresh)
    decode.keep(runs, after, run, request)
    return after


def wire(demo: gr.Blocks, views: Views, panel: LinkPanel, tabs: gr.Tabs, slider: gr.Slider, default: Controls,
         decode_queue: dict, runs: RunCache | None = None) -> None:
    def on_load(session: Session | None, request: gr.Request) -> Out:
        query = dict(request.query_params) if request is not None else {}
        return views.guarded(session or Session(),
                             lambda: open_link(views, panel, tabs, default, session, query, runs, request))

    widgets = [*views.controls.values(), *views.options.values()]
    outputs = list(dict.fromkeys([*widgets, tabs, panel.notice, *views.outputs()]))
    demo.load(on_load, [views.state], outputs, api_name="open_link", show_progress_on=[views.status],
              **decode_queue)  # internal to the page (ui.endpoints.hide_internal)
    inputs = {views.state, slider, *widgets}
    panel.copy.click(lambda values: share(views, values, slider), inputs, [panel.link, panel.cli],
                     show_progress="hidden", **endpoints.public("share_link")).then(
        None, [panel.link], [panel.link], js=COPY_JS)
