"""A windowed source's record key, split: the inner key (what the key format decodes) and the
window bounds after it, as Spark columns. Kafka Streams writes the window's start as 8
big-endian bytes after the inner key (a SESSION window: its end, then its start)."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ...catalog import SourceDef
from ..analysis.windowed_source import SourceWindow, window_of
from ..columns import PARTITION, WINDOWEND, WINDOWSTART


def _hex8(raw: Column, from_end: int) -> Column:
    """The hex digits of the 8 bytes ending `from_end` bytes before the end of `raw`."""
    return F.hex(F.substring(raw, F.length(raw) - F.lit(from_end + 7), F.lit(8)))


def _signed(hex_text: Column) -> Column:
    """16 hex digits (two's complement) -> BIGINT (a negative base makes `conv` signed)."""
    return F.conv(hex_text, 16, -10).cast("bigint")


def inner_key(source: SourceDef) -> Column:
    """The key bytes the key format decodes: without the window for a windowed source."""
    window = window_of(source)
    raw = F.col("key")
    if window is None:
        return raw
    return F.when(F.length(raw) >= window.suffix, F.substring(raw, F.lit(1), F.length(raw) - F.lit(window.suffix)))


def _bounds(window: SourceWindow) -> dict[str, Column]:
    raw = F.col("key")
    start = _signed(_hex8(raw, 0))
    end = _signed(_hex8(raw, 8)) if window.kind == "SESSION" else start + F.lit(window.size)
    valid = F.length(raw) >= window.suffix
    return {WINDOWSTART: F.when(valid, start), WINDOWEND: F.when(valid, end)}


def window_columns(source: SourceDef) -> dict[str, Column]:
    """WINDOWSTART, WINDOWEND and the value columns that hold one of them (`WINDOWSTART AS WS`
    in the CTAS that wrote the table), by name; empty for a source without a window."""
    window = window_of(source)
    if window is None:
        return {}
    bounds = _bounds(window)
    return {**bounds, **{column: bounds[bound] for column, bound in window.bound_columns}}


def key_error(source: SourceDef) -> Column | None:
    """Why a windowed source's record key holds no window (it is too short), else NULL."""
    window = window_of(source)
    if window is None:
        return None
    raw = F.col("key")
    return F.when(raw.isNotNull() & (F.length(raw) < window.suffix),
                  F.lit(f"Failed to deserialize key: a {window.kind} windowed key needs {window.suffix} bytes "
                        "of window after the key"))


def retained(rows: DataFrame, raw: DataFrame, source: SourceDef) -> DataFrame:
    """A windowed table's current `rows` without the windows its store no longer holds: Kafka
    Streams keeps a store per partition whose stream time is the largest window bound written
    (`SourceWindow.store_time`: start, or a session's end), and drops a window whose bound is
    not after stream time minus the retention. `raw`: every record read, tombstones too (they
    advance stream time as well). A row without a window (a bad record, to be reported) stays."""
    window = window_of(source)
    if window is None or window.retention is None:
        return rows
    bound = _bounds(window)[window.store_time]
    newest = raw.groupBy(F.col("partition").alias("__store")).agg(F.max(bound).alias("__stream"))
    kept = F.col(window.store_time).isNull() | (F.col(window.store_time) > F.col("__stream") - F.lit(window.retention))
    return (rows.join(newest, F.col(PARTITION) == F.col("__store"), "left")
            .where(kept | F.col("__stream").isNull()).drop("__store", "__stream"))
