"""Columns a pandas keyed step carries exactly.

Spark hands `transformWithStateInPandas` each Arrow batch as pandas columns. A BIGINT column
holding a NULL becomes float64, which keeps 53 bits (2**53 + 1 comes back as 2**53: a value
changed and a join key matching another key, with no error), and a TIMESTAMP column becomes
pandas' nanoseconds, which end in 2262. Values nested in arrays, maps and structs come through
as Python objects, exactly. So a step's top-level BIGINT and TIMESTAMP columns travel as
DECIMAL(20, 0) (a timestamp as its microseconds since the epoch), which pandas holds as Python
`Decimal`s, and are made again after the step.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

#: How a BIGINT or a TIMESTAMP travels through pandas.
TRAVEL = T.DecimalType(20, 0)


def travel_type(data_type: T.DataType) -> T.DataType:
    """The type a column of `data_type` has in the step."""
    return TRAVEL if isinstance(data_type, (T.LongType, T.TimestampType)) else data_type


def travelling(column: Column, data_type: T.DataType) -> Column:
    """`column` (of `data_type`) as the step carries it."""
    if isinstance(data_type, T.TimestampType):
        return F.unix_micros(column).cast(TRAVEL)
    if isinstance(data_type, T.LongType):
        return column.cast(TRAVEL)
    return column


def arrived(column: Column, data_type: T.DataType) -> Column:
    """A column the step carried, back as `data_type`."""
    if isinstance(data_type, T.TimestampType):
        return F.timestamp_micros(column.cast(T.LongType()))
    if isinstance(data_type, T.LongType):
        return column.cast(T.LongType())
    return column


def travelling_frame(frame: DataFrame) -> DataFrame:
    """`frame` with each column as the step carries it, under its own name."""
    return frame.select(*[travelling(F.col(f"`{f.name}`"), f.dataType).alias(f.name) for f in frame.schema.fields])
