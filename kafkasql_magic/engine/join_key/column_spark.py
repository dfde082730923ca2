"""A join's key on Spark (analysis.join_key decides it): the first non-NULL of the last join's
two ON operands, added after the joins as a column of the joined frame.

The synthetic key column (`ROWKEY`) resolves to it like any source column. A key column (any
column the chain of ON clauses makes equivalent to the key) keeps its own value and takes the
join key where its side is missing (a RIGHT join's row without a left side, an earlier LEFT
join's missing right side), so a sink's record key is never NULL for a row that has one.
"""

from __future__ import annotations

from dataclasses import replace

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ...sql import ast
from ..analysis.plan import QueryPlan
from ..expressions.compile_spark import Compiler, JoinScope

#: The joined frame's column holding the join key.
JOIN_KEY = "__join_key"


def with_join_key(plan: QueryPlan, frame: DataFrame, scope: JoinScope) -> tuple[DataFrame, JoinScope]:
    """`frame` with the join key column, and `scope` resolving the synthetic key column's name to it."""
    key = plan.join_key
    if key is None or not isinstance(scope, JoinScope):
        return frame, scope
    if JOIN_KEY not in frame.columns:  # a table-table join's step hands its key over itself
        compiler = Compiler(scope)
        left, right = compiler.compile(key.left), compiler.compile(key.right)
        frame = frame.withColumn(JOIN_KEY, F.coalesce(left, right.cast(scope.type_of(left))))
    names = {JOIN_KEY: JOIN_KEY, **({key.synthetic: JOIN_KEY} if key.synthetic is not None else {})}
    # a side without a qualifier anyone can write: only the unqualified name finds it
    return frame, replace(scope, frame=frame, sides=[*scope.sides, (("",), names)])


def keyed_outputs(plan: QueryPlan, outputs) -> list[tuple[str, ast.Expr]]:
    """`outputs` with each key column the join key fills as COALESCE(column, join key)."""
    key = plan.join_key
    if key is None or not key.filled:
        return list(outputs)
    filler = ast.ColumnRef(JOIN_KEY)
    return [(name, ast.FunctionCall("COALESCE", (expr, filler)) if name in key.filled else expr)
            for name, expr in outputs]
