"""GROUP BY on Spark: group keys and aggregate arguments per record (a record whose
expressions fail, or whose group key is NULL, is logged and left out), Spark's aggregation,
then SELECT and HAVING over the groups (the plan's Grouping has them rewritten over the
grouped columns).

A persistent query writes each group's change as ksqlDB does: the record time is the latest
time among the records that made the group (Kafka Streams' rule for aggregations), the headers
are those of the newest record counted (the one that caused the change), and a group that
fails HAVING is a tombstone (`changelog`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ...sql import ast
from ...sql.render import render
from . import functions_spark as aggregates
from ..analysis.plan import QueryPlan
from ..columns import (DROP, ERROR, OFFSET, ORIGIN, PARTITION, RAW_HEADERS, RAW_KEY, RAW_TIMESTAMP, RAW_VALUE,
                       TOMBSTONE, TOPIC, result_column)
from ..expressions.compile_spark import Compiler, Scope
from ..subscribe.frame_spark import IDENTITY, group_identity

#: Window kind -> Spark's grouping window over the staged record time `__ts` (epoch-aligned, as
#: in ksqlDB): after a stream-stream join, and to resolve a plan's columns before its stream
#: starts; push queries keep their windows in keyed state (engine/window).
WINDOWS: dict[str, Callable[[ast.Window], Column]] = {
    "TUMBLING": lambda w: F.window("__ts", f"{w.size} milliseconds"),
    "HOPPING": lambda w: F.window("__ts", f"{w.size} milliseconds", f"{w.advance} milliseconds"),
    "SESSION": lambda w: F.session_window("__ts", f"{w.size} milliseconds"),
}


def computing_error(compiler: Compiler, expr, name: str, index: int | None) -> Column:
    """ksqlDB's wording: Error computing expression <expr> for column <COL> with index <n>: ..."""
    where = f" for column {name} with index {index}" if index is not None else " in WHERE"
    return F.when(compiler.error().isNotNull(),
                  F.concat(F.lit(f"Error computing expression {render(expr)}{where}: "), compiler.error()))


def null_key_error(index: int) -> str:
    """ksqlDB's processing-log text for a record whose GROUP BY expression is NULL."""
    return (f"Group-by column with index {index} resolved to null. "
            "The source row will be excluded from the table.")


@dataclass(frozen=True)
class Staged:
    """Records with their group keys (`__g{i}`), aggregate arguments (`__a{i}_{n}`) and arrival
    order (`__order`) computed; `failed` is why a record cannot count (NULL when it can),
    `null_key` why it is left out of every group (a NULL group key)."""

    frame: DataFrame
    keys: list[str]
    builders: list[tuple[aggregates.Aggregate, list, tuple]]  # (aggregate, argument types, ORDER BY keys)
    failed: Column
    null_key: Column


def stage(plan: QueryPlan, frame: DataFrame, scope: Scope, where_error: Column, extra=(), order: Column | None = None
          ) -> Staged:
    """`order`: the records' order (`__order`), their offsets unless given."""
    grouping = plan.grouping
    errors = [F.col(ERROR), where_error]
    staged, keys = [], []
    for index, expr in enumerate(grouping.keys):
        compiler = Compiler(scope)
        staged.append(compiler.compile(expr).alias(f"__g{index}"))
        keys.append(f"__g{index}")
        errors += [computing_error(compiler, expr, "GROUP BY", index)] if compiler.failures else []
    if grouping.window is not None:
        staged.append(F.timestamp_millis(Compiler(scope).compile(grouping.rowtime)).alias("__ts"))
    builders = []
    for index, call in enumerate(grouping.calls):
        aggregate = aggregates.AGGREGATES[call.name]  # its call checked by the analysis (calls.lookup)
        compiler = Compiler(scope)
        args = [compiler.compile(a) for a in call.args]
        staged += [a.alias(f"__a{index}_{n}") for n, a in enumerate(args)]
        order_by = getattr(call, "order_by", ()) if aggregate.in_order else ()  # PostgreSQL: others ignore it
        staged += [compiler.compile(k.expr).alias(f"__a{index}_s{n}") for n, k in enumerate(order_by)]
        errors += [computing_error(compiler, call, call.name, index)] if compiler.failures else []
        builders.append((aggregate, [scope.type_of(a) for a in args], tuple(order_by)))
    failed = F.coalesce(*errors)
    null_key = F.coalesce(*[F.when(F.col(k).isNull(), F.lit(null_key_error(i))) for i, k in enumerate(keys)],
                          F.lit(None).cast("string"))
    order = F.col(OFFSET) if order is None else order
    frame = frame.select(*staged, *extra, order.alias("__order"), failed.alias("__FAILED"),
                         *[F.col(c) for c in ORIGIN], F.col(RAW_TIMESTAMP).alias("__rt"),
                         F.col(RAW_HEADERS).alias("__rh"))
    frame = frame.withColumn(ERROR, F.coalesce(F.col("__FAILED"), null_key))
    return Staged(frame, keys, builders, F.col("__FAILED"), null_key)


def aggregate_columns(staged: Staged) -> list[Column]:
    """The aggregate calls over the staged columns, as `__agg{i}` (a row count when there are none)."""
    if not staged.builders:
        return [F.count(F.lit(1)).alias("__n")]
    return [aggregate.build([F.col(f"__a{i}_{n}") for n in range(len(types_))], types_,
                            _order(i, aggregate, order_by)).alias(f"__agg{i}")
            for i, (aggregate, types_, order_by) in enumerate(staged.builders)]


def empty_aggregates(staged: Staged, types_: dict[str, T.DataType]) -> list[Column]:
    """`aggregate_columns` of a group without rows (`types_`: each column's type): each
    aggregate's value over nothing (engine.aggregate.functions_spark: a count of 0, NULL for MIN)."""
    if not staged.builders:
        return [F.lit(0).cast(types_["__n"]).alias("__n")]
    return [(aggregate.empty(types_[f"__agg{i}"]) if aggregate.empty is not None
             else F.lit(None).cast(types_[f"__agg{i}"])).alias(f"__agg{i}")
            for i, (aggregate, _, _) in enumerate(staged.builders)]


def _order(index: int, aggregate: aggregates.Aggregate, order_by) -> Column | aggregates.Sorting:
    """Arrival order, or for an in-order aggregate its call's ORDER BY keys (staged as
    `__a{index}_s{n}`) then arrival order."""
    if not aggregate.in_order:
        return F.col("__order")
    keys = tuple(aggregates.SortKey(F.col(f"__a{index}_s{n}"), k.descending, k.nulls_first)
                 for n, k in enumerate(order_by))
    return aggregates.Sorting(keys, F.col("__order"))


def record_columns(newest: Column) -> list[Column]:
    """The output record's time (the latest among the group's records) and headers (the
    newest record's, by `newest`), as `__rt` and `__rh`."""
    return [F.max("__rt").alias("__rt"), F.max_by("__rh", newest).alias("__rh")]


def aggregated(plan: QueryPlan, frame: DataFrame, scope: Scope, where_error: Column,
               without_errors: Callable[[DataFrame, str], DataFrame], changelog: bool = False) -> DataFrame:
    """`changelog`: a group failing HAVING comes out as a tombstone instead of no row."""
    staged = stage(plan, frame, scope, where_error)
    keys = [F.col(k) for k in staged.keys]
    if plan.grouping.window is not None:
        keys.append(WINDOWS[plan.grouping.window.kind](plan.grouping.window).alias("__window"))
    # a streaming micro-batch's time orders batches; the offset orders records within one
    good = without_errors(staged.frame, "__errors_aggregate").withColumn("__batch", F.current_timestamp())
    newest = F.struct(F.col("__batch"), F.col("__order"))
    grouped = good.groupBy(*keys).agg(*aggregate_columns(staged), *record_columns(newest))
    if plan.grouping.window is not None:
        grouped = grouped.select("*", F.unix_millis(F.col("__window.start")).alias("__wstart"),
                                 F.unix_millis(F.col("__window.end")).alias("__wend"))
    return finished(plan, grouped, F.lit(False) if changelog else None)


def finished(plan: QueryPlan, grouped: DataFrame, deleted: Column | None = None) -> DataFrame:
    """SELECT and HAVING over the groups (with the output record's `__rt` time and `__rh`
    headers). Without `deleted`, a group failing HAVING yields no row; with it (a changelog), a
    deleted group or one failing HAVING yields a tombstone: its key columns, every other column
    NULL, and TOMBSTONE set so that a sink writes a NULL value."""
    grouping = plan.grouping
    groups = Scope(grouped, set(grouped.columns), set(), plan.dialect)
    mine = set(grouped.columns)  # a change per input record (engine/aggregate) keeps where its record was
    failed = F.col(ERROR) if ERROR in mine else None  # a keyed step's late record (engine/window), to be logged
    gone = deleted
    if grouping.having is not None:
        keep = Compiler(groups).predicate(grouping.having)
        if deleted is None:
            grouped = grouped.where(keep if failed is None else keep | failed.isNotNull())
        else:
            gone = deleted | ~F.coalesce(keep, F.lit(False))
    values = []
    for i, expr in enumerate(grouping.outputs):
        value = Compiler(groups).compile(expr)
        if gone is not None and plan.names[i] not in plan.keys:
            value = F.when(~gone, value)
        values.append(value.alias(result_column(i)))
    meta = [(failed if failed is not None else F.lit(None).cast("string")).alias(ERROR),
            (failed.isNotNull() if failed is not None else F.lit(False)).alias(DROP),
            (F.col(TOPIC) if TOPIC in mine else F.lit(None).cast("string")).alias(TOPIC),
            (F.col(PARTITION) if PARTITION in mine else F.lit(None).cast("int")).alias(PARTITION),
            (F.col(OFFSET) if OFFSET in mine else F.lit(None).cast("bigint")).alias(OFFSET),
            F.lit(None).cast("binary").alias(RAW_KEY), F.lit(None).cast("binary").alias(RAW_VALUE),
            F.col("__rh").alias(RAW_HEADERS), F.col("__rt").alias(RAW_TIMESTAMP),
            (gone if gone is not None else F.lit(False)).alias(TOMBSTONE)]
    if plan.changes is not None:  # a SUBSCRIBE: each group's row replaces the group's previous one
        meta.append(group_identity([f"__g{i}" for i in range(len(grouping.keys))]).alias(IDENTITY))
    return grouped.select(*values, *meta)


def accumulator_specs(plan: QueryPlan, staged, good: DataFrame) -> tuple[list, list[str]]:
    """Per aggregate call (accumulator name, argument columns, argument type or None, result
    field with the per-batch path's type), and every argument column in order; with no call,
    the per-batch path's row count `__n`."""
    results = good.groupBy(*staged.keys).agg(*aggregate_columns(staged)).schema
    specs = []
    if not staged.builders:
        specs.append(("COUNT", [], None, results["__n"]))
    for i, call in enumerate(plan.grouping.calls):
        _, types_, _ = staged.builders[i]
        specs.append((call.name, [f"__a{i}_{n}" for n in range(len(types_))], types_[0] if types_ else None,
                      results[f"__agg{i}"]))
    return specs, [c for _, columns, _, _ in specs for c in columns]
