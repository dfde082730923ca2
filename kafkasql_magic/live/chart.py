"""A live chart of a push query's rows: `%%kstream --chart "line x=WINDOWSTART y=TOTAL by=ITEM"`.

Pure Python: the chart is an SVG drawn from a snapshot's rows (the rows the widget holds, so
`--max-rows` sets how many), which the view puts in an HTML widget. Plain SVG needs no frontend
extension, so it renders wherever ipywidgets' HTML widget does.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import html
from dataclasses import dataclass

from .render import cell_text, plain

KINDS = ("line", "bar", "area")
WIDTH, HEIGHT, MARGIN = 640, 220, 44
#: series colours, in order (a colour-blind-safe palette)
COLORS = ("#1565c0", "#e65100", "#2e7d32", "#6a1b9a", "#c62828", "#00838f", "#827717", "#4e342e")


class ChartError(ValueError):
    """A chart option that cannot be drawn: says what is wrong and what is expected."""


@dataclass(frozen=True)
class ChartSpec:
    kind: str
    x: str
    y: str
    by: str | None = None


def parse_chart(text: str, columns) -> ChartSpec:
    """`[line|bar|area] x=COL y=COL [by=COL]`, the columns among the query's (case-insensitive,
    as ksqlDB's unquoted names)."""
    words = text.split()
    kind = words.pop(0).lower() if words and "=" not in words[0] else "line"
    if kind not in KINDS:
        raise ChartError(f"--chart: unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
    fields: dict[str, str] = {}
    for word in words:
        name, sep, value = word.partition("=")
        if not sep or name.lower() not in ("x", "y", "by") or not value:
            raise ChartError(f"--chart: {word!r} is not x=COL, y=COL or by=COL")
        fields[name.lower()] = _column(value, columns)
    missing = [n for n in ("x", "y") if n not in fields]
    if missing:
        raise ChartError(f"--chart needs {' and '.join(f'{n}=COL' for n in missing)} "
                         f"(columns: {', '.join(columns)})")
    return ChartSpec(kind, fields["x"], fields["y"], fields.get("by"))


def _column(name: str, columns) -> str:
    exact = [c for c in columns if c == name] or [c for c in columns if c.lower() == name.lower()]
    if not exact:
        raise ChartError(f"--chart: no column {name!r} in the result (columns: {', '.join(columns)})")
    return exact[0]


def _number(value) -> float | None:
    value = plain(value)
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float, decimal.Decimal)):
        return float(value)
    if isinstance(value, _dt.datetime):
        return value.timestamp()
    return None


def series(spec: ChartSpec, columns, rows) -> dict[str, list[tuple[float, float, str]]]:
    """The points to draw per series (`by`'s value, or the y column), sorted by x: (x, y, x's
    text). A text x is placed by its first appearance; a NULL or non-numeric y is left out."""
    xi, yi = columns.index(spec.x), columns.index(spec.y)
    bi = columns.index(spec.by) if spec.by else None
    categories: dict[str, int] = {}
    out: dict[str, list[tuple[float, float, str]]] = {}
    for row in rows:
        y = _number(row[yi])
        if y is None or row[xi] is None:
            continue
        x = _number(row[xi])
        if x is None:
            x = float(categories.setdefault(cell_text(row[xi]), len(categories)))
        name = cell_text(row[bi]) if bi is not None else spec.y
        out.setdefault(name, []).append((x, y, cell_text(row[xi])))
    return {name: sorted(points) for name, points in out.items()}


def _scale(lo: float, hi: float, size: float, flip: bool = False):
    span = (hi - lo) or 1.0

    def at(v: float) -> float:
        f = (v - lo) / span
        return MARGIN + (1 - f if flip else f) * (size - 2 * MARGIN)
    return at


def chart_svg(spec: ChartSpec, columns, rows) -> str:
    """The chart as one SVG element (an empty frame saying so when there is nothing to draw)."""
    esc = html.escape
    drawn = series(spec, columns, rows)
    head = (f'<svg class="kstream-chart" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
            f'viewBox="0 0 {WIDTH} {HEIGHT}" style="font:11px sans-serif">'
            f'<title>{esc(spec.kind)} of {esc(spec.y)} by {esc(spec.x)}</title>')
    points = [p for ps in drawn.values() for p in ps]
    if not points:
        return head + f'<text x="{WIDTH / 2}" y="{HEIGHT / 2}" text-anchor="middle" fill="#9e9e9e">no rows to chart yet</text></svg>'
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    y_lo, y_hi = min(0.0, min(ys)), max(0.0, max(ys))
    sx, sy = _scale(min(xs), max(xs), WIDTH), _scale(y_lo, y_hi, HEIGHT, flip=True)
    first, last = min(points), max(points)
    parts = [head,
             f'<line x1="{MARGIN}" y1="{sy(y_lo)}" x2="{MARGIN}" y2="{sy(y_hi)}" stroke="#bdbdbd"/>',
             f'<line x1="{MARGIN}" y1="{sy(0)}" x2="{WIDTH - MARGIN}" y2="{sy(0)}" stroke="#bdbdbd"/>',
             f'<text x="{MARGIN - 4}" y="{sy(y_hi) + 4}" text-anchor="end">{esc(_label(y_hi))}</text>',
             f'<text x="{MARGIN - 4}" y="{sy(y_lo) + 4}" text-anchor="end">{esc(_label(y_lo))}</text>',
             f'<text x="{MARGIN}" y="{HEIGHT - MARGIN + 16}">{esc(first[2])}</text>',
             f'<text x="{WIDTH - MARGIN}" y="{HEIGHT - MARGIN + 16}" text-anchor="end">{esc(last[2])}</text>',
             f'<text x="{WIDTH / 2}" y="{HEIGHT - 6}" text-anchor="middle" fill="#616161">{esc(spec.x)}</text>']
    bar_width = max(2.0, (WIDTH - 2 * MARGIN) / max(len(set(xs)), 1) / (len(drawn) + 1))
    for n, (name, pts) in enumerate(drawn.items()):
        color = COLORS[n % len(COLORS)]
        if spec.kind == "bar":
            for x, y, text in pts:
                top, bottom = sorted((sy(y), sy(0)))
                left = sx(x) - bar_width * len(drawn) / 2 + n * bar_width
                parts.append(f'<rect x="{left:.1f}" y="{top:.1f}" width="{bar_width:.1f}" height="{bottom - top:.1f}" '
                             f'fill="{color}"><title>{esc(name)} {esc(text)}: {esc(_label(y))}</title></rect>')
        else:
            line = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y, _ in pts)
            if spec.kind == "area":
                area = f"{sx(pts[0][0]):.1f},{sy(0):.1f} {line} {sx(pts[-1][0]):.1f},{sy(0):.1f}"
                parts.append(f'<polygon points="{area}" fill="{color}" fill-opacity="0.25"/>')
            parts.append(f'<polyline points="{line}" fill="none" stroke="{color}" stroke-width="2"/>')
            parts += [f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="2.5" fill="{color}"><title>{esc(name)} '
                      f'{esc(text)}: {esc(_label(y))}</title></circle>' for x, y, text in pts]
        parts.append(f'<text x="{MARGIN + 120 * n}" y="14" fill="{color}">■ {esc(name[:18])}</text>')
    return "".join(parts) + "</svg>"


def _label(value: float) -> str:
    return f"{value:,.0f}" if value == int(value) else f"{value:,.2f}"
