"""What a keyed aggregation's state fields hold (engine/aggregate/keyed_spark.py): a TIME, at any
depth, as its microseconds of the day, since Spark's state store has no Avro type for TIME; and
back, equal (no Spark session: the types only)."""

from __future__ import annotations

from datetime import time

import pytest

T = pytest.importorskip("pyspark.sql.types", reason="state types are Spark's")
keyed = pytest.importorskip("kafkasql_magic.engine.aggregate.keyed_spark")


def test_a_time_is_held_as_microseconds_of_the_day_at_any_depth():
    record = T.StructType([T.StructField("t", T.TimeType(6)), T.StructField("n", T.IntegerType())])
    assert keyed.stored_type(T.TimeType(6)) == T.LongType()
    assert keyed.stored_type(T.ArrayType(record)) == T.ArrayType(T.StructType(
        [T.StructField("t", T.LongType()), T.StructField("n", T.IntegerType())]))
    assert keyed.stored_type(T.MapType(T.StringType(), T.TimeType(6))) == T.MapType(T.StringType(), T.LongType())


@pytest.mark.parametrize("dtype, value, held", [
    (T.TimeType(6), time(12, 34, 56, 789000), 45_296_789_000),
    (T.ArrayType(T.TimeType(6)), [time(0, 0, 1), None], [1_000_000, None]),
    (T.MapType(T.StringType(), T.TimeType(6)), {"a": time(0, 1)}, {"a": 60_000_000}),
    (T.StructType([T.StructField("t", T.TimeType(6))]), (time(1),), (3_600_000_000,)),
    (T.IntegerType(), 7, 7),
    (T.TimeType(6), None, None),
])
def test_a_value_goes_into_its_state_field_and_comes_back_equal(dtype, value, held):
    assert keyed.to_state(value, dtype) == held
    back = keyed.from_state(held, dtype)
    assert (tuple(back) if isinstance(dtype, T.StructType) and back is not None else back) == value
