"""Window timing: ksqlDB's GRACE PERIOD and RETENTION defaults and rules, and EMIT FINAL.

A windowed aggregation accepts a record into a window until stream time (the largest record
time seen) passes the window's end plus the grace period; the window is then closed, a record
still falling in it is late (dropped and logged), and EMIT FINAL emits the window's one row.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import StatementError
from ...sql import ast

#: ksqlDB's grace period when a window names none: Kafka Streams' 24 hours, which ksqlDB keeps.
DEFAULT_GRACE_MS = 24 * 60 * 60 * 1000

#: The window store ksqlDB names in its retention message.
WINDOW_STORE = "Aggregate-Aggregate-Materialize"

EMIT_FINAL_NEEDS_WINDOW = "EMIT FINAL is only supported for windowed aggregations."

SESSION_AFTER_STREAM_JOIN = "SESSION windows after a stream-stream join are not supported yet by kafkasql_magic."


@dataclass(frozen=True)
class WindowTiming:
    """A window's size, hop (the size for a tumbling window), grace and retention in ms."""

    size: int
    advance: int
    grace: int
    retention: int


def timing_of(window: ast.Window) -> WindowTiming:
    """The window's timing with ksqlDB's defaults: 24 hours' grace, retention size + grace."""
    grace = DEFAULT_GRACE_MS if window.grace is None else window.grace
    retention = window.size + grace if window.retention is None else window.retention
    return WindowTiming(window.size, window.advance or window.size, grace, retention)


def check_window_timing(stmt: ast.Select, aggregating: bool) -> None:
    """ksqlDB's refusals: EMIT FINAL without a windowed aggregation, and a retention shorter
    than the window's size plus its grace period (Kafka Streams' window-store message)."""
    if stmt.emit_final and not (aggregating and stmt.group_by and stmt.window is not None):
        raise StatementError(EMIT_FINAL_NEEDS_WINDOW)
    window = stmt.window
    if window is None or window.retention is None or window.kind == "SESSION":
        return
    timing = timing_of(window)
    if timing.size + timing.grace > timing.retention:
        raise StatementError(f"The retention period of the window store {WINDOW_STORE} must be no smaller than its "
                             f"window size plus the grace period. Got size=[{timing.size}], grace=[{timing.grace}], "
                             f"retention=[{timing.retention}]")


def tracks_stream_time(stmt: ast.Select, aggregating: bool) -> bool:
    """Every windowed push aggregation keeps stream time from batch to batch, with ksqlDB's
    grace period (24 hours when the window names none), so that late records are dropped and
    logged and EMIT FINAL knows when a window closes. Spark's own windowed aggregation has no
    grace: it would count a record however late it comes (and emits a session only once closed)."""
    return aggregating and stmt.emit_changes and stmt.window is not None
