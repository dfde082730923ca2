"""Aggregate functions (GROUP BY), as a table: ksql name -> how Spark computes it (the calls
each takes: `calls.py`).

Every builder gets the compiled arguments, their Spark types and the record's arrival
order (partition offset), which the *_BY_OFFSET functions rank by. An aggregate whose
result depends on its input's order (`in_order`: list_agg, map_agg, array_agg, string_agg)
gets a Sorting instead: the call's `ORDER BY` keys (PostgreSQL's `agg(x ORDER BY k)`), then
arrival order. All of them run in Spark's streaming state store, so they must be plain
(non-DISTINCT) aggregates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

_INTEGRAL = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)


@dataclass(frozen=True)
class Aggregate:
    build: Callable[[list[Column], list[T.DataType], Column], Column]
    in_order: bool = False  # built over a Sorting (ORDER BY keys, then arrival) rather than arrival order
    #: The value over no rows, of the result's type (ksqlDB's initial value, mapped: what its
    #: subtractor leaves a table aggregation's emptied group); None: NULL.
    empty: Callable[[T.DataType], Column] | None = None


def _zero(result: T.DataType) -> Column:
    return F.lit(0).cast(result)


def _no_elements(result: T.DataType) -> Column:
    return F.array().cast(result)


@dataclass(frozen=True)
class SortKey:
    """One ORDER BY key of an aggregate call, compiled."""

    value: Column
    descending: bool = False
    nulls_first: bool = False


@dataclass(frozen=True)
class Sorting:
    """The order an in-order aggregate sees its group's rows in: `keys`, ties by arrival."""

    keys: tuple[SortKey, ...]
    arrival: Column


def _compare(left: Column, right: Column, key: SortKey) -> Column:
    """-1, 0 or 1 as `left` sorts before, with or after `right` under `key`."""
    before, after = (F.lit(1), F.lit(-1)) if key.descending else (F.lit(-1), F.lit(1))
    null_first = F.lit(-1) if key.nulls_first else F.lit(1)
    return (F.when(left.isNull() & right.isNull(), F.lit(0)).when(left.isNull(), null_first)
            .when(right.isNull(), -null_first).when(left < right, before).when(left > right, after).otherwise(F.lit(0)))


def sorted_rows(value: Column, sorting: Sorting) -> Column:
    """The group's values (NULLs kept: collect_list alone drops them) as an array of structs
    `v`, in `sorting`'s order."""
    keys = [*sorting.keys, SortKey(sorting.arrival)]
    rows = F.collect_list(F.struct(*[k.value.alias(f"k{i}") for i, k in enumerate(keys)], value.alias("v")))

    def comparator(left, right):
        result = F.lit(0)
        for i in reversed(range(len(keys))):  # the first key decides, later ones break its ties
            found = _compare(left[f"k{i}"], right[f"k{i}"], keys[i])
            result = F.when(found != 0, found).otherwise(result)
        return result

    return F.array_sort(rows, comparator)


def _list_agg(args, types_, sorting: Sorting):
    """list_agg(x) / array_agg(x): the group's values, NULLs included, in order."""
    return F.transform(sorted_rows(args[0], sorting), lambda e: e["v"])


def _map_agg(args, types_, sorting: Sorting):
    """map_agg(k, v): NULL keys skipped; of a repeated key the last value in order wins."""
    pairs = F.filter(sorted_rows(F.struct(args[0].alias("key"), args[1].alias("value")), sorting),
                     lambda e: e["v"]["key"].isNotNull())
    entries = F.transform(pairs, lambda e: e["v"])
    keys = F.array_distinct(F.transform(entries, lambda e: e["key"]))
    return F.map_from_arrays(keys, F.transform(
        keys, lambda k: F.element_at(F.filter(entries, lambda e: e["key"] == k), -1)["value"]))


def _string_agg(args, types_, sorting: Sorting):
    """string_agg(value, delimiter): non-NULL values in order, each after its own row's
    delimiter (PostgreSQL's rule); NULL when there are none."""
    rows = F.filter(sorted_rows(F.struct(args[0].alias("v"), args[1].alias("d")), sorting),
                    lambda e: e["v"]["v"].isNotNull())
    joined = F.aggregate(F.slice(rows, 2, F.greatest(F.size(rows) - 1, F.lit(0))), rows[0]["v"]["v"],
                         lambda acc, e: F.concat(acc, F.coalesce(e["v"]["d"], F.lit("")), e["v"]["v"]))
    return F.when(F.size(rows) > 0, joined)


def _sum(args, types_, order):
    """ksqlDB keeps the argument's type (SUM of INT is INT); Spark widens integers to BIGINT."""
    total = F.sum(args[0])
    return total.cast(types_[0]) if isinstance(types_[0], _INTEGRAL) else total


def _by_offset(latest: bool):
    """LATEST_BY_OFFSET / EARLIEST_BY_OFFSET: the last (first) value in arrival order, NULLs
    ignored unless a BOOLEAN `ignoreNulls` argument is false; with an INT `N`, the last (first)
    N values, oldest first, as ksqlDB's `(val, N[, ignoreNulls])` forms."""
    def build(args, types_, order):
        options = list(zip(args[1:], types_[1:]))
        n = next((a for a, t in options if not isinstance(t, T.BooleanType)), None)
        ignore_nulls = next((a for a, t in options if isinstance(t, T.BooleanType)), F.lit(True))
        if n is None:
            return (F.max_by if latest else F.min_by)(args[0], F.when(args[0].isNotNull() | ~ignore_nulls, order))
        rows = F.filter(sorted_rows(F.struct(args[0].alias("x"), ignore_nulls.alias("i")), Sorting((), order)),
                        lambda e: e["v"]["x"].isNotNull() | ~e["v"]["i"])
        values, count = F.transform(rows, lambda e: e["v"]["x"]), F.max(n)
        return F.slice(values, F.greatest(F.size(values) - count + 1, F.lit(1)) if latest else F.lit(1), count)
    return build


def _top(distinct: bool):
    """TOPK(x, k) / TOPKDISTINCT(x, k): the k greatest non-NULL values (distinct ones), greatest first."""
    def build(args, types_, order):
        values = F.collect_set(args[0]) if distinct else F.collect_list(args[0])
        return F.slice(F.sort_array(values, asc=False), 1, F.max(args[-1]))
    return build


def _top_rows(args, types_, order):
    """TOPK(x, c0, ..., k): the k rows of greatest non-NULL x, greatest first and equal ones in
    arrival order, each as ksqlDB's struct `sort_col`, `col0`, ..."""
    row = F.struct(args[0].alias("sort_col"), *[a.alias(f"col{i}") for i, a in enumerate(args[1:-1])])
    rows = sorted_rows(row, Sorting((SortKey(args[0], descending=True),), order))
    kept = F.filter(F.transform(rows, lambda e: e["v"]), lambda r: r["sort_col"].isNotNull())
    return F.slice(kept, 1, F.max(args[-1]))


def _topk(args, types_, order):
    return (_top(False) if len(args) == 2 else _top_rows)(args, types_, order)


AGGREGATES: dict[str, Aggregate] = {
    "COUNT": Aggregate(lambda a, t, o: F.count(a[0]) if a else F.count(F.lit(1)), empty=_zero),
    "SUM": Aggregate(_sum, empty=_zero),
    "AVG": Aggregate(lambda a, t, o: F.avg(a[0]), empty=_zero),  # ksqlDB's average of no rows: 0.0
    "MIN": Aggregate(lambda a, t, o: F.min(a[0])),
    "MAX": Aggregate(lambda a, t, o: F.max(a[0])),
    "COUNT_DISTINCT": Aggregate(lambda a, t, o: F.size(F.collect_set(a[0])).cast("bigint"), empty=_zero),
    "COLLECT_LIST": Aggregate(lambda a, t, o: F.collect_list(a[0]), empty=_no_elements),
    "ARRAY_AGG": Aggregate(_list_agg, in_order=True),
    "LIST_AGG": Aggregate(_list_agg, in_order=True),
    "MAP_AGG": Aggregate(_map_agg, in_order=True),
    "STRING_AGG": Aggregate(_string_agg, in_order=True),
    "COLLECT_SET": Aggregate(lambda a, t, o: F.collect_set(a[0]), empty=_no_elements),
    "LATEST_BY_OFFSET": Aggregate(_by_offset(latest=True)),
    "EARLIEST_BY_OFFSET": Aggregate(_by_offset(latest=False)),
    "TOPK": Aggregate(_topk, empty=_no_elements),
    "TOPKDISTINCT": Aggregate(_top(True), empty=_no_elements),
}
