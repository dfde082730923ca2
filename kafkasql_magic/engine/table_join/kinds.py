"""Table-table joins in push and persistent queries: which kind (on the primary keys, or a
foreign key of the left table onto the right table's primary key) and ksqlDB's refusals.

Pure: no Spark. `build_spark.py` runs them as changelogs.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ...errors import StatementError
from ...sql import ast
from ...sql.render import render

if TYPE_CHECKING:
    from ..analysis.plan import Input

#: The kinds of table-table join the build knows.
PRIMARY_KEY, FOREIGN_KEY = "PRIMARY_KEY", "FOREIGN_KEY"

#: Join kinds ksqlDB runs on a foreign key (the result is keyed by the left table's key).
FOREIGN_KEY_JOINS = ("INNER", "LEFT")

#: The words ksqlDB's messages use for an outer join kind.
JOIN_WORDS = {"RIGHT": "RIGHT OUTER JOIN", "FULL": "FULL OUTER JOIN"}


def table_join_kind(stmt: ast.Select, inputs: list[Input]) -> str | None:
    """PRIMARY_KEY or FOREIGN_KEY for a push query joining tables (two or more, left-deep as
    ksqlDB evaluates them: every join after the first is on the primary key), None for any other
    query; a join ksqlDB refuses raises its message."""
    from ..analysis.plan import TABLE  # analysis imports this module: the plan's names at call time

    if not (stmt.emit_changes and stmt.joins and all(i.kind == TABLE for i in inputs)):
        return None
    if any(i.view is not None for i in inputs):
        raise StatementError("Table-table joins over views are not supported yet by kafkasql_magic: "
                             "join the tables the views read.")
    for number, side in enumerate(inputs[2:], 2):  # ksqlDB's analyzer, for three sources or more
        if side.name.lower() in {i.name.lower() for i in inputs[:number]}:
            raise StatementError(f"N-way joins do not support multiple occurrences of the same source. "
                                 f"Source: '{side.name.upper()}'.")
    kinds = [_join_kind(number, join, stmt.joins[:number], inputs) for number, join in enumerate(stmt.joins)]
    if kinds[0] == FOREIGN_KEY:
        for right, join in enumerate(stmt.joins[1:], 2):
            _check_after_foreign_key(join, right, inputs)
    return kinds[0]


#: ksqlDB's refusal of a windowed aggregation over a table (SchemaKGroupedTable.aggregate); a join
#: of tables is a table.
WINDOWED_TABLE_AGGREGATION = "Windowing not supported for table aggregations."


def check_aggregated_table_join(stmt: ast.Select, aggregating: bool, table_join: str | None) -> None:
    """A GROUP BY over a join of tables (`table_join`) aggregates the join's table: in no window."""
    if aggregating and table_join is not None and stmt.window is not None:
        raise StatementError(WINDOWED_TABLE_AGGREGATION)


def _check_after_foreign_key(join: ast.Join, right: int, inputs: list[Input]) -> None:
    """A join after a foreign-key join is on the left table's primary key (the foreign-key
    join's result is keyed by it)."""
    left_expr, right_expr = sides(join.on, inputs, right)
    if _owner(left_expr, inputs) != 0:
        got = f"{_qualified(left_expr, inputs)} = {_qualified(right_expr, inputs)}"
        raise StatementError("Invalid join condition: a join after a foreign-key table-table join must be on the "
                             f"primary key of the first table (the key of the foreign-key join's result). Got {got}.")


def _join_kind(number: int, join: ast.Join, before: tuple[ast.Join, ...], inputs: list[Input]) -> str:
    """PRIMARY_KEY or FOREIGN_KEY for the join bringing in table `number + 1`; ksqlDB's refusals."""
    right = number + 1
    found = sides(join.on, inputs, right)
    if found is None:
        _check_criteria(join.on, right, inputs)
        raise StatementError("Invalid join condition: table-table joins require an equality between a column "
                             f"of each table. Got {render(join.on)}.")
    left_expr, right_expr = found
    got = f"{_qualified(left_expr, inputs)} = {_qualified(right_expr, inputs)}"
    if not is_key(right_expr, inputs[right]):
        raise StatementError("Invalid join condition: table-table joins require to join on the primary key "
                             f"of the right input table. Got {got}.")
    owner = _owner(left_expr, inputs)
    if not is_key(left_expr, inputs[owner]):
        if number:
            raise StatementError("Invalid join condition: foreign-key table-table joins are not supported as part "
                                 f"of n-way joins. Got {got}.")
        if join.kind not in FOREIGN_KEY_JOINS:
            words = "full-outer" if join.kind == "FULL" else "right-outer"
            raise StatementError(f"Invalid join type: {words} join not supported for foreign-key table-table join. "
                                 f"Got {inputs[0].name} {JOIN_WORDS[join.kind]} {inputs[right].name}.")
        return FOREIGN_KEY
    if any(j.kind == "FULL" for j in before):
        # a FULL join's result is keyed by a synthetic column no source column equals: ksqlDB
        # would have to repartition the joined table by the ON column, which it refuses
        from ..analysis.join_key import synthetic_name

        column = _qualified(left_expr, inputs).replace(".", "_")
        raise StatementError("Cannot repartition a TABLE source. If this is a join, make sure that the criteria "
                             f"uses the TABLE's key column {synthetic_name(inputs[:right])} instead of [{column}]")
    return PRIMARY_KEY


def _check_criteria(on: ast.Expr, right: int, inputs: list[Input]) -> None:
    """ksqlDB's analyzer messages for an ON equality that does not pair a table joined before
    with table `right`: a side over no table or several, both sides over one table, or neither
    over the table joined."""
    if not (isinstance(on, ast.BinaryOp) and on.op == "="):
        return
    owners = []
    for operand in (on.left, on.right):
        refs = [n for n in ast.walk(operand) if isinstance(n, ast.ColumnRef)]
        found = {_owner(ref, inputs) for ref in refs}
        if None in found:
            return  # an unknown or ambiguous column: the type checker names it
        if len(found) != 1:
            raise StatementError(f"Invalid comparison expression '{render(operand)}' in join '{render(on)}'. Each "
                                 "side of the join comparision must contain references from exactly one source.")
        owners.append(found.pop())
    names = [f"`{inputs[o].qualifiers[0].upper()}`" for o in owners]
    if owners[0] == owners[1]:
        raise StatementError("Each side of the join must reference exactly one source and not the same source. "
                             f"Left side references {names[0]} and right references {names[1]}")
    if right not in owners:
        joined = f"`{inputs[right].qualifiers[0].upper()}`"
        raise StatementError(f"A join criteria is expected to reference the source ({joined}) in the FROM clause, "
                             f"instead the right source references {names[1]} and the left source references "
                             f"{names[0]}")


def _qualified(expr: ast.Expr, inputs) -> str:
    """`expr` as ksqlDB's messages show it: a column named with its table's alias or name."""
    from ..analysis.select import side_of

    side = side_of(expr, inputs) if isinstance(expr, ast.ColumnRef) and expr.qualifier is None else None
    return render(expr if side is None else replace(expr, qualifier=inputs[side[0]].qualifiers[0]))


def join_sides(on: ast.Expr, inputs, right: int = 1) -> tuple[ast.Expr, ast.Expr]:
    """The ON equality's (expression of the tables joined before, column of table `right`)."""
    found = sides(on, inputs, right)
    assert found is not None, "checked by table_join_kind"
    return found


def sides(on: ast.Expr, inputs, right: int = 1) -> tuple[ast.Expr, ast.Expr] | None:
    """(the operand over one table joined before `right`, the operand over table `right`)."""
    if not (isinstance(on, ast.BinaryOp) and on.op == "="):
        return None
    owners = [_owner(operand, inputs) for operand in (on.left, on.right)]
    if owners[1] == right and owners[0] is not None and owners[0] < right:
        return on.left, on.right
    if owners[0] == right and owners[1] is not None and owners[1] < right:
        return on.right, on.left
    return None


def _owner(expr: ast.Expr, inputs) -> int | None:
    """The one FROM item every column of `expr` belongs to (None: none or several)."""
    from ..analysis.select import side_of

    refs = [n for n in ast.walk(expr) if isinstance(n, ast.ColumnRef)]
    owners = {(side_of(r, inputs) or (None,))[0] for r in refs}
    return owners.pop() if len(owners) == 1 else None


def is_key(expr: ast.Expr, side: Input) -> bool:
    keys = [c.name.lower() for c in side.source.key_columns]
    return isinstance(expr, ast.ColumnRef) and keys == [expr.name.lower()]


def left_key_outputs(outputs, inputs) -> list[str]:
    """A foreign-key join's result is keyed by the left table's key: the result columns that are it."""
    from ..analysis.select import in_key_order, side_of

    keys = [c.name.lower() for c in inputs[0].source.key_columns]
    return in_key_order(outputs, keys, lambda e: (side_of(e, inputs) or (None, ""))[0] == 0)
