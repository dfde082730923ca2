"""Materialize's ORDER BY in snapshot queries on Spark: the rows sorted before LIMIT takes the
first n. A key names a result column (`keys.output_index`) or is any expression over the FROM
columns (not after GROUP BY: there only result columns exist).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ...errors import StatementError
from ...sql import ast
from ..columns import result_column
from ..expressions.compile_spark import Compiler
from .keys import output_index

#: (descending, nulls_first) -> how Spark sorts on a column.
DIRECTIONS = {
    (False, False): Column.asc_nulls_last, (False, True): Column.asc_nulls_first,
    (True, False): Column.desc_nulls_last, (True, True): Column.desc_nulls_first,
}


def sort_keys(stmt: ast.Select, outputs, scope) -> tuple[list[tuple[str, Column]], list[Column]]:
    """(extra columns to carry through the projection, the sort order) for `stmt.order_by`;
    `scope` is None after GROUP BY (only result columns can be named there)."""
    extra, order = [], []
    for i, key in enumerate(stmt.order_by):
        index = output_index(key, outputs)
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
