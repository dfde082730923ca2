"""The key of a join's result, as ksqlDB decides it for one join or a chain of them.

ksqlDB keys a join's result by its join expression. Over a chain of joins it tracks which
expressions are equivalent to the key: a join's two ON operands are, and so is everything the
joins before it made equivalent, when one of its operands is among them (`S1 JOIN T2 ON S1.ID =
T2.ID JOIN T3 ON S1.ID = T3.ID`: S1.ID, T2.ID and T3.ID; a join on another expression starts
afresh, and a FULL OUTER join has no equivalent expression, as either side may be missing). The
columns among them are the viable key columns, in the order the ON clauses name them: the first
one the projection selects is the result's key column (under its result name), and a persistent
query must select one of them (ksqlDB's message lists them all).

When none is a column — the last join is FULL OUTER, or its ON equates expressions that no column
is equivalent to (`ON ABS(l.id) = ABS(r.id)`) — the result gets a synthetic key column: `ROWKEY`,
or `ROWKEY_1`, `ROWKEY_2`, ... when a source already has a column of that name. Its value is the
first non-NULL of the last join's two operands (`COALESCE(left, right)`), as is the value of a key
column of an outer join whose own side is missing (a RIGHT join's right-only row is keyed by the
right side's value). Pure: no Spark; the build (`engine/join_key/column_spark.py`) computes the value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...dialects.ksql_sources import check_key_types
from ...sql import ast

#: The synthetic key column's name before numbering.
SYNTHETIC_KEY = "ROWKEY"
_NUMBERED = re.compile(r"(?P<name>.*?)(?:_(?P<number>\d+))?")


@dataclass(frozen=True)
class JoinKey:
    """The last join's ON operands: `left` over the sources joined before, `right` over the one
    joined last; `synthetic` names the synthetic key column (None: a source column is the key);
    `viable` are the columns equivalent to the key across the chain, qualified by their source's
    alias (or name), in ksqlDB's order; `filled` are the result columns that hold the key and
    take the join key where their own side is missing (a RIGHT join's `l.id` on a right-only row)."""

    left: ast.Expr
    right: ast.Expr
    synthetic: str | None
    filled: tuple[str, ...] = ()
    viable: tuple[ast.ColumnRef, ...] = ()


def check_join_key_type(key: JoinKey | None, type_of) -> None:
    """A join on a MAP (or a type holding one) is refused where ksqlDB re-keys the left side for
    it, under that side's qualified name (`L_L0`); `type_of` types an expression of the query."""
    if key is None or key.synthetic is not None:
        return
    left = key.left
    if isinstance(left, ast.ColumnRef) and left.qualifier:
        found = type_of(left)
        if found is not None:
            check_key_types([(f"{left.qualifier.upper()}_{left.name.upper()}", found)])


def join_key_of(stmt: ast.Select, inputs) -> JoinKey | None:
    """The join key of `stmt` (None: no join, or a last ON clause that is not one equality
    between an expression of the sources joined before and one of the source joined last)."""
    equivalent: frozenset = frozenset()
    viable: tuple[ast.ColumnRef, ...] = ()
    operands = None
    for number, join in enumerate(stmt.joins, start=1):
        operands = _operands(join.on, inputs, number)
        if operands is None or join.kind == "FULL":
            equivalent, viable = frozenset(), ()
            continue
        keys = frozenset(_canonical(e, inputs) for e in operands)
        equivalent = keys | (equivalent if equivalent & keys else frozenset())
        candidates = (*viable, *(_canonical(e, inputs) for e in operands))
        viable = tuple(c for c in dict.fromkeys(candidates) if isinstance(c, ast.ColumnRef) and c in equivalent)
    if operands is None:
        return None
    left, right = operands
    return JoinKey(left, right, None if viable else synthetic_name(inputs), viable=viable)


def key_output(key: JoinKey, outputs, inputs) -> list[str]:
    """The result's key column: the output of the first viable key column the projection
    selects (ksqlDB's order, not the projection's), under its result name."""
    return _key_selections(key, outputs, inputs)[1][:1]


def check_key_selected_once(plan) -> None:
    """ksqlDB refuses a persistent join that selects its key column twice (`SELECT l.a, l.a AS
    k2`): the sink's key holds it once. Another equivalent column (`t2.id` beside `s1.id`) is a
    value column, as in ksqlDB."""
    from ...errors import StatementError

    key = plan.join_key
    if key is None or plan.aggregating or plan.statement.partition_by or plan.table_join == "FOREIGN_KEY":
        return
    if key.synthetic is not None:
        column, names = key.synthetic, [n for n, e in plan.outputs if is_synthetic_ref(e, key)]
    else:
        chosen, names = _key_selections(key, plan.outputs, plan.inputs)
        column = f"{chosen.qualifier}_{chosen.name}" if chosen is not None else ""
    if len(names) > 1:
        aliases = sorted(names)
        listed = f"{', '.join(aliases[:-1])} and {aliases[-1]}"
        raise StatementError(f"The projection contains a key column (`{column}`) more than once, aliased as: "
                             f"{listed}.\nEach key column must only be in the projection once. If you intended to "
                             "copy the key into the value, then consider using the AS_VALUE function to indicate "
                             "which key reference should be copied.")


def _key_selections(key: JoinKey, outputs, inputs) -> tuple[ast.ColumnRef | None, list[str]]:
    """The first viable key column the projection selects, and the outputs selecting it."""
    from .select import side_of

    selected = [(side_of(e, inputs), name) for name, e in outputs if isinstance(e, ast.ColumnRef)]
    for column in key.viable:
        names = [name for side, name in selected if side is not None and side == side_of(column, inputs)]
        if names:
            return column, names
    return None, []


def synthetic_name(inputs) -> str:
    """`ROWKEY`, or the first `ROWKEY_<n>` no source column has (ksqlDB numbers from the
    numbers its sources' `ROWKEY`, `ROWKEY_1`, ... columns use, `ROWKEY` being 0)."""
    used = set()
    for side in inputs:
        for column in side.columns:
            found = _NUMBERED.fullmatch(column.upper())
            if found["name"] == SYNTHETIC_KEY:
                used.add(int(found["number"] or 0))
    number = next(n for n in range(len(used) + 1) if n not in used)
    return SYNTHETIC_KEY if number == 0 else f"{SYNTHETIC_KEY}_{number}"


def is_synthetic_ref(expr: ast.Expr, key: JoinKey | None) -> bool:
    """Whether `expr` names the synthetic key column (unqualified: it belongs to no source)."""
    return (key is not None and key.synthetic is not None and isinstance(expr, ast.ColumnRef)
            and expr.qualifier is None and expr.name.upper() == key.synthetic)


def _operands(on: ast.Expr, inputs, joined: int) -> tuple[ast.Expr, ast.Expr] | None:
    """The ON equality's operands, the one over the sources joined before `joined` first (None:
    not one equality between those sources and the source joined at `joined`)."""
    if not (isinstance(on, ast.BinaryOp) and on.op == "="):
        return None
    owners = [_owner(operand, inputs) for operand in (on.left, on.right)]
    if owners[0] is not None and owners[0] < joined and owners[1] == joined:
        return on.left, on.right
    if owners[1] is not None and owners[1] < joined and owners[0] == joined:
        return on.right, on.left
    return None


def _canonical(expr: ast.Expr, inputs) -> ast.Expr:
    """`expr` with every column qualified by its source's alias (or name) and spelled as
    declared, so that ON clauses naming a column differently compare equal, as in ksqlDB."""
    from .select import side_of

    table = {}
    for ref in (n for n in ast.walk(expr) if isinstance(n, ast.ColumnRef)):
        found = side_of(ref, inputs)
        if found is not None:
            side = inputs[found[0]]
            name = next((c for c in side.visible if c.lower() == found[1]), ref.name)
            table[ref] = ast.ColumnRef(name, side.qualifiers[0])
    return ast.substitute(expr, table)


def _owner(expr: ast.Expr, inputs) -> int | None:
    """The index of the one FROM item every column of `expr` belongs to (None: none or several)."""
    from .select import side_of

    refs = [n for n in ast.walk(expr) if isinstance(n, ast.ColumnRef)]
    owners = {(side_of(r, inputs) or (None,))[0] for r in refs}
    return owners.pop() if len(owners) == 1 else None
