"""Key lookups: which key values a pull query on a table asks for.

`WHERE k = x` and `WHERE k IN (x, y)` on a table's single key column (with AND, anywhere in
the clause) name the only keys whose rows can match, so the read may skip every partition
those keys cannot be in. Anything else (OR, a range, a function of the key) names no keys:
the whole topic is read. The WHERE clause still filters every row exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...catalog import SourceDef
from ...sql import ast
from .seek import conjuncts


@dataclass(frozen=True)
class KeyLookup:
    """The key values a query asks for (literal values, as the statement spells them)."""

    column: str
    values: tuple


def _literal(e: ast.Expr):
    """A constant's Python value, or None when `e` is not one (NULL never matches a key)."""
    if isinstance(e, ast.Literal) and e.kind in ("INT", "BIGINT", "DOUBLE", "STRING"):
        return e.value
    if isinstance(e, ast.Literal) and e.kind == "DECIMAL":
        return float(e.value)
    if isinstance(e, ast.UnaryOp) and e.op in "+-":
        value = _literal(e.operand)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return -value if e.op == "-" else value
    return None


def _is_key(e: ast.Expr, key: str) -> bool:
    return isinstance(e, ast.ColumnRef) and e.name.lower() == key.lower()


def _values(e: ast.Expr, key: str) -> list | None:
    """The key values one conjunct allows, or None when it allows any key."""
    if isinstance(e, ast.BinaryOp) and e.op == "=":
        for column, other in ((e.left, e.right), (e.right, e.left)):
            if _is_key(column, key) and _literal(other) is not None:
                return [_literal(other)]
    if isinstance(e, ast.InList) and not e.negated and _is_key(e.operand, key):
        values = [_literal(i) for i in e.items]
        if values and None not in values:
            return values
    return None


def key_lookup(stmt: ast.Select, source: SourceDef) -> KeyLookup | None:
    """The keys a pull query over one table (`source`, with one key column) looks up, or None
    when its WHERE clause does not pin the key to constants."""
    if stmt.emit_changes or stmt.joins or source.kind != "TABLE" or len(source.key_columns) != 1:
        return None
    key = source.key_columns[0].name
    found: list | None = None
    for conjunct in conjuncts(stmt.where):
        values = _values(conjunct, key)
        if values is not None:
            found = values if found is None else [v for v in found if v in values]
    if not found:
        return None
    return KeyLookup(key, tuple(dict.fromkeys(found)))
