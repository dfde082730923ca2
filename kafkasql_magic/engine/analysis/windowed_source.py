"""Windowed tables (a CTAS with WINDOW TUMBLING/HOPPING, or a source declared WITH
WINDOW_TYPE): their window, their WINDOWSTART/WINDOWEND columns, and ksqlDB's rules for
bounding those columns in a pull query. Pure: no Spark.

Kafka Streams writes a windowed key as the inner key followed by the window's start (8 bytes,
big-endian milliseconds; a SESSION key has its end then its start), so a windowed table has
one row per key and window; WINDOWEND is the start plus the window's size.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...catalog import SourceDef
from ...errors import StatementError
from ...sql import ast
from ...sql.build_helpers import TIME_UNITS_MS
from ...sql.render import render
from ..columns import WINDOWEND, WINDOWSTART
from .checks import PULL_QUERY_SYNTAX_HELP
from .seek import conjuncts
from ..window.timing import timing_of

WINDOW_BOUNDS = (WINDOWSTART, WINDOWEND)
#: A windowed sink's value columns that hold a window bound (`WINDOWSTART AS WS`), "WS=WINDOWSTART,...":
#: kafkasql_magic writes the bound into the key only, so reading fills them from there.
BOUND_COLUMNS = "KAFKASQL_WINDOW_BOUND_COLUMNS"
#: A windowed CTAS's store retention in ms (its RETENTION, else ksqlDB's size + grace): a pull
#: query leaves out the windows ksqlDB's store would have dropped.
RETENTION = "KAFKASQL_WINDOW_RETENTION"

#: Comparison -> ksqlDB's name for it, as its window-bound messages spell it.
COMPARISONS = {"=": "EQUAL", "<>": "NOT_EQUAL", "<": "LESS_THAN", "<=": "LESS_THAN_OR_EQUAL",
               ">": "GREATER_THAN", ">=": "GREATER_THAN_OR_EQUAL"}
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=", "<>": "<>"}

#: What ksqlDB adds to a refused WHERE clause of a pull query on a windowed table.
WHERE_HELP = (PULL_QUERY_SYNTAX_HELP + "\nPull queries require a WHERE clause that:\n - limits the query to a single key, e.g. "
              "`SELECT * FROM X WHERE <key-column>=Y;`.\n - (optionally) limits the time bounds of the windowed "
              "table.\n\t Bounds on [`WINDOWSTART`, `WINDOWEND`] are supported\n\t Supported operators are "
              "[EQUAL, GREATER_THAN, GREATER_THAN_OR_EQUAL, LESS_THAN, LESS_THAN_OR_EQUAL]")


@dataclass(frozen=True)
class SourceWindow:
    """A windowed source's window: kind (TUMBLING, HOPPING, SESSION), size in ms (None for
    SESSION, whose end is in the key), the value columns that hold a bound, and the retention
    of the store that wrote it (ms; None when unknown: a source declared WITH WINDOW_TYPE)."""

    kind: str
    size: int | None
    bound_columns: tuple[tuple[str, str], ...] = ()
    retention: int | None = None

    @property
    def store_time(self) -> str:
        """The bound Kafka Streams' store keeps windows by (its stream time is the largest
        one written, and a window whose bound is not after it minus the retention is gone):
        a time window's start, a session's end."""
        return WINDOWEND if self.kind == "SESSION" else WINDOWSTART

    @property
    def suffix(self) -> int:
        """Bytes after the inner key."""
        return 16 if self.kind == "SESSION" else 8


def _duration_ms(text) -> int | None:
    """'10 SECONDS', '500 MILLISECONDS' or a bare number of milliseconds."""
    found = re.fullmatch(r"\s*(\d+)\s*([A-Za-z]*)\s*", str(text))
    if not found:
        return None
    unit = found.group(2).upper() or "MILLISECONDS"
    scale = TIME_UNITS_MS.get(unit) or TIME_UNITS_MS.get(unit + "S")
    return int(found.group(1)) * scale if scale else None


def window_of(source: SourceDef | None) -> SourceWindow | None:
    """The window of a windowed source, else None."""
    if source is None:
        return None
    kind = str(source.properties.get("WINDOW_TYPE") or "").upper()
    if not kind:
        return None
    size = _duration_ms(source.properties.get("WINDOW_SIZE")) if kind != "SESSION" else None
    if kind != "SESSION" and size is None:
        raise StatementError(f"{source.name}: a {kind} window needs WINDOW_SIZE, e.g. WINDOW_SIZE='10 SECONDS'")
    bounds = tuple(tuple(pair.split("=", 1)) for pair in str(source.properties.get(BOUND_COLUMNS) or "").split(",")
                   if "=" in pair)
    retention = source.properties.get(RETENTION)
    return SourceWindow(kind, size, bounds, int(retention) if retention else None)


def sink_properties(window: ast.Window, bound_columns: dict[str, str]) -> dict[str, str]:
    """What a windowed CTAS sink's catalog entry records of its window (ksqlDB's WITH names),
    and which of its value columns (`bound_columns`: bound -> column) hold a bound."""
    return {"WINDOW_TYPE": window.kind, "WINDOW_SIZE": f"{window.size} MILLISECONDS",
            BOUND_COLUMNS: ",".join(f"{column}={bound}" for bound, column in bound_columns.items()),
            RETENTION: str(timing_of(window).retention)}


def star_columns(source: SourceDef, columns: tuple[str, ...]) -> tuple[str, ...]:
    """`SELECT *` over a windowed source: the key columns, WINDOWSTART, WINDOWEND, the rest (ksqlDB's order)."""
    keys = {c.name for c in source.key_columns}
    return tuple(c for c in columns if c in keys) + WINDOW_BOUNDS + tuple(c for c in columns if c not in keys)


def _bound_of(e: ast.Expr) -> tuple[str, str, ast.Expr] | None:
    """(bound column, comparison with the column on the left, other side) of a comparison on a bound."""
    if not (isinstance(e, ast.BinaryOp) and e.op in COMPARISONS):
        return None
    for column, other, op in ((e.left, e.right, e.op), (e.right, e.left, _FLIP[e.op])):
        if isinstance(column, ast.ColumnRef) and column.name.upper() in WINDOW_BOUNDS:
            return column.name.upper(), op, other
    return None


def _invalid(message: str) -> StatementError:
    return StatementError(f"{message}. {WHERE_HELP}")


def _is_constant(e: ast.Expr) -> bool:
    if isinstance(e, ast.UnaryOp):
        return _is_constant(e.operand)
    return isinstance(e, ast.Literal) and e.kind in ("INT", "BIGINT")


def check_window_bounds(stmt: ast.Select, source: SourceDef | None) -> None:
    """ksqlDB's rules for WINDOWSTART/WINDOWEND in a pull query's WHERE clause: only over a
    windowed source; =, <, <=, >, >= (BETWEEN is both bounds) against milliseconds; at most one
    lower and one upper bound per column, and an equality alone."""
    windowed = window_of(source) is not None
    seen: dict[tuple[str, str], ast.Expr] = {}
    for conjunct in conjuncts(stmt.where):
        if isinstance(conjunct, ast.Between) and isinstance(conjunct.operand, ast.ColumnRef) \
                and conjunct.operand.name.upper() in WINDOW_BOUNDS and not conjunct.negated:
            column = conjunct.operand
            pieces = [ast.BinaryOp(">=", column, conjunct.low), ast.BinaryOp("<=", column, conjunct.high)]
        else:
            pieces = [conjunct]
        for piece in pieces:
            found = _bound_of(piece)
            if found is None:
                continue
            column, op, other = found
            if op == "<>":
                raise _invalid(f"Unsupported {column} bounds: {COMPARISONS[op]}")
            if not windowed:
                raise _invalid("Cannot use WINDOWSTART/WINDOWEND on non-windowed source")
            if not _is_constant(other):
                raise _invalid("Window bounds must be an INT, BIGINT or STRING containing a datetime")
            kind = {"<": "LESS_THAN", "<=": "LESS_THAN", ">": "GREATER_THAN", ">=": "GREATER_THAN"}.get(op, "EQUAL")
            if (column, kind) in seen:
                raise _invalid(f"Duplicate {column} bounds on: {kind}")
            seen[(column, kind)] = piece
            equal = seen.get((column, "EQUAL"))
            if equal is not None and len([k for c, k in seen if c == column]) > 1:
                raise _invalid(f"`{render(equal)}` cannot be combined with other {column} bounds")
