"""GROUP BY as AST rewriting: group keys and aggregate calls become names of the grouped
frame's columns, and only those may remain in SELECT and HAVING."""

from __future__ import annotations

from dataclasses import replace

from ...errors import StatementError
from ...sql import ast
from ...sql.ast_materialize import OrderedCall
from ...sql.render import render
from ..aggregate import calls as aggregates
from ..columns import ROWTIME, WINDOWEND, WINDOWSTART
from .plan import Grouping

#: WINDOWSTART / WINDOWEND (BIGINT ms) -> the grouped frame's columns.
WINDOW_BOUNDS = {ast.ColumnRef(WINDOWSTART): ast.ColumnRef("__wstart"),
                 ast.ColumnRef(WINDOWEND): ast.ColumnRef("__wend")}


def by_select_items(stmt: ast.Select, inputs) -> ast.Select:
    """PostgreSQL's GROUP BY references to the SELECT list: `GROUP BY 2` is the second item's
    expression, `GROUP BY m` the expression aliased `m` where no FROM item has a column `m`
    (a column of the input wins, as in PostgreSQL)."""
    def resolved(expr: ast.Expr) -> ast.Expr:
        if isinstance(expr, ast.Literal) and expr.kind in ("INT", "BIGINT"):
            position = expr.value
            if not 1 <= position <= len(stmt.items):
                raise StatementError(f"line {expr.line}:{expr.column}: GROUP BY position {position} is not in select list")
            if any(isinstance(item, ast.Star) for item in stmt.items[:position]):
                raise StatementError(f"line {expr.line}:{expr.column}: GROUP BY {position} after a * in the select "
                                     "list is not supported: group by the expression")
            return stmt.items[position - 1].expr
        if isinstance(expr, ast.ColumnRef) and expr.qualifier is None and not any(
                expr.name.lower() in {c.lower() for c in side.visible} for side in inputs):
            named = [item.expr for item in stmt.items
                     if isinstance(item, ast.SelectItem) and (item.alias or "").lower() == expr.name.lower()]
            if len(named) == 1:
                return named[0]
        return expr

    group_by = tuple(resolved(e) for e in stmt.group_by)
    return stmt if group_by == stmt.group_by else replace(stmt, group_by=group_by)


def aggregate_calls(expr: ast.Expr) -> list[ast.FunctionCall | OrderedCall]:
    """The outermost aggregate calls in `expr` (with their ORDER BY, Materialize's `agg(x ORDER BY k)`)."""
    if isinstance(expr, OrderedCall) and aggregates.is_aggregate(expr.call.name):
        return [expr]
    if isinstance(expr, ast.FunctionCall) and aggregates.is_aggregate(expr.name):
        return [expr]
    return [call for child in ast.children(expr) for call in aggregate_calls(child)]


def qualified(expr: ast.Expr, inputs) -> ast.Expr:
    """`expr` with every column of a FROM item qualified by its alias (or name) and spelled as
    declared, so that `id`, `input.id` and `i.id` compare equal, as ksqlDB compares them."""
    table = {}
    for ref in (n for n in ast.walk(expr) if isinstance(n, ast.ColumnRef)):
        side = _side(ref, inputs)
        if side is not None:
            name = next(c for c in side.visible if c.lower() == ref.name.lower())
            table[ref] = ast.ColumnRef(name, side.qualifiers[0])
    return ast.substitute(expr, table)


def _side(ref: ast.ColumnRef, inputs):
    """The one FROM item `ref` names a column of (None: none, several, or not its column)."""
    if ref.qualifier is not None:
        found = [s for s in inputs if ref.qualifier.lower() in {q.lower() for q in s.qualifiers}]
    else:
        found = [s for s in inputs if ref.name.lower() in {c.lower() for c in s.visible}]
    if len(found) != 1 or ref.name.lower() not in {c.lower() for c in found[0].visible}:
        return None
    return found[0]


def aligned(expr: ast.Expr, keys, inputs) -> ast.Expr:
    """`expr` with each sub-expression that is one of `keys`, however qualified (`p.name` for a
    key `name`), written as that key is: what GROUP BY keys and SELECT share is found by equality."""
    wanted = {qualified(k, inputs): k for k in keys}
    kinds = tuple({type(k) for k in keys})  # only nodes of a key's kind can be it: no quadratic walk
    table = {n: wanted[q] for n in ast.walk(expr) if isinstance(n, kinds)
             and (q := qualified(n, inputs)) in wanted and n != wanted[q]}
    return ast.substitute(expr, table) if table else expr


def _columns(node, bound: frozenset = frozenset()):
    """The column references under `node`, a lambda's parameters (in its body) left out."""
    if isinstance(node, ast.Lambda):
        yield from _columns(node.body, bound | set(node.params))
        return
    if isinstance(node, ast.ColumnRef) and not (node.qualifier is None and node.name in bound):
        yield node
    for child in ast.children(node):
        yield from _columns(child, bound)


def _loose(grouped: ast.Expr) -> list[ast.ColumnRef]:
    """The columns left in `grouped` once group keys and aggregates are substituted."""
    return [n for n in _columns(grouped) if not n.name.startswith("__")]


def check_grouped_selects(outputs, grouped) -> None:
    """ksqlDB's message names every SELECT expression, whole, that uses a column outside its
    aggregates and the GROUP BY expressions."""
    loose = [expr for expr, g in zip(outputs, grouped) if _loose(g)]
    if loose:
        raise StatementError("Non-aggregate SELECT expression(s) not part of GROUP BY: "
                             + ", ".join(dict.fromkeys(render(e) for e in loose))
                             + "\nEither add the column(s) to the GROUP BY or remove them from the SELECT.")


def check_ungrouped_selects(stmt: ast.Select) -> None:
    """An aggregation without GROUP BY: a SELECT expression using a column outside its aggregates
    is named first, as ksqlDB's aggregate analysis does."""
    exprs = [i.expr for i in stmt.items if isinstance(i, ast.SelectItem)]
    check_grouped_selects(exprs, [ast.substitute(e, {c: ast.ColumnRef("__agg") for c in aggregate_calls(e)})
                                  for e in exprs])


def check_group_by_unique(stmt: ast.Select, inputs) -> None:
    """ksqlDB refuses a GROUP BY that names one expression twice (`data, test.data`)."""
    seen = set()
    for expr in stmt.group_by:
        same = qualified(expr, inputs)
        if same in seen:
            raise StatementError(f"Duplicate GROUP BY expression: {render(same)}")
        seen.add(same)


def check_aggregate_rules(stmt: ast.Select) -> None:
    """ksqlDB's aggregate analysis, before it compares SELECT with GROUP BY: no aggregate inside
    another, and a GROUP BY needs an aggregate in SELECT or HAVING."""
    exprs = [i.expr for i in stmt.items if isinstance(i, ast.SelectItem)]
    exprs += [stmt.having] if stmt.having is not None else []
    for call in (c for e in exprs for c in aggregate_calls(e)):
        inner = [c for arg in getattr(call, "args", ()) for c in aggregate_calls(arg)]
        if inner:
            raise StatementError(f"Aggregate functions can not be nested: {call.name}({inner[0].name}())")
    visited = exprs + ([stmt.where] if stmt.where is not None else [])  # ksqlDB's visitor meets WHERE's too
    if stmt.group_by and not any(aggregate_calls(e) for e in visited):
        raise StatementError("GROUP BY requires aggregate functions in either the SELECT or HAVING clause.")


def check_grouped(grouped: ast.Expr, what: str) -> None:
    """After substitution only group keys and aggregates may remain in HAVING (ksqlDB's message)."""
    loose = _loose(grouped)
    if loose:
        raise StatementError(f"Non-aggregate {what} not part of GROUP BY: "
                             + ", ".join(dict.fromkeys(render(n) for n in loose))
                             + "\nConsider switching the HAVING clause to a WHERE clause before the GROUP BY.")


def grouping_of(stmt: ast.Select, outputs, inputs=()) -> Grouping:
    """`inputs`: the FROM items, against which a selected `p.name` is the grouping key `name`."""
    outputs = [(name, aligned(expr, stmt.group_by, inputs)) for name, expr in outputs]
    table = {expr: ast.ColumnRef(f"__g{i}") for i, expr in enumerate(stmt.group_by)}
    if stmt.window is not None:
        table.update(WINDOW_BOUNDS)
    calls = list(dict.fromkeys(c for _, e in outputs for c in aggregate_calls(e)))
    calls += [c for c in aggregate_calls(stmt.having) if c not in calls] if stmt.having is not None else []
    for index, call in enumerate(calls):
        aggregates.lookup(call.name, len(call.args), call.star)
        table[call] = ast.ColumnRef(f"__agg{index}")
    having = ast.substitute(aligned(stmt.having, stmt.group_by, inputs), table) if stmt.having is not None else None
    grouped = tuple(ast.substitute(expr, table) for _, expr in outputs)
    check_grouped_selects([expr for _, expr in outputs], grouped)
    if having is not None:
        check_grouped(having, "HAVING expression")
    rowtime = None
    if stmt.window is not None:
        rowtime = ast.ColumnRef(ROWTIME, (stmt.source.alias or stmt.source.name) if stmt.joins else None)
    return Grouping(tuple(stmt.group_by), tuple(calls), stmt.window, rowtime, having, grouped)
