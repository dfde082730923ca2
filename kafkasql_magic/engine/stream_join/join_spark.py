"""The stream-stream join on Spark, as Kafka Streams computes it (`rules.py`): both sides' records
in one frame (tagged by side, keyed by the ON equality's value, each side's columns as a struct)
with an event-time watermark that is exactly the largest record time of the batches before (as
`window/windowed_spark.py` makes it), then `state_spark.SideStreamTime` keyed by side and input
partition and `state_spark.JoinState` keyed by join key. The result has both sides' columns, as
Spark's own join of the two frames would have."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..pandas_step.exact_spark import through_pandas
from ..window.windowed_spark import LATE_MARGIN_DAYS, LATE_MARGIN_MS
from .rules import LEFT, RIGHT
from .state_spark import JoinState, SideStreamTime

#: Spark join type -> (left side outer, right side outer).
OUTER = {"inner": (False, False), "left_outer": (True, False), "right_outer": (False, True),
         "full_outer": (True, True)}


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _side_rows(frame: DataFrame, side: int, key: Column, key_type: T.DataType, time: str, where: tuple[str, str],
               structs: tuple[T.StructType, T.StructType]) -> DataFrame:
    """One side's records: side, join key, record time, where it was, its columns as a struct."""
    row = F.struct(*[F.col(_quoted(c)) for c in frame.columns])
    rows = [row if s == side else F.lit(None).cast(structs[s]) for s in (LEFT, RIGHT)]
    return frame.select(F.lit(side).alias("__side"), key.cast(key_type).alias("__jk"),
                        F.col(_quoted(time)).alias("__t"),
                        F.col(_quoted(where[0])).cast("int").alias("__p"), F.col(_quoted(where[1])).alias("__o"),
                        rows[0].alias("__l"), rows[1].alias("__r"))


def _with_side_stream_time(both: DataFrame) -> DataFrame:
    """`both` with each record's side's stream time (`__stream`), from the pandas step
    `SideStreamTime`, which sorts by the offset and compares the record times in milliseconds as
    pandas holds them."""
    return through_pandas(both, ["__side", "__p"], lambda at: SideStreamTime(at["__o"], at["__t"], at["__stream"]),
                          {"__stream": T.LongType()}, exact=("__o", "__t"))


def stream_stream_joined(left: DataFrame, right: DataFrame, times: tuple[str, str], keys: tuple[Column, Column],
                         where: tuple[tuple[str, str], tuple[str, str]], within: tuple[int, int], grace: int | None,
                         how: str) -> DataFrame:
    """`left` joined `how` with the stream `right` on the equality of `keys` (an expression over
    each side) within `within` (before, after) over their record times (`times` columns, epoch
    ms); `where` names each side's (partition, offset) columns."""
    key_type = left.crossJoin(right).select(F.coalesce(*keys)).schema[0].dataType  # the equality's common type
    structs = tuple(frame.select(F.struct(*[F.col(_quoted(c)) for c in frame.columns])).schema[0].dataType
                    for frame in (left, right))
    both = _side_rows(left, LEFT, keys[0], key_type, times[0], where[0], structs).unionByName(
        _side_rows(right, RIGHT, keys[1], key_type, times[1], where[1], structs))
    # the watermark column is left behind once set (Spark keeps the watermark going to the steps
    # after): centuries ahead of the record time, it is past what pandas and Python dates hold
    both = (both.withColumn("__wm", F.timestamp_millis(F.col("__t") + F.lit(LATE_MARGIN_MS)))
            .withWatermark("__wm", f"{LATE_MARGIN_DAYS} days").drop("__wm"))
    timed = _with_side_stream_time(both)
    timed_schema = timed.schema
    at = {role: timed_schema.fieldNames().index(column) for role, column in (
        ("side", "__side"), ("partition", "__p"), ("offset", "__o"), ("t", "__t"), ("stream", "__stream"),
        ("left", "__l"), ("right", "__r"))}
    out = T.StructType([T.StructField(f.name, f.dataType, True) for s in structs for f in s.fields])
    processor = JoinState(at, structs, OUTER[how], within, grace, out.fieldNames())
    return timed.groupBy("__jk").transformWithState(processor, out, "Update", "EventTime")
