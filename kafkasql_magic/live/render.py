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


def status_fields(snap) -> list[tuple[str, str]]:
    """The status line as (label, value) pairs, shared by text and HTML."""
    return [
        ("state", snap.state),
        ("batch", "–" if snap.batch_id is None else str(snap.batch_id)),
        ("rows", f"{snap.rows_total:,}"),
        ("input rows/s", format_rate(snap.input_rows_per_second)),
        ("processed rows/s", format_rate(snap.processed_rows_per_second)),
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
    if snap.message:
        line += f'<div style="white-space:pre-wrap">{html.escape(snap.message)}</div>'
    return f'<div class="kstream-status">{line}</div>'


def table_text(snap) -> str:
    """A ksqlDB-CLI-like boxed table."""
    cells = [[format_cell(v) for v in row] for row in snap.rows]
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


def table_html(snap) -> str:
    esc = html.escape
    head = "".join(f"<th>{esc(c)}</th>" for c in snap.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{esc(format_cell(v))}</td>" for v in row) + "</tr>"
        for row in snap.rows
    )
    title = f"<caption>{esc(snap.title)}</caption>" if snap.title else ""
    return (
        '<table class="kstream-live" style="font-family:monospace">'
        f"{title}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
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
