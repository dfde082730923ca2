"""A persistent query's key in its projection, checked as ksqlDB checks it before it writes a
sink: every key selected, and each key column selected only once (the sink's record key holds
it once; `AS_VALUE(k)` copies it into the value instead).

Which key a query has is decided by its last re-keying step, as in ksqlDB's plan: GROUP BY
(every grouping expression), else PARTITION BY (every partitioning expression; PARTITION BY NULL
has none), else a join (join_key.py), else the key columns of the source. An expression counts
as selected when the projection has it written with or without its source's qualifier, as
ksqlDB qualifies every column before comparing. Pure: no Spark.
"""

from __future__ import annotations

from ...errors import StatementError
from ...sql import ast
from ...sql.render import render
from .grouping import qualified
from .join_key import JoinKey, check_key_selected_once as check_join_key_selected_once
from ..table_join.kinds import FOREIGN_KEY

#: ksqlDB's first line of a key-missing message ("Keys" when several must all be selected); its
#: link (to the synthetic key's docs) and the space before the line break are ksqlDB's too.
KEY_MISSING = "Key{s} missing from projection (ie, SELECT). "
SYNTHETIC_KEY_DOCS = "See https://cnfl.io/2LV7ouS."
#: What ksqlDB adds to both of its "more than once" messages.
COPY_WITH_AS_VALUE = ("\nEach key column must only be in the projection once. If you intended to copy the key "
                      "into the value, then consider using the AS_VALUE function to indicate which key reference "
                      "should be copied.")


def joined(parts: list[str], last: str) -> str:
    """ksqlDB's GrammaticalJoiner: `A`, `A and B`, `A, B and C` (or `or`)."""
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} {last} {parts[-1]}"


def _selecting(expr: ast.Expr, plan) -> list[str]:
    """The result names of the outputs that select `expr` (in projection order)."""
    wanted = qualified(expr, plan.inputs)
    return [name for name, e in plan.outputs if qualified(e, plan.inputs) == wanted]


def _partitioned(plan) -> tuple[ast.Expr, ...]:
    """The PARTITION BY expressions that key the result (none for PARTITION BY NULL)."""
    return tuple(e for e in plan.statement.partition_by if not (isinstance(e, ast.Literal) and e.kind == "NULL"))


def _foreign_key(plan) -> bool:
    """A foreign-key table-table join: keyed by the left table's primary key."""
    return plan.table_join == FOREIGN_KEY and not (plan.join_key and plan.join_key.synthetic)


# ---------------------------------------------------------------- each key column once
def check_key_selected_once(plan) -> None:
    """ksqlDB refuses a persistent query that selects a key column twice (`SELECT id, id AS
    id2`): after GROUP BY with its own message, naming the outputs in projection order."""
    stmt = plan.statement
    if plan.aggregating:
        for expr in stmt.group_by:
            names = _selecting(expr, plan)
            if len(names) > 1:
                listed = joined([f"`{n}`" for n in names], "and")
                raise StatementError(f"The projection contains a key column more than once: {listed}."
                                     f"{COPY_WITH_AS_VALUE}")
        return
    if stmt.partition_by:
        for expr in _partitioned(plan):
            _refuse_twice(_partition_column(expr, plan), _selecting(expr, plan))
        return
    if _foreign_key(plan):
        left = plan.inputs[0]
        for column in left.source.key_columns:
            _refuse_twice(f"{left.qualifiers[0]}_{column.name}",
                          _selecting(ast.ColumnRef(column.name, left.qualifiers[0]), plan))
        return
    if stmt.joins:
        check_join_key_selected_once(plan)
        return
    first = plan.inputs[0]
    if first.view is None:
        for column in first.source.key_columns:
            _refuse_twice(column.name, _selecting(ast.ColumnRef(column.name, first.qualifiers[0]), plan))


def _partition_column(expr: ast.Expr, plan) -> str:
    """The key column PARTITION BY `expr` makes: a column keeps its name (after a join its
    `ALIAS_NAME`), an expression gets the result name the projection generates for it."""
    if isinstance(expr, ast.ColumnRef):
        ref = qualified(expr, plan.inputs)
        return f"{ref.qualifier}_{ref.name}" if plan.statement.joins and ref.qualifier else ref.name
    aliases = plan.dialect.naming.aliases(plan.dialect.naming.fold(c) for side in plan.inputs for c in side.columns)
    return aliases.name_for(expr)


def _refuse_twice(column: str, names: list[str]) -> None:
    if len(names) > 1:
        raise StatementError(f"The projection contains a key column (`{column}`) more than once, aliased as: "
                             f"{joined(sorted(names), 'and')}.{COPY_WITH_AS_VALUE}")


# ---------------------------------------------------------------- every key selected
def check_key_projected(sink: str, plan) -> None:
    """ksqlDB requires a persistent query to select its key: every grouping expression (the
    message names those missing), every partitioning expression and every key column of the
    source (the message names them all), one of a join's key columns (join_key.py), or every
    primary key column of a foreign-key join's left table (the message names those missing)."""
    stmt = plan.statement
    if plan.aggregating:
        missing = [e for e in stmt.group_by if not _selecting(e, plan)]
        if missing:
            raise StatementError(key_missing(sink, "grouping expression", [_grouping_text(e, plan) for e in missing]))
        return
    if stmt.partition_by:
        keys = _partitioned(plan)
        if any(not _selecting(e, plan) for e in keys):
            raise StatementError(key_missing(sink, "partitioning expression",
                                             [render(qualified(e, plan.inputs)) for e in keys]))
        return
    if _foreign_key(plan):
        left = plan.inputs[0]
        missing = [c.name for c in left.source.key_columns
                   if not _selecting(ast.ColumnRef(c.name, left.qualifiers[0]), plan)]
        if missing:
            column = "column" if len(missing) == 1 else "columns"
            raise StatementError(
                f"Primary key {column} missing in projection. For foreign-key table-table joins, the projection must "
                f"include all primary key columns from the left input table (`{left.qualifiers[0]}`). Missing "
                f"{column}: {', '.join(f'`{name}`' for name in missing)}.")
        return
    if stmt.joins:
        if not plan.keys and plan.join_key is not None:
            raise StatementError(join_key_missing(sink, plan.join_key))
        return
    first = plan.inputs[0]
    keys = [c.name for c in first.source.key_columns]
    selected = bool(plan.keys) if first.view is not None else all(
        _selecting(ast.ColumnRef(k, first.qualifiers[0]), plan) for k in keys)
    if keys and not selected:
        raise StatementError(key_missing(sink, "key column", [render(ast.ColumnRef(k)) for k in keys]))


def _grouping_text(expr: ast.Expr, plan) -> str:
    """A grouping expression as ksqlDB names it: unqualified over one source, a joined column as
    the join's result column (`l.b` -> `L_B`)."""
    ref_of = (lambda r: ast.ColumnRef(f"{r.qualifier}_{r.name}")) if plan.statement.joins else \
        (lambda r: ast.ColumnRef(r.name))
    expr = qualified(expr, plan.inputs)
    refs = {n: ref_of(n) for n in ast.walk(expr) if isinstance(n, ast.ColumnRef) and n.qualifier is not None}
    return render(ast.substitute(expr, refs))


def key_missing(sink: str, what: str, keys: list[str]) -> str:
    """ksqlDB's message for keys that must all be selected (`... the grouping expressions F1, F2
    and F3 in its projection (eg, SELECT F1, F2, F3...).`)."""
    several = "s" if len(keys) > 1 else ""
    return (f"{KEY_MISSING.format(s=several)}\nThe query used to build `{sink}` must include the {what}{several} "
            f"{joined(keys, 'and')} in its projection (eg, SELECT {', '.join(keys)}...).")


def join_key_missing(sink: str, join: JoinKey) -> str:
    """ksqlDB's message for a join whose key is not selected: any one of the viable key columns,
    in its order (`S1.ID, T2.ID or T3.ID`), or the synthetic key column with why it exists."""
    if join.synthetic is not None:
        key = join.synthetic
        return (f"{KEY_MISSING.format(s='')}{SYNTHETIC_KEY_DOCS}\nThe query used to build `{sink}` must include "
                f"the join expression {key} in its projection (eg, SELECT {key}...).\n{key} was added as a synthetic "
                "key column because the join criteria did not match any source column. This expression must be "
                "included in the projection and may be aliased. ")
    names = [render(c) for c in join.viable]
    which = "expression" if len(names) == 1 else "expressions"
    return (f"{KEY_MISSING.format(s='')}\nThe query used to build `{sink}` must include the join {which} "
            f"{joined(names, 'or')} in its projection (eg, SELECT {names[0]}...).")
