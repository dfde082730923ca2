"""INSERT INTO ... VALUES: validate against the source, encode key and value, produce one record."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Callable

from .. import formats, types
from ..catalog import HEADER, HEADERS, KEY, VALUE, SourceDef
from ..engine.columns import PSEUDOCOLUMNS, ROWTIME
from ..errors import StatementError, did_you_mean
from ..formats import Field
from ..sql import ast
from ..sql.render import render

#: ksql type -> Python types a literal may have for it, and the conversion.
COERCIONS = {
    "BOOLEAN": ((bool,), bool),
    "INT": ((int,), int),
    "BIGINT": ((int,), int),
    "DOUBLE": ((int, float, Decimal), float),
    "DECIMAL": ((int, float, Decimal), lambda v: Decimal(str(v))),
    "STRING": ((str,), str),
    "BYTES": ((bytes,), bytes),
    "DATE": ((str,), dt.date.fromisoformat),
    "TIMESTAMP": ((str, int), lambda v: v if isinstance(v, int) else dt.datetime.fromisoformat(v)),
}


#: What `_literal` answers for a value that is not a literal (an expression to evaluate).
NOT_LITERAL = object()


def _literal(e: ast.Expr):
    if isinstance(e, ast.Literal):
        return Decimal(e.value) if e.kind == "DECIMAL" else e.value
    if isinstance(e, ast.UnaryOp) and isinstance(e.operand, ast.Literal) and e.operand.kind != "STRING":
        value = _literal(e.operand)
        return -value if e.op == "-" else value
    return NOT_LITERAL


def check_no_columns(e: ast.Expr, *, qualified_only: bool = False) -> None:
    """ksqlDB's refusals of a column in a value: a qualified one fails its parse (no source has
    that name: checked first), an unqualified one its evaluation, naming the whole value."""
    bound = {p for n in ast.walk(e) if isinstance(n, ast.Lambda) for p in n.params}
    for node in ast.walk(e):
        if isinstance(node, ast.ColumnRef) and node.qualifier is not None:
            raise StatementError(
                f"Failed to prepare statement: '{node.qualifier}' is not a valid stream/table name or alias.")
        if isinstance(node, ast.ColumnRef) and node.name not in bound and not qualified_only:
            raise StatementError(f"Unsupported column reference in insert value: {render(e)}")


def _coerce(value, t: ast.Type, name: str) -> object:
    """`value` as a value of type `t` (the column `name`'s), as ksqlDB's strict coercion takes
    it: numbers widen, a STRUCT's fields are matched by name (those not given are NULL)."""
    if value is None:
        return None
    if t.name == "ARRAY" and isinstance(value, list):
        return [_coerce(v, t.element, name) for v in value]
    if t.name == "MAP" and isinstance(value, dict):
        return {_coerce(k, t.key, name): _coerce(v, t.value, name) for k, v in value.items()}
    if t.name == "STRUCT" and isinstance(value, dict) and set(value) <= {f for f, _ in t.fields}:
        return {f: _coerce(value.get(f), ft, name) for f, ft in t.fields}
    allowed, convert = COERCIONS.get(t.name, ((), None))
    if convert is None or not isinstance(value, allowed) or (isinstance(value, bool) and t.name != "BOOLEAN"):
        raise StatementError(f"Expected type {types.display(t)} for field {name} but got {value!r}")
    return convert(value)


def record_from_insert(stmt: ast.InsertValues, target: SourceDef, evaluate: Callable[[list], list]) -> dict:
    """The Kafka record (key, value, timestamp) an INSERT VALUES statement writes; `evaluate`
    computes the values that are expressions rather than literals."""
    for value in stmt.values:
        check_no_columns(value, qualified_only=True)
    names = list(stmt.columns) or [c.name for c in target.star_columns]
    for name in names:
        if name in PSEUDOCOLUMNS and name != ROWTIME:
            raise StatementError(
                f"Failed to insert values into '{target.name}'. Inserting into column `{name}` is not allowed.")
    by_name = {c.name: c for c in target.columns}
    headers = [n for n in names if n in by_name and by_name[n].role in (HEADERS, HEADER)]
    if headers:
        raise StatementError(f"Cannot insert into HEADER columns: {', '.join(headers)}")
    if len(names) != len(stmt.values):
        counted = len(names) if stmt.columns else f"{names}"  # ksqlDB counts the columns given
        raise StatementError(
            f"Failed to prepare statement: Expected number columns and values to match: {counted}, "
            f"{len(stmt.values)}{'' if stmt.columns else ' values'}")
    unknown = [n for n in names if n not in by_name and n != ROWTIME]
    if unknown:
        raise StatementError(f"Column name {unknown[0]} does not exist.").hinted(did_you_mean(unknown[0], by_name))
    for value in stmt.values:
        check_no_columns(value)
    literals = [_literal(v) for v in stmt.values]
    computed = iter(evaluate([v for v, lit in zip(stmt.values, literals) if lit is NOT_LITERAL]))
    given = {n: next(computed) if lit is NOT_LITERAL else lit for n, lit in zip(names, literals)}
    timestamp = given.pop(ROWTIME, None)
    row = {n: _coerce(v, by_name[n].type, n) for n, v in given.items()}

    def encode(role: str, spec, columns):
        fields = [Field(c.name, c.type) for c in columns]
        return formats.lookup(spec.name).encode([row.get(c.name) for c in columns], fields, spec, role)

    return {
        "key": encode("key", target.key_format, target.with_role(KEY)),
        "value": encode("value", target.value_format, target.with_role(VALUE)),
        "timestamp": timestamp,
    }
