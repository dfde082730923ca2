"""Aggregate functions (GROUP BY), as a table: ksql name -> how Spark computes it.

Every builder gets the compiled arguments, their Spark types and the record's arrival
order (partition offset), which the *_BY_OFFSET functions rank by. All of them run in
Spark's streaming state store, so they must be plain (non-DISTINCT) aggregates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..errors import StatementError

_INTEGRAL = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)


@dataclass(frozen=True)
class Aggregate:
    build: Callable[[list[Column], list[T.DataType], Column], Column]
    args: int = 1
    star: bool = False  # COUNT(*)


def _sum(args, types_, order):
    """ksqlDB keeps the argument's type (SUM of INT is INT); Spark widens integers to BIGINT."""
    total = F.sum(args[0])
    return total.cast(types_[0]) if isinstance(types_[0], _INTEGRAL) else total


def _by_offset(pick):
    """LATEST_BY_OFFSET / EARLIEST_BY_OFFSET: NULLs are ignored, as ksqlDB's default does."""
    return lambda args, types_, order: pick(args[0], F.when(args[0].isNotNull(), order))


AGGREGATES: dict[str, Aggregate] = {
    "COUNT": Aggregate(lambda a, t, o: F.count(a[0]) if a else F.count(F.lit(1)), star=True),
    "SUM": Aggregate(_sum),
    "AVG": Aggregate(lambda a, t, o: F.avg(a[0])),
    "MIN": Aggregate(lambda a, t, o: F.min(a[0])),
    "MAX": Aggregate(lambda a, t, o: F.max(a[0])),
    "COUNT_DISTINCT": Aggregate(lambda a, t, o: F.size(F.collect_set(a[0])).cast("bigint")),
    "COLLECT_LIST": Aggregate(lambda a, t, o: F.collect_list(a[0])),
    "ARRAY_AGG": Aggregate(lambda a, t, o: F.collect_list(a[0])),
    "COLLECT_SET": Aggregate(lambda a, t, o: F.collect_set(a[0])),
    "LATEST_BY_OFFSET": Aggregate(_by_offset(F.max_by)),
    "EARLIEST_BY_OFFSET": Aggregate(_by_offset(F.min_by)),
}


def lookup(name: str, nargs: int, star: bool) -> Aggregate:
    aggregate = AGGREGATES[name]
    if star and not aggregate.star:
        raise StatementError(f"Function '{name}' does not accept '*'.")
    if not star and nargs != aggregate.args:
        raise StatementError(f"Function '{name}' does not accept {nargs} argument(s).")
    return aggregate


def is_aggregate(name: str) -> bool:
    return name in AGGREGATES
