"""Table-table joins in push and persistent queries: which kind (on the primary keys, or a
foreign key of the left table onto the right table's primary key) and ksqlDB's refusals.

Pure: no Spark. The build (`engine/build/table_join.py`) runs them as changelogs.
"""

from __future__ import annotations

from ...errors import StatementError
from ...sql import ast
from ...sql.render import render
from .plan import STREAM, TABLE, Input

#: The kinds of table-table join the build knows.
PRIMARY_KEY, FOREIGN_KEY = "PRIMARY_KEY", "FOREIGN_KEY"

#: Join kinds ksqlDB runs on a foreign key (the result is keyed by the left table's key).
FOREIGN_KEY_JOINS = ("INNER", "LEFT")

#: The words ksqlDB's messages use for an outer join kind.
JOIN_WORDS = {"RIGHT": "RIGHT OUTER JOIN", "FULL": "FULL OUTER JOIN"}


def table_join_kind(stmt: ast.Select, inputs: list[Input]) -> str | None:
    """PRIMARY_KEY or FOREIGN_KEY for a push query joining two tables, None for any other query;
    a join ksqlDB refuses raises its message."""
    if not (stmt.emit_changes and stmt.joins and all(i.kind == TABLE for i in inputs)):
        return None
    if len(stmt.joins) > 1:
        raise StatementError("Table-table joins of more than two tables are not supported yet by kafkasql_magic: "
                             "join two tables per query (a persistent query's output is a table to join again).")
    if any(i.view is not None for i in inputs):
        raise StatementError("Table-table joins over views are not supported yet by kafkasql_magic: "
                             "join the tables the views read.")
    join = stmt.joins[0]
    left, right = inputs
    sides = _sides(join.on, inputs)
    if sides is None:
        raise StatementError("Invalid join condition: table-table joins require an equality between a column "
                             f"of each table. Got {render(join.on)}.")
    left_expr, right_expr = sides
    got = f"{render(left_expr)} = {render(right_expr)}"
    if not _is_key(right_expr, right):
        raise StatementError("Invalid join condition: table-table joins require to join on the primary key "
                             f"of the right input table. Got {got}.")
    if _is_key(left_expr, left):
        return PRIMARY_KEY
    if join.kind not in FOREIGN_KEY_JOINS:
        words = "full-outer" if join.kind == "FULL" else "right-outer"
        raise StatementError(f"Invalid join type: {words} join not supported for foreign-key table-table join. "
                             f"Got {left.name} {JOIN_WORDS[join.kind]} {right.name}.")
    return FOREIGN_KEY


def tracks_table(plan) -> bool:
    """A push aggregation over a stream joined with one table keeps the table as Spark state
    (engine/build/table_lookup.py), so each record meets the table as it is then."""
    inputs = plan.inputs
    return (plan.aggregating and plan.push and len(inputs) == 2 and inputs[0].kind == STREAM
            and inputs[1].kind == TABLE and inputs[1].view is None and inputs[0].view is None)


def check_lookup_join(stmt: ast.Select, inputs: list[Input], aggregating: bool) -> None:
    """ksqlDB's rule for a stream-table join: the ON clause equates the table's primary key."""
    if not (aggregating and stmt.emit_changes and len(inputs) == 2 and inputs[0].kind == STREAM
            and inputs[1].kind == TABLE):
        return
    sides = _sides(stmt.joins[0].on, inputs)
    if sides is None or not _is_key(sides[1], inputs[1]):
        got = f"{render(sides[0])} = {render(sides[1])}" if sides else render(stmt.joins[0].on)
        raise StatementError("Invalid join condition: stream-table joins require to join on the table's "
                             f"primary key. Got {got}.")


def join_sides(on: ast.Expr, inputs) -> tuple[ast.Expr, ast.Expr]:
    """The ON equality's (left table's expression, right table's column)."""
    sides = _sides(on, inputs)
    assert sides is not None, "checked by table_join_kind"
    return sides


def _sides(on: ast.Expr, inputs) -> tuple[ast.Expr, ast.Expr] | None:
    if not (isinstance(on, ast.BinaryOp) and on.op == "="):
        return None
    owners = [_owner(operand, inputs) for operand in (on.left, on.right)]
    if owners == [0, 1]:
        return on.left, on.right
    if owners == [1, 0]:
        return on.right, on.left
    return None


def _owner(expr: ast.Expr, inputs) -> int | None:
    """The one FROM item every column of `expr` belongs to (None: none or several)."""
    from .select import side_of

    refs = [n for n in ast.walk(expr) if isinstance(n, ast.ColumnRef)]
    owners = {(side_of(r, inputs) or (None,))[0] for r in refs}
    return owners.pop() if len(owners) == 1 else None


def _is_key(expr: ast.Expr, side: Input) -> bool:
    keys = [c.name.lower() for c in side.source.key_columns]
    return isinstance(expr, ast.ColumnRef) and keys == [expr.name.lower()]


def left_key_outputs(outputs, inputs) -> list[str]:
    """A foreign-key join's result is keyed by the left table's key: the result columns that are it."""
    from .select import side_of

    keys = {c.name.lower() for c in inputs[0].source.key_columns}
    return [n for n, e in outputs if isinstance(e, ast.ColumnRef) and (side_of(e, inputs) or (None, ""))[0] == 0
            and e.name.lower() in keys]
