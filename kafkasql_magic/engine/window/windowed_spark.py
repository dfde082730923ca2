"""A push aggregation over TUMBLING or HOPPING windows, with ksqlDB's grace period.

Spark's own windowed aggregation advances its watermark only between micro-batches and drops
late records without saying which, so this one runs per micro-batch (`QueryPlan.tracks_time`)
with `WindowState` carried on the driver: stream time (the largest record time seen) and the
staged rows of the windows still open. Within a batch, each record meets the stream time of
the batches before and of the records before it in its own partition (offset order), so records
of different partitions in one batch do not make each other late. A record whose window
ended at least the grace period before stream time is late: it is dropped from that window
and logged (Kafka Streams' "Skipping record for expired window" text). A window closes when
stream time reaches its end plus the grace period; its rows then leave the state.
EMIT CHANGES emits the new row of every window a batch changed; EMIT FINAL emits a window's
one row when it closes.
"""

from __future__ import annotations

from typing import Callable

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from ..analysis.plan import QueryPlan
from .timing import timing_of
from ..columns import ERROR, OFFSET, ORIGIN, PARTITION, TOPIC
from ..build.aggregate import aggregate_columns, finished, record_columns, stage
from ..build.expressions import Scope
from ..build.batch_store import BatchState, BatchStore

#: Stream time before any record: earlier than every record time.
NO_TIME = -(2 ** 62)


class WindowState(BatchState):
    """Stream time and the open windows' staged rows, carried from one micro-batch to the next
    (and, with a `store`, kept beside a persistent query's checkpoint for its restarts)."""

    def __init__(self, store: BatchStore | None = None):
        super().__init__(store)
        self.stream_time = NO_TIME
        self.members: DataFrame | None = None

    def restore(self, facts: dict, rows: DataFrame | None) -> None:
        self.stream_time, self.members = facts.get("stream_time", NO_TIME), rows

    def advance(self, batch_id: int | None, stream_time: int, members: DataFrame) -> None:
        self.stream_time, self.members = stream_time, members
        self.keep(batch_id, {"stream_time": stream_time}, members)


def window_starts(time: Column, size: int, advance: int) -> Column:
    """The starts of the epoch-aligned windows holding `time` (ms): every multiple of
    `advance` in (time - size, time], as Spark's and ksqlDB's hopping windows; none before the
    epoch for a time after it (Kafka Streams' `TimeWindows.windowsFor` starts at 0)."""
    last = time - F.pmod(time, F.lit(advance))
    first = (time - F.lit(size)) - F.pmod(time - F.lit(size), F.lit(advance)) + F.lit(advance)
    first = F.when(time >= 0, F.greatest(first, F.lit(0).cast("bigint"))).otherwise(first)
    return F.sequence(first, last, F.lit(advance).cast("bigint"))


def expired_message(grace: int) -> Column:
    """Kafka Streams' log line for a record dropped from a closed window."""
    return F.concat(F.lit("Skipping record for expired window. topic=["), F.col(TOPIC), F.lit("] partition=["),
                    F.col(PARTITION).cast("string"), F.lit("] offset=["), F.col(OFFSET).cast("string"),
                    F.lit("] timestamp=["), F.col("__t").cast("string"), F.lit("] window=["),
                    F.col("__wstart").cast("string"), F.lit(","), F.col("__wend").cast("string"),
                    F.lit(") expiration=["), (F.col("__stream") - F.lit(grace)).cast("string"),
                    F.lit("] streamTime=["), F.col("__stream").cast("string"), F.lit("]"))


def windowed(plan: QueryPlan, frame: DataFrame, scope: Scope, where_error: Column, state: WindowState,
             without_errors: Callable[[DataFrame, str], DataFrame], batch_id: int | None = None) -> DataFrame:
    """One micro-batch (`batch_id`, as Spark numbers them) of a windowed aggregation -> the rows it emits."""
    state.resume(frame.sparkSession, batch_id)
    timing = timing_of(plan.grouping.window)
    staged = stage(plan, frame, scope, where_error)
    batch = staged.frame.localCheckpoint()  # read and decoded once
    order = Window.partitionBy(PARTITION).orderBy("__order").rowsBetween(Window.unboundedPreceding,
                                                                         Window.currentRow)
    good = (batch.where(F.col(ERROR).isNull()).withColumn("__t", F.unix_millis("__ts"))
            .withColumn("__stream", F.greatest(F.max("__t").over(order), F.lit(state.stream_time)))
            .withColumn("__wstart", F.explode(window_starts(F.col("__t"), timing.size, timing.advance)))
            .withColumn("__wend", F.col("__wstart") + F.lit(timing.size))
            .withColumn("__late", F.col("__wend") + F.lit(timing.grace) <= F.col("__stream"))
            .localCheckpoint())
    late = good.where("__late").select(expired_message(timing.grace).alias(ERROR), *ORIGIN)
    without_errors(batch.select(ERROR, *ORIGIN).unionByName(late), "__errors_aggregate")
    members = [*staged.keys, *[c for c in good.columns if c.startswith("__a")], "__order", "__rt", "__rh",
               "__wstart", "__wend"]
    accepted = good.where(~F.col("__late")).select(*members)
    newest = good.agg(F.max("__t")).first()[0]
    stream_time = max(state.stream_time, newest if newest is not None else NO_TIME)
    current = accepted if state.members is None else state.members.unionByName(accepted)
    windows = [*staged.keys, "__wstart", "__wend"]
    if plan.statement.emit_final:
        emitting = current.where(F.col("__wend") + F.lit(timing.grace) <= F.lit(stream_time))
    else:
        emitting = current.join(accepted.select(*windows).distinct(), windows, "left_semi")
    grouped = emitting.groupBy(*windows).agg(  # over frames that stay as they are
        *aggregate_columns(staged), *record_columns(F.struct(F.col("__rt"), F.col("__order"))))
    state.advance(batch_id, stream_time,
                  current.where(F.col("__wend") + F.lit(timing.grace) > F.lit(stream_time)).localCheckpoint())
    return finished(plan, grouped)
