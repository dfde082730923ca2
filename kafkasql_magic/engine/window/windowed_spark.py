"""A push aggregation over TUMBLING or HOPPING windows, with ksqlDB's grace period, in Spark's
keyed state (`keyed_spark.py`), and the driver-side state SESSION windows still carry
(`WindowState`, `expired_message`: engine/build/sessions.py).

The staged records (`engine/aggregate/group_by_spark.py`'s `stage`) get an event-time watermark that is
exactly the largest record time of the batches before: the watermark column is the record time
shifted forward by the watermark's delay (`LATE_MARGIN`), so the watermark is the largest record
time itself and Spark never drops a record as late (a record older than stream time by less than
the margin; ksqlDB's records are late by grace periods, never by centuries). `StreamTime`,
keyed by the input partition, then gives each record its stream time (that watermark, or a
larger time of a record before it in its partition); `WindowAggregates`, keyed by the group
key, adds it to its open windows or logs it as late, and closes windows on event-time timers.
The watermark and both steps' state live in the query's checkpoint: a restarted persistent
query resumes with them.
"""

from __future__ import annotations

from typing import Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ...errors import StatementError
from ..aggregate.accumulators import has_accumulator
from ..analysis.plan import QueryPlan
from ..aggregate.group_by_spark import accumulator_specs, finished, stage
from ..build.batch_store import BatchState, BatchStore
from ..expressions.compile_spark import Scope
from ..columns import ERROR, OFFSET, PARTITION, TOPIC
from .keyed_spark import StreamTime, WindowAggregates
from .timing import timing_of

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


def expired_message(grace: int) -> Column:
    """Kafka Streams' log line for a record dropped from a closed window."""
    return F.concat(F.lit("Skipping record for expired window. topic=["), F.col(TOPIC), F.lit("] partition=["),
                    F.col(PARTITION).cast("string"), F.lit("] offset=["), F.col(OFFSET).cast("string"),
                    F.lit("] timestamp=["), F.col("__t").cast("string"), F.lit("] window=["),
                    F.col("__wstart").cast("string"), F.lit(","), F.col("__wend").cast("string"),
                    F.lit(") expiration=["), (F.col("__stream") - F.lit(grace)).cast("string"),
                    F.lit("] streamTime=["), F.col("__stream").cast("string"), F.lit("]"))


#: The watermark's delay in days, by which the watermark column runs ahead of the record time.
LATE_MARGIN_DAYS = 100_000
LATE_MARGIN_MS = LATE_MARGIN_DAYS * 24 * 60 * 60 * 1000


def keyed_windowed(plan: QueryPlan, frame: DataFrame, scope: Scope, where_error: Column,
                   without_errors: Callable[[DataFrame, str], DataFrame], changelog: bool = False,
                   each: bool = False) -> DataFrame:
    """The windows' changes (EMIT CHANGES: once per batch and window, or per record with `each`)
    or closed windows (EMIT FINAL), with the late records as error rows. `changelog`: a window
    failing HAVING comes out as a tombstone instead of no row."""
    timing = timing_of(plan.grouping.window)
    for call in plan.grouping.calls:
        if not has_accumulator(call.name, len(call.args)):
            raise StatementError(f"{call.name} with {len(call.args)} argument(s) over {plan.grouping.window.kind} "
                                 "windows is not supported yet by kafkasql_magic.")
    staged = stage(plan, frame, scope, where_error)
    good = without_errors(staged.frame, "__errors_aggregate")
    specs, arguments = accumulator_specs(plan, staged, good)
    inputs = (good.withColumn("__t", F.unix_millis("__ts"))
              .withColumn("__wm", F.timestamp_millis(F.col("__t") + F.lit(LATE_MARGIN_MS)))
              .withWatermark("__wm", f"{LATE_MARGIN_DAYS} days")
              .select(*staged.keys, *dict.fromkeys(arguments), PARTITION, "__order", TOPIC, "__rt", "__rh", "__t",
                      "__wm"))
    names = inputs.columns
    timed_schema = T.StructType([*inputs.schema.fields, T.StructField("__stream", T.LongType())])
    timed = inputs.groupBy(PARTITION).transformWithState(
        StreamTime(names.index("__order"), names.index("__t"), timed_schema.fieldNames()), timed_schema, "Update",
        "EventTime", eventTimeColumnName="__wm")
    schema = timed.schema
    out = T.StructType([schema[k] for k in staged.keys]
                       + [T.StructField("__wstart", T.LongType()), T.StructField("__wend", T.LongType())]
                       + [field for *_, field in specs]
                       + [schema["__rt"], schema["__rh"], schema[PARTITION], T.StructField(OFFSET, T.LongType()),
                          T.StructField(ERROR, T.StringType()), T.StructField(TOPIC, T.StringType())])
    at = {"partition": PARTITION, "order": "__order", "topic": TOPIC, "rt": "__rt", "rh": "__rh", "t": "__t",
          "stream": "__stream"}
    processor = WindowAggregates([(name, [timed_schema.fieldNames().index(c) for c in columns], arg_type,
                                   field.dataType) for name, columns, arg_type, field in specs],
                                 {k: timed_schema.fieldNames().index(c) for k, c in at.items()},
                                 schema["__rh"].dataType, (timing.size, timing.advance, timing.grace),
                                 plan.statement.emit_final, each, out.fieldNames())
    grouped = timed.groupBy(*staged.keys).transformWithState(processor, out, "Update", "EventTime")
    return finished(plan, grouped, F.lit(False) if changelog else None)
