"""ksqlDB's functions over JSON text."""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .builders_spark import Function, literal_option, simple


def _json_values(json: Column, shape: str) -> Column:
    """A JSON object's values (`map`) or array's items (`array`) as JSON text each (strings
    keep their quotes, as ksqlDB's JSON_RECORDS / JSON_ITEMS give them)."""
    parsed = F.from_json(json, f"{shape}<{'string, ' if shape == 'map' else ''}variant>")
    if shape == "map":
        return F.transform_values(parsed, lambda k, v: F.to_json(v))
    return F.transform(parsed, lambda v: F.to_json(v))


def _json_array_contains(ctx, args, exprs) -> Column:
    """Whether a JSON array holds the value: a JSON integer matches INT/BIGINT, a JSON float a
    DOUBLE, a string a STRING, a boolean a BOOLEAN, null a NULL (ksqlDB's token rules); text
    that is not an array gives false."""
    json, value = args
    kind = ctx.spark_type(exprs[1], value)
    items = F.try_variant_get(F.try_parse_json(json), "$", "array<variant>")
    shape = lambda v: F.schema_of_variant(v)  # noqa: E731
    if isinstance(kind, T.NullType):
        found = lambda v: F.is_variant_null(v)  # noqa: E731
    elif isinstance(kind, (T.IntegerType, T.LongType)):
        found = lambda v: (shape(v) == "BIGINT") & (F.try_variant_get(v, "$", "bigint") == value)  # noqa: E731
    elif isinstance(kind, T.DoubleType):
        found = lambda v: (shape(v).startswith("DECIMAL") | (shape(v) == "DOUBLE")) & (  # noqa: E731
            F.try_variant_get(v, "$", "double") == value)
    elif isinstance(kind, (T.StringType, T.BooleanType)):
        name = "STRING" if isinstance(kind, T.StringType) else "BOOLEAN"
        found = lambda v: (shape(v) == name) & (F.try_variant_get(v, "$", name.lower()) == value)  # noqa: E731
    else:
        return F.when(json.isNotNull(), F.lit(False))
    return F.when(json.isNotNull(), F.coalesce(F.exists(items, lambda v: F.coalesce(found(v), F.lit(False))),
                                              F.lit(False)))


def _json_concat(*texts: Column) -> Column:
    """PostgreSQL's `||` on JSON, as ksqlDB's JSON_CONCAT: objects merge (the last value of a
    key wins, in its first place), anything else concatenates as arrays (a non-array as a
    one-item array); NULL or text that is not JSON gives NULL."""
    parsed = [F.try_parse_json(t) for t in texts]
    objects = [F.from_json(t, "map<string, variant>") for t in texts]
    merged = reduce(lambda a, b: F.map_concat(
        F.transform_values(a, lambda k, v: F.coalesce(F.element_at(b, k), v)),
        F.map_filter(b, lambda k, v: ~F.array_contains(F.map_keys(a), k))), objects)
    items = F.concat(*[F.when(F.schema_of_variant(p).startswith("ARRAY"),
                              F.try_variant_get(p, "$", "array<variant>")).otherwise(F.array(p)) for p in parsed])
    all_objects = reduce(lambda a, b: a & b, [F.schema_of_variant(p).startswith("OBJECT") for p in parsed])
    unknown = reduce(lambda a, b: a | b, [p.isNull() for p in parsed])
    return F.when(~unknown, F.when(all_objects, F.to_json(merged)).otherwise(F.to_json(items)))


def _to_json_string(value: Column) -> Column:
    """Any value as JSON text: wrapped in an array for Spark's to_json, then unwrapped."""
    return F.regexp_extract(F.to_json(F.array(value)), r"^\[(.*)\]$", 1)


FUNCTIONS: dict[str, Function] = {
    "EXTRACTJSONFIELD": Function(lambda ctx, a, e: F.get_json_object(
        a[0], str(literal_option(e[1], "EXTRACTJSONFIELD's path"))), 2, 2),
    "IS_JSON_STRING": Function(simple(lambda s: F.coalesce(F.try_parse_json(s).isNotNull(), F.lit(False))), 1, 1),
    "JSON_ARRAY_LENGTH": Function(simple(F.json_array_length), 1, 1),
    "JSON_KEYS": Function(simple(F.json_object_keys), 1, 1),
    "JSON_ITEMS": Function(simple(lambda s: _json_values(s, "array")), 1, 1),
    "JSON_RECORDS": Function(simple(lambda s: _json_values(s, "map")), 1, 1),
    "TO_JSON_STRING": Function(simple(_to_json_string), 1, 1),
    "JSON_ARRAY_CONTAINS": Function(_json_array_contains, 2, 2),
    "JSON_CONCAT": Function(simple(_json_concat), 1, None),
}
