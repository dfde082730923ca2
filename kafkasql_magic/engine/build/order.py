"""Materialize's ORDER BY in snapshot queries: the rows sorted before LIMIT takes the first n.

A key names a result column (by name, or by position as an integer literal, 1-based), or is
any expression over the FROM columns (not after GROUP BY: there only result columns exist).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ...errors import StatementError
from ...sql import ast
from ..columns import result_column
from ..expressions.compile_spark import Compiler

#: (descending, nulls_first) -> how Spark sorts on a column.
DIRECTIONS = {
    (False, False): Column.asc_nulls_last, (False, True): Column.asc_nulls_first,
    (True, False): Column.desc_nulls_last, (True, True): Column.desc_nulls_first,
}


def _output_index(key, outputs) -> int | None:
    """The result column a sort key names, or None when it is an expression of its own."""
    expr = key.expr
    if isinstance(expr, ast.Literal) and expr.kind in ("INT", "BIGINT"):
        if not 1 <= expr.value <= len(outputs):
            raise StatementError(f"line {expr.line}:{expr.column}: ORDER BY position {expr.value} is not in select list")
        return expr.value - 1
    if isinstance(expr, ast.ColumnRef) and expr.qualifier is None:
        named = [i for i, (name, _) in enumerate(outputs) if name.lower() == expr.name.lower()]
        if len(named) == 1:
            return named[0]
    same = [i for i, (_, e) in enumerate(outputs) if e == expr]
    return same[0] if same else None


def sort_keys(stmt: ast.Select, outputs, scope) -> tuple[list[tuple[str, Column]], list[Column]]:
    """(extra columns to carry through the projection, the sort order) for `stmt.order_by`;
    `scope` is None after GROUP BY (only result columns can be named there)."""
    extra, order = [], []
    for i, key in enumerate(stmt.order_by):
        index = _output_index(key, outputs)
        if index is not None:
            column = F.col(result_column(index))
        elif scope is None:
            raise StatementError(f"line {key.line}:{key.column}: ORDER BY after GROUP BY must name a result column")
        else:
            name = f"__order_{i}"
            extra.append((name, Compiler(scope).compile(key.expr)))
            column = F.col(name)
        order.append(DIRECTIONS[(key.descending, key.nulls_first)](column))
    return extra, order


def ordered(frame: DataFrame, extra: list[tuple[str, Column]], order: list[Column]) -> DataFrame:
    return frame.orderBy(*order).drop(*[name for name, _ in extra]) if order else frame
