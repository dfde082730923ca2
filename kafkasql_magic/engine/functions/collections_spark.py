"""ksqlDB's functions over arrays and maps."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ...sql import ast
from .builders_spark import Context, Function, simple


def plain_delimiter(delimiter: Column) -> Column:
    """A literal delimiter as a Java regex (Spark splits on a regex, ksqlDB on text)."""
    return F.concat(F.lit("\\Q"), delimiter, F.lit("\\E"))


def _split_to_map(text: Column, entry: Column, kv: Column) -> Column:
    """Entries split on `entry`, each on `kv`; entries without exactly one `kv` are dropped and
    a repeated key keeps its last value, as ksqlDB does."""
    pairs = F.filter(F.transform(F.split(text, plain_delimiter(entry)), lambda e: F.split(e, plain_delimiter(kv))),
                     lambda p: F.size(p) == 2)
    empty = F.create_map().cast("map<string,string>")
    merged = F.aggregate(pairs, empty, lambda acc, p: F.map_concat(
        F.map_filter(acc, lambda k, v: k != p[0]), F.create_map(p[0], p[1])))
    return F.when(text.isNotNull() & entry.isNotNull() & kv.isNotNull(), merged)


def _map_union(first: Column, second: Column) -> Column:
    """The second map's entries win; a NULL map counts as empty unless both are NULL."""
    union = F.map_concat(F.map_filter(first, lambda k, v: ~F.array_contains(F.map_keys(second), k)), second)
    return F.when(first.isNull(), second).when(second.isNull(), first).otherwise(union)


def _field(ctx, args, exprs) -> Column:
    """FIELD: the 1-based position of the first argument among the others (or in an array
    given instead of them), 0 if absent or NULL."""
    if len(args) == 2 and isinstance(ctx.spark_type(exprs[1], args[1]), T.ArrayType):
        return F.coalesce(F.array_position(args[1], args[0]).cast("int"), F.lit(0))
    return F.coalesce(F.array_position(F.array(*args[1:]), args[0]).cast("int"), F.lit(0))


def _entries(values: Column, sorted_: Column) -> Column:
    """A map's entries as structs K, V; sorted by key when asked."""
    entries = F.transform(F.map_entries(values), lambda e: F.struct(e["key"].alias("K"), e["value"].alias("V")))
    return F.when(sorted_, F.array_sort(entries)).otherwise(entries)


def _generate_series(ctx, args, exprs) -> Column:
    """start to end inclusive by step (default 1 or -1 towards end); a zero step or one
    pointing away from end is a processing-log entry and NULL (Spark would fail the query)."""
    start, end = args[:2]
    step = args[2] if len(args) > 2 else F.when(end - start > 0, F.lit(1)).otherwise(F.lit(-1))
    wrong = ((end - start > 0) & (step < 0)) | ((end - start < 0) & (step > 0))
    ctx.fail(step == 0, F.lit("GENERATE_SERIES step cannot be zero"))
    ctx.fail(wrong, F.lit("GENERATE_SERIES step has wrong sign"))
    return F.when((step != 0) & ~wrong, F.sequence(start, end, step.cast(ctx.spark_type(exprs[0], start))))


def _array_sort(ctx, args, exprs) -> Column:
    """Ascending or descending (ASC, ASCENDING, DESC, DESCENDING, any case), NULLs last either
    way; another direction gives NULL."""
    if len(args) == 1:
        return F.array_sort(args[0])
    direction = F.upper(args[1])
    return F.when(direction.isin("ASC", "ASCENDING"), F.array_sort(args[0])) \
        .when(direction.isin("DESC", "DESCENDING"), F.sort_array(args[0], asc=False))


def _array_concat(ctx: Context, args: list[Column], exprs) -> Column:
    """ksqlDB: one NULL side gives the other side (a NULL literal has no array type to concat)."""
    a, b = args
    null = [isinstance(e, ast.Literal) and e.value is None for e in exprs]
    if null[0] or null[1]:
        return b if null[0] else a
    return F.when(a.isNull(), b).when(b.isNull(), a).otherwise(F.concat(a, b))


FUNCTIONS: dict[str, Function] = {
    "ARRAY": Function(simple(F.array), 0, None),
    "MAP": Function(simple(F.create_map), 0, None),  # MAP(k := v, ...) parses as MAP(k, v, ...)
    "ARRAY_LENGTH": Function(simple(F.size), 1, 1),
    "ARRAY_CONTAINS": Function(simple(F.array_contains), 2, 2),
    "MAP_KEYS": Function(simple(F.map_keys), 1, 1),
    "MAP_VALUES": Function(simple(F.map_values), 1, 1),
    "ARRAY_DISTINCT": Function(simple(F.array_distinct), 1, 1),
    "ARRAY_EXCEPT": Function(simple(F.array_except), 2, 2),
    "ARRAY_INTERSECT": Function(simple(F.array_intersect), 2, 2),
    "ARRAY_UNION": Function(simple(F.array_union), 2, 2),
    "ARRAY_MAX": Function(simple(F.array_max), 1, 1),
    "ARRAY_MIN": Function(simple(F.array_min), 1, 1),
    "ARRAY_REMOVE": Function(simple(F.array_remove), 2, 2),
    "ARRAY_CONCAT": Function(_array_concat, 2, 2),
    "ARRAY_JOIN": Function(simple(lambda a, d=None: F.call_function(
        "array_join", a.cast("array<string>"), F.lit(",") if d is None else d)), 1, 2),
    "SLICE": Function(simple(lambda a, start, end: F.slice(a, start, end - start + 1)), 3, 3),  # `to` inclusive
    "AS_MAP": Function(simple(F.map_from_arrays), 2, 2),
    "SPLIT_TO_MAP": Function(simple(_split_to_map), 3, 3),
    "MAP_UNION": Function(simple(_map_union), 2, 2),
    "FIELD": Function(_field, 1, None),
    "ENTRIES": Function(simple(_entries), 2, 2),
    "GENERATE_SERIES": Function(_generate_series, 2, 3),
    "ARRAY_SORT": Function(_array_sort, 1, 2),
}
