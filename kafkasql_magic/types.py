"""ksql types: to Spark types and to the text ksqlDB shows, as tables."""

from __future__ import annotations

from pyspark.sql import types as T

from .sql import ast
from .sql.typetext import display  # noqa: F401 - ksqlDB's spelling of a type, shared with the type checker

#: Primitive ksql type -> Spark type.
SPARK_PRIMITIVES: dict[str, T.DataType] = {
    "BOOLEAN": T.BooleanType(),
    "INT": T.IntegerType(),
    "BIGINT": T.LongType(),
    "DOUBLE": T.DoubleType(),
    "STRING": T.StringType(),
    "BYTES": T.BinaryType(),
    "DATE": T.DateType(),
    "TIME": T.TimeType(3),
    "TIMESTAMP": T.TimestampType(),
}


#: Spark type class -> ksql type, for results of expressions.
KSQL_FROM_SPARK: dict[type, str] = {
    T.BooleanType: "BOOLEAN",
    T.ByteType: "INT",
    T.ShortType: "INT",
    T.IntegerType: "INT",
    T.LongType: "BIGINT",
    T.FloatType: "DOUBLE",
    T.DoubleType: "DOUBLE",
    T.StringType: "STRING",
    T.VarcharType: "STRING",
    T.CharType: "STRING",
    T.BinaryType: "BYTES",
    T.DateType: "DATE",
    T.TimeType: "TIME",
    T.TimestampType: "TIMESTAMP",
    T.TimestampNTZType: "TIMESTAMP",
}

INT = ast.Type("INT")
BIGINT = ast.Type("BIGINT")
STRING = ast.Type("STRING")
BYTES = ast.Type("BYTES")
HEADERS_TYPE = ast.Type(
    "ARRAY", element=ast.Type("STRUCT", fields=(("KEY", STRING), ("VALUE", BYTES)))
)


def to_spark(t: ast.Type) -> T.DataType:
    """The Spark type that holds values of ksql type `t`."""
    if t.name in SPARK_PRIMITIVES:
        return SPARK_PRIMITIVES[t.name]
    if t.name == "DECIMAL":
        return T.DecimalType(t.precision or 10, t.scale or 0)
    if t.name == "ARRAY":
        return T.ArrayType(to_spark(t.element))
    if t.name == "MAP":
        return T.MapType(to_spark(t.key), to_spark(t.value))
    if t.name == "STRUCT":
        return T.StructType([T.StructField(n, to_spark(ft)) for n, ft in t.fields])
    raise ValueError(f"unknown ksql type {t.name}")


def from_spark(dt: T.DataType) -> ast.Type:
    """The ksql type of a Spark value, for DESCRIBE of derived columns."""
    if isinstance(dt, T.DecimalType):
        return ast.Type("DECIMAL", precision=dt.precision, scale=dt.scale)
    if isinstance(dt, T.ArrayType):
        return ast.Type("ARRAY", element=from_spark(dt.elementType))
    if isinstance(dt, T.MapType):
        return ast.Type("MAP", key=from_spark(dt.keyType), value=from_spark(dt.valueType))
    if isinstance(dt, T.StructType):
        return ast.Type("STRUCT", fields=tuple((f.name, from_spark(f.dataType)) for f in dt.fields))
    return ast.Type(KSQL_FROM_SPARK[type(dt)])


def with_time_as(dt: T.DataType, replacement: T.DataType) -> T.DataType:
    """`dt` with every TIME in it, at any depth, replaced by `replacement`."""
    if isinstance(dt, T.TimeType):
        return replacement
    if isinstance(dt, T.ArrayType):
        return T.ArrayType(with_time_as(dt.elementType, replacement), dt.containsNull)
    if isinstance(dt, T.MapType):
        return T.MapType(with_time_as(dt.keyType, replacement), with_time_as(dt.valueType, replacement),
                         dt.valueContainsNull)
    if isinstance(dt, T.StructType):
        return T.StructType([T.StructField(f.name, with_time_as(f.dataType, replacement), f.nullable)
                             for f in dt.fields])
    return dt
