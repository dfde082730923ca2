"""Which result column an ORDER BY key names (Materialize's snapshot queries; pure, no Spark).

A key names a result column by name (unqualified, one column of that name), by position (an
integer literal, 1-based), or by being the same expression as one; otherwise it is an
expression of its own over the FROM columns.
"""

from __future__ import annotations

from ...errors import StatementError
from ...sql import ast


def output_index(key, outputs) -> int | None:
    """The index of the result column `key` names in `outputs` ((name, expression) pairs), or
    None when it is an expression of its own."""
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
