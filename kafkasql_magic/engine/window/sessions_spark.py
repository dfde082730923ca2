"""A push aggregation over SESSION windows in Spark's keyed state: step A is the TUMBLING/HOPPING
windows' `StreamTime` (`windowed_spark.timed`: each record with its stream time), step B
`SessionAggregates` (`session_keyed_spark.py`), keyed by the group key, holds each key's open
sessions, merges them, retracts the merged ones and closes them on event-time timers. The
watermark and both steps' state live in the query's checkpoint: a restarted persistent query
resumes with them.
"""

from __future__ import annotations

from typing import Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..analysis.plan import QueryPlan
from ..aggregate.group_by_spark import finished
from ..expressions.compile_spark import Scope
from .session_keyed_spark import SessionAggregates
from .timing import timing_of
from .windowed_spark import timed


def keyed_sessions(plan: QueryPlan, frame: DataFrame, scope: Scope, where_error: Column,
                   without_errors: Callable[[DataFrame, str], DataFrame], each: bool = False) -> DataFrame:
    """The sessions' changes and tombstones (EMIT CHANGES: per batch, or per record with `each`) or
    closed sessions (EMIT FINAL), with the late records as error rows. A tombstone (and a
    session failing HAVING) comes out as a row of NULL values: a NULL value in a changelog."""
    timing = timing_of(plan.grouping.window)
    steps = timed(plan, frame, scope, where_error, without_errors)
    schema = steps.frame.schema
    out = steps.out_fields(T.StructField("__deleted", T.BooleanType()))
    argument_types = [[schema[c].dataType for c in columns] for _, columns, _, _ in steps.specs]
    processor = SessionAggregates(steps.processor_specs(), argument_types, steps.roles(), schema["__rh"].dataType,
                                  (timing.size, timing.grace), plan.statement.emit_final, each, out.fieldNames())
    grouped = steps.flat.restore(
        steps.frame.groupBy(*steps.keys).transformWithState(processor, out, "Update", "EventTime"))
    return finished(plan, grouped, F.col("__deleted"))
