"""Columns a pandas keyed step carries exactly.

Spark hands `transformWithStateInPandas` each Arrow batch as pandas columns and takes the step's
pandas frames back. On the way:
- a BIGINT column holding a NULL becomes float64, which keeps 53 bits (2**53 + 1 comes back as
  2**53: a value changed and a join key matching another key, with no error);
- a TIMESTAMP column becomes pandas' nanoseconds, which end in 2262;
- a DOUBLE or FLOAT NaN comes back NULL, at any depth (pandas' NaN is its NULL).
Other values, nested ones included, come through as Python objects, exactly. So a step's
top-level BIGINT and TIMESTAMP columns travel as DECIMAL(20, 0) (a timestamp as its
microseconds since the epoch), its DOUBLEs and FLOATs at any depth as their text (Spark writes
the shortest text that reads back as the same number: NaN, -0.0 and subnormals included), and
all are made again after the step (`through_pandas`).
"""

from __future__ import annotations

from typing import Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

#: How a BIGINT or a TIMESTAMP travels through pandas.
TRAVEL = T.DecimalType(20, 0)


def travel_type(data_type: T.DataType, top: bool = True) -> T.DataType:
    """The type a column of `data_type` has in the step (`top`: a column, not a nested value)."""
    if top and isinstance(data_type, (T.LongType, T.TimestampType)):
        return TRAVEL
    if isinstance(data_type, (T.DoubleType, T.FloatType)):
        return T.StringType()
    return _nested(data_type, lambda inner: travel_type(inner, False))


def _nested(data_type: T.DataType, inner) -> T.DataType:
    """`data_type` with `inner` applied to each element, key, value and field type, every one of
    them nullable: a step's output is, and Spark casts no nullable field to a NOT NULL one."""
    if isinstance(data_type, T.ArrayType):
        return T.ArrayType(inner(data_type.elementType), True)
    if isinstance(data_type, T.MapType):
        return T.MapType(inner(data_type.keyType), inner(data_type.valueType), True)
    if isinstance(data_type, T.StructType):
        return T.StructType([T.StructField(f.name, inner(f.dataType), True, f.metadata) for f in data_type.fields])
    return data_type


def _nullable(data_type: T.DataType) -> T.DataType:
    return _nested(data_type, _nullable)


def travelling(column: Column, data_type: T.DataType) -> Column:
    """`column` (of `data_type`) as the step carries it."""
    if isinstance(data_type, T.TimestampType):
        return F.unix_micros(column).cast(TRAVEL)
    carried = travel_type(data_type)
    return column if carried == data_type else column.cast(carried)


def arrived(column: Column, data_type: T.DataType) -> Column:
    """A column the step carried, back as `data_type`."""
    if isinstance(data_type, T.TimestampType):
        return F.timestamp_micros(column.cast(T.LongType()))
    return column if travel_type(data_type) == data_type else column.cast(_nullable(data_type))


def through_pandas(frame: DataFrame, keys: list[str], make_step: Callable[[dict[str, str]], object],
                   added: dict[str, T.DataType], exact: tuple[str, ...] = (), output_mode: str = "Update",
                   time_mode: str = "EventTime") -> DataFrame:
    """`frame` through a `transformWithStateInPandas` step grouped by `keys`, which hands back each
    record with the `added` columns after its own. Its columns go in under plain names (pandas
    renames a column named `__x`) and carried exactly, but for the `exact` ones, which pandas
    holds as they are (a column the step sorts or compares that is never NULL past 2**53);
    `make_step` gets each column's name in the step, the added ones' too. They come back under
    their own names and types."""
    fields = frame.schema.fields
    at = {f.name: f"c{i}" for i, f in enumerate(fields)} | {name: f"a{i}" for i, name in enumerate(added)}
    carried = frame.select(*[(F.col(f"`{f.name}`") if f.name in exact else travelling(F.col(f"`{f.name}`"), f.dataType))
                             .alias(at[f.name]) for f in fields])
    out = T.StructType([T.StructField(at[f.name], f.dataType if f.name in exact else travel_type(f.dataType))
                        for f in fields] + [T.StructField(at[name], dtype) for name, dtype in added.items()])
    stepped = carried.groupBy(*[at[k] for k in keys]).transformWithStateInPandas(make_step(at), out, output_mode,
                                                                                 time_mode)
    return stepped.select(*[(F.col(at[f.name]) if f.name in exact else arrived(F.col(at[f.name]), f.dataType))
                            .alias(f.name) for f in fields], *[F.col(at[name]).alias(name) for name in added])
