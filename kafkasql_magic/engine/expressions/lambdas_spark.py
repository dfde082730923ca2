"""ksqlDB's lambda functions as Spark's higher-order functions, as a table: TRANSFORM (`transform`;
a map's new entries through `map_from_arrays`), FILTER (`filter`, `map_filter`), REDUCE
(`aggregate`). Overloads and types: `typecheck/lambdas.py`.

A builder gets the compiler (`bind` compiles a lambda's body with its parameters bound to
Spark's lambda variables; `spark_type` answers for any argument) and the call.
"""

from __future__ import annotations

from typing import Callable

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ...sql import ast

_DUPLICATE_KEYS = "TRANSFORM's key function gave two entries the same key (or a NULL key): the map is NULL"


def _collection(ctx, e: ast.FunctionCall) -> tuple[Column, T.DataType]:
    column = ctx.compile(e.args[0])
    return column, ctx.spark_type(e.args[0], column)


def _transform(ctx, e: ast.FunctionCall) -> Column:
    values, kind = _collection(ctx, e)
    if isinstance(kind, T.ArrayType):
        return F.transform(values, lambda x: ctx.bind(e.args[1], [x], [kind.elementType]))
    if isinstance(kind, T.NullType):
        return F.lit(None)
    types = [kind.keyType, kind.valueType]
    entries = F.map_entries(values)
    keys = F.transform(entries, lambda en: ctx.bind(e.args[1], [en["key"], en["value"]], types))
    items = F.transform(entries, lambda en: ctx.bind(e.args[2], [en["key"], en["value"]], types))
    # ksqlDB fails the row on a repeated key; Spark would fail the query: NULL and a log entry
    clean = (F.size(F.array_distinct(keys)) == F.size(keys)) & ~F.exists(keys, lambda k: k.isNull())
    ctx.fail(values.isNotNull() & ~clean, F.lit(_DUPLICATE_KEYS))
    return F.when(clean, F.map_from_arrays(keys, items))


def _filter(ctx, e: ast.FunctionCall) -> Column:
    values, kind = _collection(ctx, e)
    if isinstance(kind, T.ArrayType):
        return F.filter(values, lambda x: ctx.bind(e.args[1], [x], [kind.elementType]))
    if isinstance(kind, T.NullType):
        return F.lit(None)
    return F.map_filter(values, lambda k, v: ctx.bind(e.args[1], [k, v], [kind.keyType, kind.valueType]))


def _reduce(ctx, e: ast.FunctionCall) -> Column:
    """The state keeps the initial state's type; a NULL initial state gives NULL, a NULL
    collection the initial state (ksqlDB's Reduce)."""
    values, kind = _collection(ctx, e)
    initial = ctx.compile(e.args[1])
    state = ctx.spark_type(e.args[1], initial)
    if isinstance(state, T.NullType) or isinstance(kind, T.NullType):
        return initial if isinstance(kind, T.NullType) else F.lit(None)
    if isinstance(kind, T.ArrayType):
        step = lambda s, x: ctx.bind(e.args[2], [s, x], [state, kind.elementType]).cast(state)  # noqa: E731
        folded = F.aggregate(values, initial, step)
    else:
        step = lambda s, en: ctx.bind(e.args[2], [s, en["key"], en["value"]],  # noqa: E731
                                      [state, kind.keyType, kind.valueType]).cast(state)
        folded = F.aggregate(F.map_entries(values), initial, step)
    return F.when(initial.isNull(), F.lit(None)).when(values.isNull(), initial).otherwise(folded)


LAMBDA_FUNCTIONS: dict[str, Callable[..., Column]] = {
    "TRANSFORM": _transform,
    "FILTER": _filter,
    "REDUCE": _reduce,
}
