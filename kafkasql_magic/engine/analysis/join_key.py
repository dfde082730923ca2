"""The key of a join's result, as ksqlDB decides it: a column its (last) ON clause equates, or
a synthetic column, `ROWKEY`.

ksqlDB keys a join's result by the join expression. When one side of the ON equality is a plain
column and the join is not FULL OUTER, that column is the key. Otherwise no source column holds
the key — a FULL OUTER join's row may miss either side, and `ON ABS(l.id) = ABS(r.id)` names no
column — so the result gets a synthetic key column: `ROWKEY`, or `ROWKEY_1`, `ROWKEY_2`, ... when
a source already has a column of that name. Its value is the first non-NULL of the two sides'
join expressions (`COALESCE(left, right)`), as is the value of a key column of an outer join
whose own side is missing (a RIGHT join's right-only row is keyed by the right side's value).
Pure: no Spark; the build (`engine/build/join_key.py`) computes the value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...sql import ast

#: The synthetic key column's name before numbering.
SYNTHETIC_KEY = "ROWKEY"
_NUMBERED = re.compile(r"(?P<name>.*?)(?:_(?P<number>\d+))?")


@dataclass(frozen=True)
class JoinKey:
    """The last join's ON operands: `left` over the sources joined before, `right` over the one
    joined last; `synthetic` names the synthetic key column (None: a source column is the key);
    `filled` are the result columns that hold the key and take the join key where their own
    side is missing (a RIGHT join's `l.id` on a right-only row)."""

    left: ast.Expr
    right: ast.Expr
    synthetic: str | None
    filled: tuple[str, ...] = ()


def join_key_of(stmt: ast.Select, inputs) -> JoinKey | None:
    """The join key of `stmt` (None: no join, or an ON clause that is not one equality between
    an expression of the sources joined before and one of the source joined last)."""
    if not stmt.joins:
        return None
    join = stmt.joins[-1]
    on = join.on
    if not (isinstance(on, ast.BinaryOp) and on.op == "="):
        return None
    last = len(inputs) - 1
    owners = [_owner(operand, inputs) for operand in (on.left, on.right)]
    if owners[0] is not None and owners[0] < last and owners[1] == last:
        left, right = on.left, on.right
    elif owners[1] is not None and owners[1] < last and owners[0] == last:
        left, right = on.right, on.left
    else:
        return None
    plain = any(isinstance(e, ast.ColumnRef) for e in (left, right))
    return JoinKey(left, right, None if plain and join.kind != "FULL" else synthetic_name(inputs))


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


def _owner(expr: ast.Expr, inputs) -> int | None:
    """The index of the one FROM item every column of `expr` belongs to (None: none or several)."""
    from .select import side_of

    refs = [n for n in ast.walk(expr) if isinstance(n, ast.ColumnRef)]
    owners = {(side_of(r, inputs) or (None,))[0] for r in refs}
    return owners.pop() if len(owners) == 1 else None
