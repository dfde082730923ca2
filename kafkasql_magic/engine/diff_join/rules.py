"""Materialize's joins in SUBSCRIBE: joins over whole collections (no windows), whose result is a
stream of diffs (`mz_timestamp`, `mz_diff`, then the columns).

Pure: no Spark. Which push queries join this way, the ON clause's equalities and the refusals.
The build (`engine/diff_join/join_spark.py`) keeps both inputs as multisets in keyed state
(`state_spark.py`, by `changes.py`'s rules).
"""

from __future__ import annotations

from ...errors import StatementError
from ...sql import ast
from ...sql.render_materialize import MaterializeWriter
from ..analysis.plan import TABLE, Input


def joins_with_diffs(stmt: ast.Select, inputs: list[Input], dialect, aggregating: bool) -> bool:
    """True for a SUBSCRIBE (a push query of a dialect that joins with diffs) over a join of two
    relations that does not aggregate, or over a view that does (its diffs pass through a
    projection and a filter); its inputs are checked (ksql's other joins are planned elsewhere)."""
    if not (dialect.joins_with_diffs and stmt.emit_changes):
        return False
    if len(inputs) == 1:
        view = inputs[0].view
        if view is None or not view.diffs:
            return False
        if aggregating:
            raise StatementError(f"SUBSCRIBE over an aggregation of '{inputs[0].qualifiers[0]}' is not supported "
                                 "yet: the view joins, and its changes are diffs; aggregate over the relations it "
                                 "joins instead.")
        return True
    if len(stmt.joins) > 1 and not aggregating and (any(j.kind != "INNER" for j in stmt.joins)
                                                    or any(i.kind == TABLE or i.view is not None for i in inputs)):
        raise StatementError("SUBSCRIBE over more than two joined relations is not supported yet with an outer join, "
                             "a changelog (ENVELOPE UPSERT or a table) or a view: join two per view and subscribe "
                             "to their join.")
    if len(stmt.joins) != 1 or aggregating:
        return False
    for side in inputs:
        _check_input(side)
    equalities(stmt.joins[0].on, inputs)
    return True


def _check_input(side: Input) -> None:
    """A view joins when it only projects and filters: an aggregating or joining view is not a
    multiset of records the join can keep yet, and a view over a changelog must select its key
    (its rows are replaced by key)."""
    view = side.view
    if view is None:
        return
    if view.aggregating or view.statement.joins or view.diffs:
        what = "aggregates" if view.aggregating else "joins"
        raise StatementError(f"SUBSCRIBE over a join of '{side.qualifiers[0]}' is not supported yet: the view "
                             f"{what}; join the relations it reads, or subscribe to the view alone.")
    if view.kind == TABLE and not view.keys:
        keys = ", ".join(c.name for c in view.source.key_columns)
        raise StatementError(f"SUBSCRIBE over a join of '{side.qualifiers[0]}' needs the view to select the key of "
                             f"the changelog it reads ({keys}): its rows are replaced by key.")


def equalities(on: ast.Expr, inputs) -> list[tuple[ast.Expr, ast.Expr]]:
    """The ON clause as (left input's expression, right input's expression) pairs: a conjunction
    of equalities, each between an expression of each input."""
    terms = list(_conjuncts(on))
    pairs = [_pair(term, inputs) for term in terms]
    if any(p is None for p in pairs):
        bad = next(t for t, p in zip(terms, pairs) if p is None)
        where = f"line {bad.line}:{bad.column}: " if getattr(bad, "line", None) else ""
        raise StatementError(f"{where}SUBSCRIBE over a join supports ON clauses that equate an expression of each "
                             f"side (joined by AND) only; got {MaterializeWriter()(bad)}.")
    return pairs


def _conjuncts(expr: ast.Expr):
    if isinstance(expr, ast.And):
        yield from _conjuncts(expr.left)
        yield from _conjuncts(expr.right)
    else:
        yield expr


def _pair(term: ast.Expr, inputs) -> tuple[ast.Expr, ast.Expr] | None:
    if not (isinstance(term, ast.BinaryOp) and term.op == "="):
        return None
    owners = [_owner(operand, inputs) for operand in (term.left, term.right)]
    if owners == [0, 1]:
        return term.left, term.right
    if owners == [1, 0]:
        return term.right, term.left
    return None


def _owner(expr: ast.Expr, inputs) -> int | None:
    """The one input every column of `expr` belongs to (None: none or several)."""
    from ..analysis.select import side_of

    refs = [n for n in ast.walk(expr) if isinstance(n, ast.ColumnRef)]
    owners = {(side_of(r, inputs) or (None,))[0] for r in refs}
    return owners.pop() if len(owners) == 1 else None


def referenced_pseudocolumns(stmt: ast.Select, side: Input) -> tuple[str, ...]:
    """The side's pseudocolumns the statement names: the rest stay out of the kept rows, so two
    records with the same columns are one row twice (a multiset), as in Materialize."""
    named = {n.name.lower() for n in ast.walk(stmt) if isinstance(n, ast.ColumnRef)}
    return tuple(p for p in side.pseudocolumns if p.lower() in named)
