"""INSERT VALUES expressions (`1 + 2`, `CONCAT(...)`, `ARRAY[...]`, `MAP(...)`, `STRUCT(...)`)
evaluated as ksqlDB evaluates them: with no columns in scope, by the query engine's own
expression compiler over a one-row Spark frame, so functions and operators mean what they mean
in a query. The values come back as Python values for `records.py` to coerce to the columns'
types and encode."""

from __future__ import annotations

from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..engine.expressions.compile_spark import Compiler, Scope
from ..errors import StatementError
from ..sql import ast
from ..typecheck.checker import check_expression


def evaluate(spark, dialect, exprs: list[ast.Expr]) -> list:
    """Each expression's value, computed in one Spark job over one row."""
    for e in exprs:
        check_expression(e, {}, dialect.name)
    frame = spark.range(1)
    scope = Scope(frame, set(), set(), dialect)
    columns, errors = [], []
    for i, e in enumerate(exprs):
        compiler = Compiler(scope)
        column = compiler.compile(e)
        if isinstance(scope.type_of(column), T.TimestampType):  # as epoch milliseconds, free of time zones
            column = F.unix_millis(column)
        columns.append(column.alias(f"v{i}"))
        errors.append(compiler.error().alias(f"e{i}"))
    try:
        row = frame.select(*columns, *errors).first()
    except Exception as exc:  # noqa: BLE001 - only Spark's refusal of a NULL map key is the user's
        if "NULL_MAP_KEY" not in str(exc):
            raise
        raise StatementError("A MAP key in INSERT VALUES cannot be NULL: Spark's maps hold no NULL key.") from None
    failed = next((row[f"e{i}"] for i in range(len(exprs)) if row[f"e{i}"] is not None), None)
    if failed is not None:
        raise StatementError(failed)
    return [_python(row[f"v{i}"]) for i in range(len(exprs))]


def _python(value):
    """A collected Spark value as the encoders take it: a struct as a dict by field name."""
    if isinstance(value, T.Row):
        return {k: _python(v) for k, v in value.asDict().items()}
    if isinstance(value, list):
        return [_python(v) for v in value]
    if isinstance(value, dict):
        return {k: _python(v) for k, v in value.items()}
    if isinstance(value, bytearray):
        return bytes(value)
    return value
