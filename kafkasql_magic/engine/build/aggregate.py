"""GROUP BY on Spark: group keys and aggregate arguments per record (a record whose
expressions fail is logged and left out), Spark's aggregation, then SELECT and HAVING over
the groups (the plan's Grouping has them rewritten over the grouped columns)."""

from __future__ import annotations

from typing import Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ...sql import ast
from ...sql.render import render
from .. import aggregates
from ..analysis.plan import QueryPlan
from ..columns import DROP, ERROR, OFFSET, ORIGIN, PARTITION, RAW_KEY, RAW_VALUE, TOPIC, result_column
from .expressions import Compiler, Scope

#: Window kind (analysis.grouping.WINDOW_KINDS) -> Spark's grouping window over the staged
#: record time `__ts` (epoch-aligned, as in ksqlDB).
WINDOWS: dict[str, Callable[[ast.Window], Column]] = {
    "TUMBLING": lambda w: F.window("__ts", f"{w.size} milliseconds"),
    "HOPPING": lambda w: F.window("__ts", f"{w.size} milliseconds", f"{w.advance} milliseconds"),
}


def computing_error(compiler: Compiler, expr, name: str, index: int | None) -> Column:
    """ksqlDB's wording: Error computing expression <expr> for column <COL> with index <n>: ..."""
    where = f" for column {name} with index {index}" if index is not None else " in WHERE"
    return F.when(compiler.error().isNotNull(),
                  F.concat(F.lit(f"Error computing expression {render(expr)}{where}: "), compiler.error()))


def aggregated(plan: QueryPlan, frame: DataFrame, scope: Scope, where_error: Column,
               without_errors: Callable[[DataFrame, str], DataFrame]) -> DataFrame:
    grouping = plan.grouping
    errors = [F.col(ERROR), where_error]
    staged = []
    for index, expr in enumerate(grouping.keys):
        compiler = Compiler(scope)
        staged.append(compiler.compile(expr).alias(f"__g{index}"))
        errors += [computing_error(compiler, expr, "GROUP BY", index)] if compiler.failures else []
    keys = [F.col(f"__g{i}") for i in range(len(grouping.keys))]
    if grouping.window is not None:
        staged.append(F.timestamp_millis(Compiler(scope).compile(grouping.rowtime)).alias("__ts"))
        keys.append(WINDOWS[grouping.window.kind](grouping.window).alias("__window"))
    builders = []
    for index, call in enumerate(grouping.calls):
        aggregate = aggregates.lookup(call.name, len(call.args), call.star)
        compiler = Compiler(scope)
        args = [compiler.compile(a) for a in call.args]
        staged += [a.alias(f"__a{index}_{n}") for n, a in enumerate(args)]
        errors += [computing_error(compiler, call, call.name, index)] if compiler.failures else []
        builders.append((aggregate, [scope.type_of(a) for a in args]))
    failed = F.coalesce(*errors)
    staged = frame.select(*staged, F.col(OFFSET).alias("__order"), failed.alias(ERROR),
                          *[F.col(c) for c in ORIGIN])
    good = without_errors(staged, "__errors_aggregate")
    grouped = good.groupBy(*keys).agg(
        *[aggregate.build([F.col(f"__a{i}_{n}") for n in range(len(types_))], types_, F.col("__order"))
          .alias(f"__agg{i}") for i, (aggregate, types_) in enumerate(builders)]) if builders else \
        good.groupBy(*keys).agg(F.count(F.lit(1)).alias("__n"))
    if grouping.window is not None:
        grouped = grouped.select("*", F.unix_millis(F.col("__window.start")).alias("__wstart"),
                                 F.unix_millis(F.col("__window.end")).alias("__wend"))
    groups = Scope(grouped, set(grouped.columns), set(), scope.dialect)
    if grouping.having is not None:
        grouped = grouped.where(Compiler(groups).compile(grouping.having))
    values = [Compiler(groups).compile(expr).alias(result_column(i)) for i, expr in enumerate(grouping.outputs)]
    meta = [F.lit(None).cast("string").alias(ERROR), F.lit(False).alias(DROP), F.lit(None).cast("string").alias(TOPIC),
            F.lit(None).cast("int").alias(PARTITION), F.lit(None).cast("bigint").alias(OFFSET),
            F.lit(None).cast("binary").alias(RAW_KEY), F.lit(None).cast("binary").alias(RAW_VALUE)]
    return grouped.select(*values, *meta)
