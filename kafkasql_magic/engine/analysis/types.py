"""Type-check a planned SELECT before Spark sees it (the checker lives in `typecheck/`).

The checker needs the type of every column the query can see: a source's declared columns
and its pseudocolumns, a view's outputs (typed by checking the view's own plan), and for a
join each side's columns keyed `QUALIFIER.NAME`.
"""

from __future__ import annotations

from ... import types
from ...catalog import SourceDef
from ... import dialects
from ...dialects import Dialect
from ...sql import ast
from ...typecheck import Checker, SelectTypes, check_select
from ..columns import ROWOFFSET, ROWPARTITION, ROWTIME
from .plan import Input, QueryPlan
from .windowed_source import WINDOW_BOUNDS, window_of

#: Pseudocolumn -> its ksql type.
PSEUDOCOLUMN_TYPES = {ROWTIME: types.BIGINT, ROWPARTITION: types.INT, ROWOFFSET: types.BIGINT}


def check_types(plan: QueryPlan, dialect: Dialect, text: str | None = None) -> SelectTypes:
    """Raise ExpressionTypeError (positioned, with a caret when `text` is the cell) for the
    first expression of `plan` whose types do not fit."""
    joined = len(plan.inputs) > 1
    columns: dict[str, ast.Type] = {}
    own: set[str] = set()  # declared columns of sources of the query's dialect: named exactly
    for side in plan.inputs:
        declared = {c.name for c in side.source.columns} if side.view is None and \
            dialects.get(side.source.dialect) is dialect else set()
        for name, type_ in _visible_types(side, dialect).items():
            key = f"{side.qualifiers[0]}.{name}" if joined else name
            columns[key] = type_
            if name in declared:
                own.add(key)
    key = plan.join_key
    if key is not None and key.synthetic is not None:  # ROWKEY: of the join expression's type
        columns[key.synthetic] = _join_key_type(plan, key, columns, dialect, text, frozenset(own))
    return check_select(plan.statement, columns, dialect.name, text, dialect.untyped_functions(), frozenset(own),
                        dialect.absent_functions)


def _join_key_type(plan: QueryPlan, key, columns, dialect: Dialect, text, own) -> ast.Type | None:
    refs = (plan.statement.source, *(j.source for j in plan.statement.joins))
    aliases = {r.name: r.alias for r in refs if isinstance(r, ast.SourceRef) and r.alias}
    checker = Checker(columns, dialect.name, text, aliases, dialect.untyped_functions(), own,
                      dialect.absent_functions)
    found = checker.type_of(key.left)
    return found if found is not None else checker.type_of(key.right)


def output_types(plan: QueryPlan, dialect: Dialect) -> dict[str, ast.Type]:
    """Each output column of `plan` with its type (a view seen from a query over it)."""
    checked = check_types(plan, dialect)
    return {name: checked.checker.type_of(expr) for name, expr in plan.outputs}


def _visible_types(side: Input, dialect: Dialect) -> dict[str, ast.Type]:
    if side.view is not None:
        return output_types(side.view, dialect)
    source: SourceDef = side.source
    found = {c.name: c.type for c in source.columns}
    if window_of(source) is not None:
        found.update({bound: types.BIGINT for bound in WINDOW_BOUNDS})
    return {**found, **{p: PSEUDOCOLUMN_TYPES[p] for p in side.pseudocolumns}}
