"""A push aggregation over TUMBLING or HOPPING windows, with ksqlDB's grace period, in Spark's
keyed state (`keyed_spark.py`); `timed` is the first step SESSION windows share (`sessions_spark.py`).

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

from dataclasses import dataclass
from typing import Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ...errors import StatementError
from ..aggregate.accumulators import has_accumulator
from ..analysis.plan import QueryPlan
from ..aggregate.build_spark import having_changes
from ..aggregate.group_by_spark import accumulator_specs, finished, stage
from ..expressions.compile_spark import Scope
from ..columns import ERROR, OFFSET, PARTITION, TOPIC
from ..pandas_step.exact_spark import through_pandas
from ..state_key.flat_spark import FlatKeys, flat_keys
from .keyed_spark import StreamTime, WindowAggregates
from .timing import timing_of

#: The watermark's delay in days, by which the watermark column runs ahead of the record time.
LATE_MARGIN_DAYS = 100_000
LATE_MARGIN_MS = LATE_MARGIN_DAYS * 24 * 60 * 60 * 1000

#: Where a keyed window step finds each input column it reads, by role.
ROLES = {"partition": PARTITION, "order": "__order", "topic": TOPIC, "rt": "__rt", "rh": "__rh", "t": "__t",
         "stream": "__stream"}


@dataclass(frozen=True)
class Timed:
    """The staged records with their stream time (`__stream`), keyed by group next."""

    frame: DataFrame
    keys: list[str]  # the flat group keys (engine/state_key)
    specs: list  # (aggregate name, argument columns, argument type, result field) per aggregate call
    flat: FlatKeys

    def positions(self, columns) -> list[int]:
        return [self.frame.columns.index(c) for c in columns]

    def processor_specs(self) -> list:
        """(aggregate name, argument positions, argument type, result type) per aggregate call."""
        return [(name, self.positions(columns), arg_type, field.dataType)
                for name, columns, arg_type, field in self.specs]

    def roles(self) -> dict[str, int]:
        return {role: self.frame.columns.index(column) for role, column in ROLES.items()}

    def out_fields(self, *extra: T.StructField) -> T.StructType:
        """A keyed window step's output: group keys, window bounds, aggregates, the output record's
        time and headers, where its record was, and a late record's log line and topic."""
        schema = self.frame.schema
        return T.StructType([schema[k] for k in self.keys]
                            + [T.StructField("__wstart", T.LongType()), T.StructField("__wend", T.LongType())]
                            + [field for *_, field in self.specs]
                            + [schema["__rt"], schema["__rh"], schema[PARTITION], T.StructField(OFFSET, T.LongType()),
                               T.StructField(ERROR, T.StringType()), T.StructField(TOPIC, T.StringType()), *extra])


def timed(plan: QueryPlan, frame: DataFrame, scope: Scope, where_error: Column,
          without_errors: Callable[[DataFrame, str], DataFrame]) -> Timed:
    """Step A of a keyed windowed aggregation: the staged good records with their stream time."""
    for call in plan.grouping.calls:
        if not has_accumulator(call.name, len(call.args)):
            raise StatementError(f"{call.name} with {len(call.args)} argument(s) over {plan.grouping.window.kind} "
                                 "windows is not supported yet by kafkasql_magic.")
    staged = stage(plan, frame, scope, where_error)
    good = without_errors(staged.frame, "__errors_aggregate")
    specs, arguments = accumulator_specs(plan, staged, good)
    # the watermark column is left behind once it is set: Spark keeps the watermark going to the
    # steps after, and the column (centuries ahead of the record time) has no place in pandas
    inputs, flat = flat_keys(good.withColumn("__t", F.unix_millis("__ts"))
                             .withColumn("__wm", F.timestamp_millis(F.col("__t") + F.lit(LATE_MARGIN_MS)))
                             .withWatermark("__wm", f"{LATE_MARGIN_DAYS} days")
                             .select(*staged.keys, *dict.fromkeys(arguments), PARTITION, "__order", TOPIC, "__rt",
                                     "__rh", "__t"), staged.keys)
    return Timed(_with_stream_time(inputs), flat.keys, specs, flat)


def _with_stream_time(inputs: DataFrame) -> DataFrame:
    """`inputs` with each record's stream time (`__stream`), from the pandas step `StreamTime`,
    which sorts by the offset and compares the record times in milliseconds as pandas holds them."""
    return through_pandas(inputs, [PARTITION], lambda at: StreamTime(at["__order"], at["__t"], at["__stream"]),
                          {"__stream": T.LongType()}, exact=("__order", "__t"))


def keyed_windowed(plan: QueryPlan, frame: DataFrame, scope: Scope, where_error: Column,
                   without_errors: Callable[[DataFrame, str], DataFrame], changelog: bool = False,
                   each: bool = False) -> DataFrame:
    """The windows' changes (EMIT CHANGES: once per batch and window, or per record with `each`)
    or closed windows (EMIT FINAL), with the late records as error rows. `changelog`: a window
    failing HAVING comes out as a tombstone instead of no row."""
    timing = timing_of(plan.grouping.window)
    steps = timed(plan, frame, scope, where_error, without_errors)
    aggregates = [field for *_, field in steps.specs]
    out = steps.out_fields(*[T.StructField(f"__prev{f.name}", f.dataType) for f in aggregates],
                           T.StructField("__fresh", T.BooleanType()))
    processor = WindowAggregates(steps.processor_specs(), steps.roles(), steps.frame.schema["__rh"].dataType,
                                 (timing.size, timing.advance, timing.grace), plan.statement.emit_final, each,
                                 out.fieldNames())
    grouped = steps.flat.restore(
        steps.frame.groupBy(*steps.keys).transformWithState(processor, out, "Update", "EventTime"))
    if changelog and each and plan.grouping.having is not None:
        grouped = having_changes(plan, grouped, [f.name for f in aggregates])
    return finished(plan, grouped.drop(*[f"__prev{f.name}" for f in aggregates], "__fresh"),
                    F.lit(False) if changelog else None)
