"""How a pandas keyed step carries each type (engine/pandas_step): the types pandas would change
travel as others; the rest as they are."""

from __future__ import annotations

from pyspark.sql import types as T

from kafkasql_magic.engine.pandas_step.exact_spark import TRAVEL, travel_type


def test_top_level_bigints_and_timestamps_travel_as_decimals_and_floats_as_text_at_any_depth():
    nested = T.StructType([T.StructField("n", T.LongType()), T.StructField("at", T.TimestampType()),
                           T.StructField("d", T.DoubleType()), T.StructField("m", T.MapType(T.StringType(), T.FloatType()))])
    assert travel_type(T.LongType()) == TRAVEL and travel_type(T.TimestampType()) == TRAVEL
    assert travel_type(T.DoubleType()) == T.StringType() and travel_type(T.FloatType()) == T.StringType()
    assert travel_type(T.ArrayType(T.DoubleType(), False)) == T.ArrayType(T.StringType(), True)
    # nested BIGINTs and TIMESTAMPs come through pandas as Python objects: they stay
    assert travel_type(nested) == T.StructType([
        T.StructField("n", T.LongType()), T.StructField("at", T.TimestampType()), T.StructField("d", T.StringType()),
        T.StructField("m", T.MapType(T.StringType(), T.StringType()))])


def test_other_types_travel_as_they_are():
    for data_type in (T.IntegerType(), T.StringType(), T.BinaryType(), T.DecimalType(10, 2), T.BooleanType(),
                      T.DateType(), T.ArrayType(T.LongType()), T.MapType(T.StringType(), T.TimestampType()),
                      T.StructType([T.StructField("b", T.BooleanType())])):
        assert travel_type(data_type) == data_type
