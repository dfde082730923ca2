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

import numpy as np

MAX_CELL = 80
#: SQL NULL, as ksqlDB's CLI spells it; every display uses this one spelling
NULL = "null"

_CONTROL = str.maketrans({"\n": "\\n", "\r": "\\r", "\t": "\\t"})


def _bytes(value: bytes | bytearray | memoryview) -> str:
    """Bytes as text where they are printable UTF-8, each other byte as `\\xNN`."""
    text = bytes(value).decode("utf-8", "backslashreplace")
    return "".join(c if c.isprintable() or c == "\\" else f"\\x{ord(c):02x}" for c in text)


def _is_header(value: dict) -> bool:
    return len(value) == 2 and {str(k).lower() for k in value} == {"key", "value"}


def _header(value: dict) -> str:
    """A record header (ksqlDB's STRUCT<KEY, VALUE>, Materialize's record) as `key=value`."""
    by_name = {str(k).lower(): v for k, v in value.items()}
    return f"{cell_text(by_name['key'])}={cell_text(by_name['value'])}"


def _mapping(value: dict) -> str:
    if _is_header(value):
        return _header(value)
    return "{" + ", ".join(f"{_inner(k)}: {_inner(v)}" for k, v in value.items()) + "}"


def _sequence(value: list | tuple) -> str:
    return "[" + ", ".join(_inner(v) for v in value) + "]"


def _timestamp(value: _dt.datetime) -> str:
    """ISO 8601 with milliseconds (microseconds when there are any), `Z` for UTC."""
    micros = value.microsecond % 1000 or getattr(value, "nanosecond", 0)
    text = value.isoformat(timespec="microseconds" if micros else "milliseconds")
    return text[:-6] + "Z" if text.endswith("+00:00") else text


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
    _dt.datetime: _timestamp,
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
    value = plain(value)
    fmt = _lookup(_INNER, value) or _lookup(FORMATTERS, value)
    return fmt(value)


def plain(value: Any) -> Any:
    """A numpy scalar as the Python value it holds (pandas hands out numpy's numbers)."""
    return value.item() if isinstance(value, np.generic) and not isinstance(value, np.datetime64) else value


def cell_text(value: Any) -> str:
    """The whole text of a cell value, as every display shows it."""
    value = plain(value)
    return _lookup(FORMATTERS, value)(value)


def format_cell(value: Any, limit: int = MAX_CELL) -> str:
    """One line of text for a cell value, at most `limit` characters (unescaped): the live
    widget's compact cells (a finite result shows the whole text, `result.py`)."""
    text = cell_text(value).translate(_CONTROL)
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


def format_elapsed(seconds: float) -> str:
    """Whole seconds, as `7 s` or `2 min 05 s`."""
    whole = max(0, int(seconds))
    return f"{whole} s" if whole < 60 else f"{whole // 60} min {whole % 60:02d} s"


def status_fields(snap) -> list[tuple[str, str]]:
    """The status line as (label, value) pairs, shared by text and HTML."""
    return [
        ("state", snap.state),
        ("time", format_elapsed(snap.elapsed)),
        ("rows", f"{snap.rows_total:,}" + shown_note(snap)),
        ("rows/s", format_rate(snap.rows_per_second)),
        ("records in/s", format_rate(snap.input_rows_per_second)),
        ("batch", "–" if snap.batch_id is None else str(snap.batch_id)),
        ("errors", f"{snap.error_count:,}"),
    ]


def shown_note(snap) -> str:
    """What of the rows the table shows, once some went out of view."""
    if not snap.rows_dropped:
        return ""
    if snap.key_columns:
        return f" (showing the {len(snap.rows):,} most recently updated keys)"
    return f" (showing the latest {len(snap.rows):,} of {snap.rows_total:,})"


def status_text(snap) -> str:
    return "  ".join(f"{label}: {value}" for label, value in status_fields(snap))


def waiting_line(snap) -> str | None:
    """What a running query waits for, while it has no rows yet (or the cell waits for more):
    what it does before it reads (its phase), the records it reads and how to end it; None once
    rows flow in a live widget or it ended."""
    if snap.terminal or (snap.rows_total and not snap.blocking):
        return None
    if snap.phase:
        parts = [snap.phase]
    elif snap.rows_total:
        parts = ["waiting for more rows…"]
    elif snap.input_rows_total:
        parts = [f"waiting for matching rows… {snap.input_rows_total:,} records read"]
    else:
        parts = ["waiting for records…"]
    if snap.reading:
        parts.append(f"reads {snap.reading}")
    parts.append("Interrupt (■) stops the query" if snap.blocking else "Stop ends it")
    return " · ".join(parts)


#: the phase of a query from its plan until its stream started (Spark builds and starts it)
PREPARING = "preparing the query…"


def starting_text(elapsed: float, *, background: bool) -> str:
    """The status line of a cell waiting for the Spark session (a kernel's first query)."""
    if background:
        return (f"Spark is still starting · {format_elapsed(elapsed)} since %load_ext started it · "
                "the query runs as soon as it is up")
    return (f"Spark is starting · {format_elapsed(elapsed)} · the first query in a kernel starts it "
            "(about 20 s on 2 cores); the query runs as soon as it is up")


def starting_html(elapsed: float, *, background: bool) -> str:
    return (f'<div class="kstream-status kstream-spark-starting" style="color:#757575;'
            f'font-variant-numeric:tabular-nums">{html.escape(starting_text(elapsed, background=background))}</div>')


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
    waiting = waiting_line(snap)
    if waiting:
        line += f'<div class="kstream-waiting" style="color:#616161">{html.escape(waiting)}</div>'
    if snap.message:
        line += f'<div style="white-space:pre-wrap">{html.escape(snap.message)}</div>'
    return f'<div class="kstream-status" style="font-variant-numeric:tabular-nums">{line}</div>'


def newest_first(snap) -> list[tuple]:
    """Rows as a reader scans them: the newest (or most recently updated key) on top."""
    return list(reversed(snap.rows))


def table_text(snap) -> str:
    """A ksqlDB-CLI-like boxed table, newest row first."""
    return boxed(snap.columns, [[format_cell(v) for v in row] for row in newest_first(snap)])


def boxed(columns, cells: list[list[str]]) -> str:
    """Cell texts as a ksqlDB-CLI-like boxed table; a cell of several lines makes its row as tall."""
    split = [[c.split("\n") for c in row] for row in cells]
    widths = [len(c) for c in columns]
    for row in split:
        widths = [max(w, *(len(line) for line in c)) for w, c in zip(widths, row)]
    rule = "+" + "+".join("-" * (w + 2) for w in widths) + "+"

    def lines(row: list[list[str]]) -> list[str]:
        return ["|" + "|".join(f" {(c[i] if i < len(c) else ''):<{w}} " for c, w in zip(row, widths)) + "|"
                for i in range(max((len(c) for c in row), default=1))]

    out = [rule, *lines([[c] for c in columns]), rule, *(line for row in split for line in lines(row))]
    if cells:
        out.append(rule)
    return "\n".join(out)


_CELL = "padding:1px 10px;border-bottom:1px solid #e0e0e0;white-space:nowrap;text-align:{align}"
#: a finite result's cells: the whole text; a short value on one line (`pre`: a browser never
#: breaks it to narrow its column), a long one or one of several lines wrapped between words
#: (anywhere in a word longer than the column), its line breaks kept
_WHOLE = "padding:1px 10px;border-bottom:1px solid #e0e0e0;vertical-align:top;white-space:pre;text-align:{align}"
_WRAPPED = ("padding:1px 10px;border-bottom:1px solid #e0e0e0;vertical-align:top;white-space:pre-wrap;"
            "overflow-wrap:anywhere;min-width:24em;text-align:{align}")
#: values longer than this wrap
SHORT = 40
_NUMBERS = (int, float, decimal.Decimal)
_NULL_STYLE = ";color:#9e9e9e"  # a NULL reads apart from the text 'null'


def _align(value) -> str:
    value = plain(value)
    return "right" if isinstance(value, _NUMBERS) and not isinstance(value, bool) else "left"


def html_table(columns, rows, text: Callable[[Any], str] = format_cell, *, css_class: str = "kstream-live",
               wrap: bool = False) -> str:
    """Aligned monospace columns under sticky headers: the live widget's look, which every result
    shares. `text` turns a value into its cell's text; `wrap` lets long cells wrap."""
    esc = html.escape

    def style(cell: str) -> str:
        if not wrap:
            return _CELL
        return _WRAPPED if len(cell) > SHORT or "\n" in cell else _WHOLE

    head = "".join(f'<th style="{_CELL.format(align="left")};position:sticky;top:0;background:#fafafa">'
                   f"{esc(str(c))}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f'<td style="{style(t).format(align=_align(v))}{_NULL_STYLE if v is None else ""}">'
                         f"{esc(t)}</td>" for v, t in ((v, text(v)) for v in row)) + "</tr>"
        for row in rows
    )
    return (f'<table class="{css_class}" style="font-family:monospace;font-size:12px;line-height:1.4;'
            'border-collapse:collapse;font-variant-numeric:tabular-nums">'
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")


def table_html(snap) -> str:
    """Aligned monospace columns, newest row on top; the SQL above on one line (full text on hover)."""
    esc = html.escape
    title = ""
    if snap.title:
        one_line = " ".join(snap.title.split())
        title = (f'<div class="kstream-sql" title="{esc(snap.title)}" style="font-family:monospace;color:#616161;'
                 f'white-space:nowrap;overflow:hidden;text-overflow:ellipsis;max-width:100%">{esc(one_line)}</div>')
    return (f'{title}<div style="max-height:24em;overflow:auto">'
            f"{html_table(snap.columns, newest_first(snap))}</div>")


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
    waiting = waiting_line(snap)
    if waiting:
        parts.append(waiting)
    if snap.message:
        parts.append(snap.message)
    parts.append(table_text(snap))
    if snap.latest_errors:
        parts.append(errors_text(snap))
    return "\n".join(parts)


def to_html(snap, above_table: str = "") -> str:
    """The status line, `above_table` (a chart), the table and the errors."""
    return status_html(snap) + above_table + table_html(snap) + errors_html(snap)
