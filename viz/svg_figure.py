"""A figure spec (the {"data", "layout"} dict viz's figures build for plotly) drawn as one static SVG string.

Why: the replay file (viz/replay_html.py) holds every figure of a run with no server and no network; plotly.js
alone (4.8 MB) is over that file's 5 MB budget, and SVG scales on a projector, prints, and takes the page's
colours (its dark theme) from CSS. The figures stay built once, by tree_figure / node_figure / compare: this
file only draws their specs, so a colour, a symbol or a label changed there changes here too.

It draws the subset those figures use: scatter lines (None breaks a line) and markers with text (the tree's
symbols), grouped bars on category axes, subplots placed by their axis domains, annotations, a title and a
legend. A marker with customdata [id, category, ...] becomes <g class="point" data-node=ID data-category=CAT>
(assets/story.js dims the points an event is not about) and its hover text its <title> (the tooltip, and
what a screen reader reads). Text is escaped here: plotly's markup in a spec (<b>, <br>) is read, any other
tag is dropped, and every text piece goes out through html.escape.
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass

FONT = 13  # px, plotly's default is 12
CHAR = 0.58  # width of an average character, in font sizes (layout estimates only: SVG has no text metrics)
TAG = re.compile(r"<(/?)(b|br|i|sub|sup)\s*/?>|<[^>]*>", re.IGNORECASE)
DASHES = {"dot": "1 3", "dash": "6 4", "dashdot": "6 3 1 3"}


def plain(text: str) -> str:
    """Plotly markup -> plain text: <br> a newline, every other tag dropped, entities decoded."""
    return html.unescape(TAG.sub(lambda m: "\n" if m.group(2) and m.group(2).lower() == "br" else "", text))


def _lines(text: str) -> list[list[tuple[str, bool]]]:
    """Plotly markup -> lines of (plain text, bold) runs."""
    lines: list[list[tuple[str, bool]]] = [[]]
    bold, at = False, 0
    for m in TAG.finditer(text):
        if m.start() > at:
            lines[-1].append((html.unescape(text[at:m.start()]), bold))
        tag = (m.group(2) or "").lower()
        if tag == "br":
            lines.append([])
        elif tag == "b":
            bold = not m.group(1)
        at = m.end()
    if at < len(text):
        lines[-1].append((html.unescape(text[at:]), bold))
    return lines


def text_svg(text: str, x: float, y: float, size: float = FONT, anchor: str = "start", baseline: str = "top",
             cls: str = "", weight: str = "") -> str:
    """A <text> of plotly markup at (x, y): `baseline` top (lines go down from y), bottom (the last line ends
    at y) or middle; one <tspan> per bold run and per line."""
    lines = _lines(str(text))
    step = size * 1.25
    first = {"top": y + size * 0.85, "bottom": y - step * (len(lines) - 1) - size * 0.25,
             "middle": y - step * (len(lines) - 1) / 2 + size * 0.35}[baseline]
    out = []
    for i, runs in enumerate(lines):
        pieces = "".join(f'<tspan font-weight="bold">{html.escape(t)}</tspan>' if b else html.escape(t)
                         for t, b in runs)
        out.append(f'<tspan x="{_f(x)}" y="{_f(first + i * step)}">{pieces}</tspan>')
    extra = (f' class="{cls}"' if cls else "") + (f' font-weight="{weight}"' if weight else "")
    return f'<text font-size="{_f(size)}" text-anchor="{anchor}"{extra}>{"".join(out)}</text>'


def _f(x: float) -> str:
    return f"{x:.1f}".rstrip("0").rstrip(".") if math.isfinite(x) else "0"


@dataclass
class Axis:
    lo: float  # pixel of the range's first value
    hi: float  # pixel of the range's second value
    start: float  # range[0]
    end: float  # range[1]
    categories: tuple[str, ...] = ()

    def at(self, value) -> float:
        if self.categories:
            value = self.categories.index(value)
        span = (self.end - self.start) or 1.0
        return self.lo + (float(value) - self.start) / span * (self.hi - self.lo)

    def unit(self) -> float:
        """Pixels per unit of the axis (a category slot on a category axis)."""
        return abs(self.hi - self.lo) / (abs(self.end - self.start) or 1.0)


def _axis_key(ref: str, letter: str) -> str:
    """'x2' -> 'xaxis2', 'x' -> 'xaxis'."""
    return f"{letter}axis{ref[1:]}"


def _group(layout: dict, key: str) -> str:
    """The axis a `matches` chain ends at (axes that match share categories and range)."""
    seen = {key}
    while (match := (layout.get(key) or {}).get("matches")) and _axis_key(match, key[0]) not in seen:
        key = _axis_key(match, key[0])
        seen.add(key)
    return key


def _axes(spec: dict, box: tuple[float, float, float, float]) -> dict[str, Axis]:
    """Every axis the traces use, in pixels: domains inside `box` (left, top, right, bottom)."""
    layout, data = spec["layout"], spec["data"]
    left, top, right, bottom = box
    keys = {_axis_key(t.get(letter + "axis", letter), letter) for t in data for letter in "xy"}
    values: dict[str, list] = {}
    for t in data:
        for letter in "xy":
            group = _group(layout, _axis_key(t.get(letter + "axis", letter), letter))
            values.setdefault(group, []).extend(v for v in t.get(letter) or () if v is not None)
    axes = {}
    for key in sorted(keys):
        conf = layout.get(key) or {}
        d0, d1 = conf.get("domain", [0.0, 1.0])
        lo, hi = (left + d0 * (right - left), left + d1 * (right - left)) if key[0] == "x" else \
                 (bottom - d0 * (bottom - top), bottom - d1 * (bottom - top))
        seen = values.get(_group(layout, key), [])
        categories = tuple(dict.fromkeys(v for v in seen if isinstance(v, str)))
        group_conf = layout.get(_group(layout, key)) or {}
        given = conf.get("range") or group_conf.get("range")
        if categories:
            start, end = -0.5, len(categories) - 0.5
        elif given:
            start, end = given
        else:
            numbers = [float(v) for v in seen] or [0.0, 1.0]
            pad = max(0.5, 0.06 * (max(numbers) - min(numbers)))
            start, end = min(numbers) - pad, max(numbers) + pad
            if "reversed" in (conf.get("autorange"), group_conf.get("autorange")):
                start, end = end, start
        axes[key] = Axis(lo, hi, start, end, categories)
    return axes


def _marker(symbol: str, x: float, y: float, size: float, color: str, line: dict) -> str:
    r = size / 2
    stroke = f' stroke="{line.get("color", "#333333")}" stroke-width="{_f(line.get("width", 1))}"'
    if symbol == "circle-open":
        return f'<circle cx="{_f(x)}" cy="{_f(y)}" r="{_f(r)}" fill="none" stroke="{color}" stroke-width="2"/>'
    if symbol == "circle":
        return f'<circle cx="{_f(x)}" cy="{_f(y)}" r="{_f(r)}" fill="{color}"{stroke}/>'
    if symbol == "square":
        return f'<rect x="{_f(x - r)}" y="{_f(y - r)}" width="{_f(size)}" height="{_f(size)}" fill="{color}"{stroke}/>'
    return f'<path d="{_shape(symbol, x, y, r)}" fill="{color}"{stroke}/>'


def _shape(symbol: str, x: float, y: float, r: float) -> str:
    if symbol == "diamond":
        k = r * 1.3
        points = [(0, -k), (k, 0), (0, k), (-k, 0)]
    elif symbol == "star":
        points = [((r * 1.35 if i % 2 == 0 else r * 0.55) * math.sin(i * math.pi / 5),
                   -(r * 1.35 if i % 2 == 0 else r * 0.55) * math.cos(i * math.pi / 5)) for i in range(10)]
    elif symbol == "x":  # plotly's x: a thick cross turned 45 degrees
        a, b = r * 0.35, r * 1.05
        points = [(-b, -b + a), (-b + a, -b), (0, -a), (b - a, -b), (b, -b + a), (a, 0), (b, b - a), (b - a, b),
                  (0, a), (-b + a, b), (-b, b - a), (-a, 0)]
    else:
        points = [(-r, -r), (r, -r), (r, r), (-r, r)]
    return "M" + "L".join(f"{_f(x + dx)} {_f(y + dy)}" for dx, dy in points) + "Z"


def _scatter(t: dict, xa: Axis, ya: Axis) -> str:
    mode = t.get("mode", "markers")
    out = []
    xs, ys = t.get("x") or [], t.get("y") or []
    if "lines" in mode:
        line = t.get("line") or {}
        path, pen = [], "M"
        for x, y in zip(xs, ys, strict=False):
            if x is None or y is None:
                pen = "M"
                continue
            path.append(f"{pen}{_f(xa.at(x))} {_f(ya.at(y))}")
            pen = "L"
        dash = DASHES.get(line.get("dash", "solid"))
        out.append(f'<path class="edge" d="{"".join(path)}" fill="none" stroke="{line.get("color", "#888888")}" '
                   f'stroke-width="{_f(line.get("width", 2))}" stroke-linecap="round"'
                   + (f' stroke-dasharray="{dash}"' if dash else "") + "/>")
    if "markers" in mode or "text" in mode:
        out += _points(t, xa, ya)
    return "".join(out)


def _points(t: dict, xa: Axis, ya: Axis) -> list[str]:
    marker = t.get("marker") or {}
    size = float(marker.get("size", 8))
    symbols, colors = marker.get("symbol", "circle"), marker.get("color", "#1f77b4")
    texts, hovers = t.get("text") or [], t.get("hovertext") or []
    font = float((t.get("textfont") or {}).get("size", FONT))
    right = t.get("textposition", "top center") == "middle right"
    out = []
    for i, (x, y) in enumerate(zip(t.get("x") or [], t.get("y") or [], strict=False)):
        px, py = xa.at(x), ya.at(y)
        symbol = symbols[i] if isinstance(symbols, list) else symbols
        color = colors[i] if isinstance(colors, list) else colors
        row = (t.get("customdata") or [])[i] if i < len(t.get("customdata") or []) else None
        attrs = f' data-node="{int(row[0])}" data-category="{html.escape(str(row[1]), quote=True)}"' if row else ""
        hover = hovers[i] if isinstance(hovers, list) and i < len(hovers) else hovers if isinstance(hovers, str) else ""
        title = f"<title>{html.escape(plain(hover))}</title>" if hover else ""
        body = _marker(symbol, px, py, size, color, marker.get("line") or {}) if "markers" in t.get("mode", "") else ""
        if i < len(texts) and texts[i]:
            tx, ty = (px + size / 2 + 3, py) if right else (px, py - size / 2 - 3)
            body += text_svg(texts[i], tx, ty, font, "start" if right else "middle", "middle" if right else "bottom",
                             "label")
        out.append(f'<g class="point"{attrs}>{title}{body}</g>')
    return out


def _bars(spec: dict, axes: dict[str, Axis]) -> str:
    """Grouped bars: in each category slot, the bar traces of one x axis side by side (80 % of the slot)."""
    layout = spec["layout"]
    by_axis: dict[tuple[str, str], list[dict]] = {}
    for t in spec["data"]:
        if t.get("type") == "bar":
            by_axis.setdefault((t.get("xaxis", "x"), t.get("yaxis", "y")), []).append(t)
    out = []
    for (xref, yref), traces in by_axis.items():
        xa, ya = axes[_axis_key(xref, "x")], axes[_axis_key(yref, "y")]
        slot = xa.unit() if xa.categories else 20.0
        width = slot * (1 - layout.get("bargap", 0.2)) / (len(traces) if layout.get("barmode") == "group" else 1)
        for j, t in enumerate(traces):
            offset = (j - (len(traces) - 1) / 2) * width if layout.get("barmode") == "group" else 0.0
            marker = t.get("marker") or {}
            opacity = marker.get("opacity")
            name = plain(str(t.get("name", "")))
            rects = []
            for x, y in zip(t.get("x") or [], t.get("y") or [], strict=False):
                if y is None:
                    continue
                top, base = ya.at(y), ya.at(0)
                left = xa.at(x) + offset - width / 2
                tip = html.escape(f"{name}: {plain(str(x))} = {y:.4f}")
                rects.append(f'<rect x="{_f(left)}" y="{_f(min(top, base))}" width="{_f(width)}" '
                             f'height="{_f(abs(base - top))}"><title>{tip}</title></rect>')
            fade = f' fill-opacity="{_f(opacity)}"' if opacity is not None else ""
            out.append(f'<g class="bars" fill="{marker.get("color", "#1f77b4")}"{fade}>{"".join(rects)}</g>')
    return "".join(out)


def _ticks(spec: dict, axes: dict[str, Axis]) -> tuple[str, float]:
    """Grid lines and tick labels; returns (svg, the room category labels need below the plot)."""
    layout, out, room = spec["layout"], [], 0.0
    for key, axis in axes.items():
        conf = layout.get(key) or {}
        if conf.get("visible") is False:
            continue
        other = axes.get(_axis_key(conf.get("anchor", "y" if key[0] == "x" else "x"), "y" if key[0] == "x" else "x"))
        if other is None:
            continue
        labels = conf.get("showticklabels", True)
        if key[0] == "y" and not axis.categories and conf.get("range"):
            for v in _nice(axis.start, axis.end):
                y = axis.at(v)
                out.append(f'<line class="grid" x1="{_f(other.lo)}" x2="{_f(other.hi)}" y1="{_f(y)}" y2="{_f(y)}"/>')
                if labels:
                    out.append(text_svg(f"{v:g}", other.lo - 4, y, 11, "end", "middle", "tick"))
            title = (conf.get("title") or {}).get("text")
            if title:
                mid = (axis.lo + axis.hi) / 2
                out.append(f'<text class="tick" font-size="11" text-anchor="middle" transform="translate(11 {_f(mid)}) '
                           f'rotate(-90)">{html.escape(plain(title))}</text>')
        elif key[0] == "x" and labels:
            base = max(other.lo, other.hi)
            if axis.categories:
                for c in axis.categories:
                    x = axis.at(c)
                    out.append(f'<text class="tick" font-size="12" text-anchor="end" transform="translate({_f(x + 4)} '
                               f'{_f(base + 12)}) rotate(-35)">{html.escape(plain(c))}</text>')
                room = max(room, 12 + 0.82 * CHAR * 12 * max(len(plain(c)) for c in axis.categories))
            for v in conf.get("tickvals") or ():
                out.append(text_svg(f"{v:g}", axis.at(v), base + 4, 11, "middle", "top", "tick"))
    return "".join(out), room


def _nice(a: float, b: float) -> list[float]:
    lo, hi = min(a, b), max(a, b)
    step = 10 ** math.floor(math.log10((hi - lo) or 1.0))
    step = next(s * step for s in (0.2, 0.5, 1, 2, 5) if (hi - lo) / (s * step) <= 6)
    first = math.ceil(lo / step)
    return [round(i * step, 10) for i in range(first, int(math.floor(hi / step + 1e-9)) + 1)]


def _annotations(spec: dict, axes: dict[str, Axis], box: tuple[float, float, float, float]) -> str:
    left, top, right, bottom = box
    out = []
    for a in spec["layout"].get("annotations") or ():
        x = _place(a.get("xref", "paper"), a.get("x", 0.5), axes, left, right, "x")
        y = _place(a.get("yref", "paper"), a.get("y", 0.5), axes, bottom, top, "y") - a.get("yshift", 0)
        size = (a.get("font") or {}).get("size", FONT)
        anchor = {"left": "start", "right": "end"}.get(a.get("xanchor", "center"), "middle")
        out.append(text_svg(a.get("text", ""), x, y, size, anchor, {"top": "top", "bottom": "bottom"}.get(
            a.get("yanchor", "middle"), "middle"), "note"))
    return "".join(out)


def _place(ref: str, value: float, axes: dict[str, Axis], lo: float, hi: float, letter: str) -> float:
    """An annotation coordinate: 'paper' (the plot box), 'x2 domain' (an axis's domain) or 'x2' (data)."""
    if ref == "paper":
        return lo + value * (hi - lo)
    axis = axes.get(_axis_key(ref.split()[0], letter))
    if axis is None:
        return lo + value * (hi - lo)
    if ref.endswith("domain"):
        return axis.lo + value * (axis.hi - axis.lo)
    return axis.at(value)


def _legend(spec: dict, width: float, y: float) -> tuple[str, float]:
    """A horizontal legend from `y` down, wrapped to `width`; returns (svg, its height)."""
    layout = spec["layout"]
    if layout.get("showlegend") is False:
        return "", 0.0
    items = [t for t in spec["data"] if t.get("showlegend", True) and t.get("name")]
    x, row, out, left = 10.0, 0, [], 10.0
    for t in items:
        name = plain(str(t["name"]))
        item_w = 28 + CHAR * 12 * len(name) + 14
        if x + item_w > width and x > left:
            x, row = left, row + 1
        cy = y + 10 + row * 22
        out.append(f'<g class="legend-item">{_glyph(t, x + 10, cy)}'
                   f'{text_svg(name, x + 24, cy, 12, "start", "middle", "legend")}</g>')
        x += item_w
    return "".join(out), (row + 1) * 22 + 4 if items else 0.0


def _glyph(t: dict, x: float, y: float) -> str:
    if t.get("type") == "bar":
        marker = t.get("marker") or {}
        fade = f' fill-opacity="{_f(marker["opacity"])}"' if marker.get("opacity") is not None else ""
        return f'<rect x="{_f(x - 6)}" y="{_f(y - 6)}" width="12" height="12" fill="{marker.get("color")}"{fade}/>'
    if "markers" in t.get("mode", ""):
        marker = t.get("marker") or {}
        symbol = marker.get("symbol", "circle")
        return _marker(symbol if isinstance(symbol, str) else symbol[0], x, y, 11, marker.get("color", "#888888")
                       if isinstance(marker.get("color", ""), str) else "#888888", marker.get("line") or {})
    line = t.get("line") or {}
    dash = DASHES.get(line.get("dash", "solid"))
    return (f'<line x1="{_f(x - 9)}" x2="{_f(x + 9)}" y1="{_f(y)}" y2="{_f(y)}" stroke="{line.get("color")}" '
            f'stroke-width="{_f(min(4.0, line.get("width", 2)))}"' + (f' stroke-dasharray="{dash}"' if dash else "")
            + "/>")


def svg(spec: dict, width: float = 760, label: str = "", css_class: str = "figure") -> str:
    """The whole figure: title, legend (above the plot when the spec puts it at y >= 1, else below), the plot,
    its annotations. The plot box keeps the spec's margins, grown where the title and a top legend need room.

    `label`: the figure's accessible name (role="img"); default its title in plain text."""
    layout = spec["layout"]
    margin = {"l": 40, "r": 20, "t": 60, "b": 40, **(layout.get("margin") or {})}
    title = (layout.get("title") or {}).get("text", "")
    title_h = 10 + 19 * len(_lines(title)) if title else 0
    legend_top = (layout.get("legend") or {}).get("y", 1.02) >= 1
    legend, legend_h = _legend(spec, width, title_h + 4)
    top = max(margin["t"], title_h + 4 + legend_h + 8) if legend_top else max(margin["t"], title_h + 8)
    height = float(layout.get("height", 450)) + top - margin["t"]
    box = (margin["l"], top, width - margin["r"], height - margin["b"])
    axes = _axes(spec, box)
    ticks, room = _ticks(spec, axes)
    if not legend_top:
        legend, legend_h = _legend(spec, width, box[3] + room + 8)
    body = [text_svg(title, 10, 8, 15, "start", "top", "title")] if title else []
    body += [ticks, _bars(spec, axes)]
    body += [_scatter(t, axes[_axis_key(t.get("xaxis", "x"), "x")], axes[_axis_key(t.get("yaxis", "y"), "y")])
             for t in spec["data"] if t.get("type", "scatter") == "scatter"]
    body += [_annotations(spec, axes, box), legend]
    total = height + room + (legend_h + 8 if not legend_top else 0)
    name = html.escape(label or plain(title).replace("\n", " · ") or "figure", quote=True)
    return (f'<svg class="{css_class}" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_f(width)} {_f(total)}" '
            f'role="img" aria-label="{name}" preserveAspectRatio="xMinYMin meet">{"".join(body)}</svg>')
