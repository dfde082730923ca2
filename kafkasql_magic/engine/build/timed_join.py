"""Stream-stream joins (INNER, LEFT, RIGHT, FULL) with ksqlDB's WITHIN and GRACE PERIOD.

Each side's records are held for the window's size plus the grace period behind stream time, as
ksqlDB's join stores hold them; a record that comes later than that is dropped, in an INNER join
too (ksqlDB: stored no more, so no later record of the other side meets it). Stream time is the
smaller of the two inputs' largest record times (Spark's `min` watermark policy): ksqlDB reads
its inputs in time order, Spark a micro-batch of each input as far as it goes, so the larger one
would drop the lagging input's records as late while a query catches up.

A record without a match is emitted with NULLs for the other side once no match can come any
more: when stream time has passed the record's time plus the window and the grace period
(ksqlDB 0.28+). On Spark that is an event-time watermark on each side and a time-range condition
between the sides' record times, so Spark keeps each side's records as state until the other
side's watermark passes their window, then emits the unmatched ones and drops them.

The watermark's delay is the window's size (before + after) plus the grace period: ksqlDB keeps
each side's records that long (its join stores' retention), so a record out of order but inside
that time still meets every record of the other side in its window. Spark's one watermark both
drops late rows and closes windows, so an unmatched record comes out later than in ksqlDB: once
stream time has passed its window plus this delay.

The event-time columns are the record times plus 1 ms: Spark's watermark starts at 0 and a row
at or below the watermark is late, so a record at time 0 (Kafka's earliest) would never join.
Both sides move alike, so the WITHIN condition and the watermarks' distances are unchanged.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ..analysis.windows import DEFAULT_GRACE_MS


def _interval(ms: int) -> Column:
    return F.expr(f"INTERVAL {ms} MILLISECONDS")


def _event_time(record_time: str) -> Column:
    return F.timestamp_millis(F.col(record_time) + F.lit(1))


def watermarked(left: DataFrame, right: DataFrame, left_time: str, right_time: str, within: tuple[int, int],
                grace: int | None, index: int) -> tuple[DataFrame, DataFrame, Column]:
    """Both sides with a watermarked event-time column (`__wt0`, `__wt{index}`; ROWTIME + 1 ms as a
    timestamp) and the WITHIN (before, after) condition over them: right in [left - before, left + after]."""
    before, after = within
    delay = f"{before + after + (DEFAULT_GRACE_MS if grace is None else grace)} milliseconds"
    left_wt, right_wt = "__wt0", f"__wt{index}"
    if left_wt not in left.columns:
        left = left.withColumn(left_wt, _event_time(left_time)).withWatermark(left_wt, delay)
    right = right.withColumn(right_wt, _event_time(right_time)).withWatermark(right_wt, delay)
    condition = ((F.col(right_wt) >= F.col(left_wt) - _interval(before))
                 & (F.col(right_wt) <= F.col(left_wt) + _interval(after)))
    return left, right, condition
