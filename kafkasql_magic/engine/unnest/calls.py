"""Which `unnest(...)` calls a SELECT list holds, and its expressions with each call replaced by
the column of its elements (pure: no Spark)."""

from __future__ import annotations

from ...errors import StatementError
from ...sql import ast

#: the column of the k-th call's elements, beside the SELECT's other columns
ELEMENT = "__unnest_e{}"


def is_unnest(expr: ast.Expr) -> bool:
    return isinstance(expr, ast.FunctionCall) and expr.name.upper() == "UNNEST" and len(expr.args) == 1


def calls_in(outputs) -> list[tuple[ast.FunctionCall, int]]:
    """Every distinct unnest call of the (name, expression) outputs, in order, with the index
    of the first output holding it; a call inside another's argument is refused."""
    found: list[tuple[ast.FunctionCall, int]] = []
    for index, (_, expr) in enumerate(outputs):
        for node in ast.walk(expr):
            if not is_unnest(node):
                continue
            inner = next((n for n in ast.walk(node.args[0]) if is_unnest(n)), None)
            if inner is not None:
                raise StatementError(f"line {inner.line}:{inner.column}: unnest(...) inside unnest(...) is not "
                                     "supported: unnest the inner list in FROM (FROM t, unnest(t.l) AS u)")
            if all(node != call for call, _ in found):
                found.append((node, index))
    return found


def with_elements(expr: ast.Expr, calls) -> ast.Expr:
    """`expr` with each unnest call replaced by a reference to its elements' column."""
    return ast.substitute(expr, {call: ast.ColumnRef(ELEMENT.format(k), line=call.line, column=call.column)
                                 for k, (call, _) in enumerate(calls)})
