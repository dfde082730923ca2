"""The stream-stream join on Spark: both sides with a watermarked event-time column (the record
time plus `rules.EVENT_TIME_SHIFT_MS`, delayed by `rules.hold_ms`) and WITHIN as a condition over
them, so Spark keeps each side's records as state until the other side's watermark passes their
window, then emits an outer join's unmatched ones and drops them."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from .rules import EVENT_TIME_SHIFT_MS, hold_ms


def _interval(ms: int) -> Column:
    return F.expr(f"INTERVAL {ms} MILLISECONDS")


def _event_time(record_time: str) -> Column:
    return F.timestamp_millis(F.col(record_time) + F.lit(EVENT_TIME_SHIFT_MS))


def stream_stream_joined(left: DataFrame, right: DataFrame, left_time: str, right_time: str, within: tuple[int, int],
                         grace: int | None, index: int, condition: Column, how: str) -> DataFrame:
    """`left` joined `how` with the stream `right` (FROM item `index`) on `condition` and WITHIN
    (before, after) over their record times (`left_time`, `right_time` columns, epoch ms), each
    side with a watermarked event-time column (`__wt0`, `__wt{index}`)."""
    before, after = within
    delay = f"{hold_ms(within, grace)} milliseconds"
    left_wt, right_wt = "__wt0", f"__wt{index}"
    if left_wt not in left.columns:
        left = left.withColumn(left_wt, _event_time(left_time)).withWatermark(left_wt, delay)
    right = right.withColumn(right_wt, _event_time(right_time)).withWatermark(right_wt, delay)
    timed = (F.col(right_wt) >= F.col(left_wt) - _interval(before)) & (F.col(right_wt) <= F.col(left_wt) + _interval(after))
    return left.join(right, condition & timed, how)
