"""Text and HTML renderings of a live snapshot.

Kept apart from the model so the model stays a small thread-safe container and the view
and the plain-text fallback share one formatting of cells.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import html
import json
from typing import Any, Callable

MAX_CELL = 80
NULL = "NULL"

_CONTROL = str.maketrans({"\n": "\\n", "\r": "\\r", "\t": "\\t"})


def _bytes(value: bytes | bytearray | memoryview) -> str:
    return repr(bytes(value))


def _mapping(value: dict) -> str:
    return "{" + ", ".join(f"{_inner(k)}: {_inner(v)}" for k, v in value.items()) + "}"


def _sequence(value: list | tuple) -> str:
    return "[" + ", ".join(_inner(v) for v in value) + "]"


# One table, looked up along the value's MRO (so bool wins over int, subclasses inherit).
FORMATTERS: dict[type, Callable[[Any], str]] = {
    type(None): lambda v: NULL,
    bool: lambda v: "true" if v else "false",
    int: str,
    float: repr,
    decimal.Decimal: str,
    str: lambda v: v,
    bytes: _bytes,
    bytearray: _bytes,
    memoryview: _bytes,
    dict: _mapping,
    list: _sequence,
    tuple: _sequence,
    _dt.datetime: lambda v: v.isoformat(sep=" "),
    _dt.date: lambda v: v.isoformat(),
    _dt.time: lambda v: v.isoformat(),
    object: str,
}

# Inside a STRUCT/ARRAY/MAP strings are quoted so that `["a, b"]` is not read as two items.
_INNER: dict[type, Callable[[Any], str]] = {str: lambda v: json.dumps(v, ensure_ascii=False)}


def _lookup(table: dict[type, Callable[[Any], str]], value: Any) -> Callable[[Any], str] | None:
    for klass in type(value).__mro__:
        fmt = table.get(klass)
        if fmt is not None:
            return fmt
    return None


def _inner(value: Any) -> str:
    fmt = _lookup(_INNER, value) or _lookup(FORMATTERS, value)
    return fmt(value)


def format_cell(value: Any, limit: int = MAX_CELL) -> str:
    """One line of text for a cell value, at most `limit` characters (unescaped)."""
    text = _lookup(FORMATTERS, value)(value).translate(_CONTROL)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


def format_rate(rate: float | None) -> str:
    return "–" if rate is None else f"{rate:,.1f}"


SPARK_BLOCKS = "▁▂▃▄▅▆▇█"


def sparkline(counts) -> str:
    """Per-second row counts as one line of block characters (empty when nothing arrived)."""
    top = max(counts, default=0)
    if not top:
        return ""
    steps = len(SPARK_BLOCKS) - 1  # the lowest block is the zero line
    return "".join(SPARK_BLOCKS[-(-c * steps // top)] for c in counts)


def status_fields(snap) -> list[tuple[str, str]]:
    """The status line as (label, value) pairs, shared by text and HTML."""
    return [
        ("state", snap.state),
        ("rows", f"{snap.rows_total:,}"),
        ("rows/s", format_rate(snap.rows_per_second)),
        ("records in/s", format_rate(snap.input_rows_per_second)),
        ("batch", "–" if snap.batch_id is None else str(snap.batch_id)),
        ("errors", f"{snap.error_count:,}"),
    ]


def status_text(snap) -> str:
    return "  ".join(f"{label}: {value}" for label, value in status_fields(snap))


_STATE_COLORS = {"FAILED": "#c62828", "RUNNING": "#2e7d32", "STARTING": "#757575"}


def status_html(snap) -> str:
    parts = []
    for label, value in status_fields(snap):
        style = ""
        if label == "state":
            style = f' style="font-weight:bold;color:{_STATE_COLORS.get(value, "inherit")}"'
        parts.append(f"{html.escape(label)}: <span{style}>{html.escape(value)}</span>")
    line = " &nbsp;·&nbsp; ".join(parts)
    spark = sparkline(snap.recent_rows)
    if spark:
        line += (f' &nbsp;<span class="kstream-spark" title="rows per second, last {len(snap.recent_rows)} s" '
                 f'style="letter-spacing:-1px;color:#1565c0">{html.escape(spark)}</span>')
    if snap.message:
        line += f'<div style="white-space:pre-wrap">{html.escape(snap.message)}</div>'
    return f'<div class="kstream-status" style="font-variant-numeric:tabular-nums">{line}</div>'


def newest_first(snap) -> list[tuple]:
    """Rows as a reader scans them: the newest (or most recently updated key) on top."""
    return list(reversed(snap.rows))


def table_text(snap) -> str:
    """A ksqlDB-CLI-like boxed table, newest row first."""
    cells = [[format_cell(v) for v in row] for row in newest_first(snap)]
    widths = [len(c) for c in snap.columns]
    for row in cells:
        widths = [max(w, len(c)) for w, c in zip(widths, row)]
    rule = "+" + "+".join("-" * (w + 2) for w in widths) + "+"

    def line(values):
        return "|" + "|".join(f" {v:<{w}} " for v, w in zip(values, widths)) + "|"

    out = [rule, line(snap.columns), rule, *(line(r) for r in cells)]
    if cells:
        out.append(rule)
    return "\n".join(out)


_CELL = "padding:1px 10px;border-bottom:1px solid #e0e0e0;white-space:nowrap;text-align:{align}"
_NUMBERS = (int, float, decimal.Decimal)


def _align(value) -> str:
    return "right" if isinstance(value, _NUMBERS) and not isinstance(value, bool) else "left"


def table_html(snap) -> str:
    """Aligned monospace columns, newest row on top; the SQL above on one line (full text on hover)."""
    esc = html.escape
    head = "".join(f'<th style="{_CELL.format(align="left")};position:sticky;top:0;background:#fafafa">'
                   f"{esc(c)}</th>" for c in snap.columns)
    body = "".join(
        "<tr>" + "".join(f'<td style="{_CELL.format(align=_align(v))}">{esc(format_cell(v))}</td>' for v in row)
        + "</tr>"
        for row in newest_first(snap)
    )
    title = ""
    if snap.title:
        one_line = " ".join(snap.title.split())
        title = (f'<div class="kstream-sql" title="{esc(snap.title)}" style="font-family:monospace;color:#616161;'
                 f'white-space:nowrap;overflow:hidden;text-overflow:ellipsis;max-width:100%">{esc(one_line)}</div>')
    return (
        f'{title}<div style="max-height:24em;overflow:auto">'
        '<table class="kstream-live" style="font-family:monospace;font-size:12px;line-height:1.4;'
        'border-collapse:collapse;font-variant-numeric:tabular-nums">'
        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"
    )


def errors_text(snap) -> str:
    return "\n".join(f"! {e}" for e in snap.latest_errors)


def errors_html(snap) -> str:
    if not snap.latest_errors:
        return ""
    items = "".join(f"<li>{html.escape(e)}</li>" for e in snap.latest_errors)
    return (
        f'<div class="kstream-errors" style="color:#c62828">'
        f"{snap.error_count:,} record error(s), latest:<ul>{items}</ul></div>"
    )


def to_text(snap) -> str:
    parts = [snap.title] if snap.title else []
    parts += [status_text(snap)]
    if snap.message:
        parts.append(snap.message)
    parts.append(table_text(snap))
    if snap.latest_errors:
        parts.append(errors_text(snap))
    return "\n".join(parts)


def to_html(snap) -> str:
    return status_html(snap) + table_html(snap) + errors_html(snap)
