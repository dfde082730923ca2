"""INSERT INTO ... VALUES: validate against the source, encode key and value, produce one record."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from .. import formats, types
from ..catalog import HEADER, HEADERS, KEY, VALUE, SourceDef
from ..engine.columns import PSEUDOCOLUMNS, ROWTIME
from ..errors import StatementError, did_you_mean
from ..formats import Field
from ..sql import ast

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


def insert_target(catalog, stmt: ast.InsertValues | ast.InsertSelect, dialect: str) -> SourceDef:
    """The source an INSERT writes to, or ksqlDB's message when there is none: INSERT ... SELECT
    says where, counting as ksqlDB does (INSERT INTO's length past the statement's column)."""
    try:
        return catalog.get(stmt.target, dialect)
    except StatementError as unknown:
        if isinstance(stmt, ast.InsertValues):
            raise StatementError(f"Cannot insert values into an unknown stream/table: {stmt.target}").hinted(
                unknown.hint) from None
        raise StatementError(f"line {stmt.line}:{stmt.column + len('INSERT INTO')}: {stmt.target} does not exist.") \
            .hinted(unknown.hint) from None


def check_insert_select(target: SourceDef) -> None:
    """What ksqlDB refuses of an INSERT INTO ... SELECT target before it plans the query."""
    if target.kind == "TABLE":
        raise StatementError(f"INSERT INTO can only be used to insert into a stream. {target.name} is a table.")
    if target.header_columns:
        raise StatementError(f"Cannot insert into {target.name} because it has header columns")


def _literal(e: ast.Expr):
    if isinstance(e, ast.Literal):
        return Decimal(e.value) if e.kind == "DECIMAL" else e.value
    if isinstance(e, ast.UnaryOp) and isinstance(e.operand, ast.Literal) and e.operand.kind != "STRING":
        value = _literal(e.operand)
        return -value if e.op == "-" else value
    raise StatementError(f"line {e.line}:{e.column}: INSERT VALUES takes literal values only.")


def _coerce(value, column) -> object:
    if value is None:
        return None
    allowed, convert = COERCIONS.get(column.type.name, ((), None))
    if convert is None or not isinstance(value, allowed) or (isinstance(value, bool) and column.type.name != "BOOLEAN"):
        raise StatementError(
            f"Expected type {types.display(column.type)} for field {column.name} but got {value!r}")
    return convert(value)


def record_from_insert(stmt: ast.InsertValues, target: SourceDef) -> dict:
    """The Kafka record (key, value, timestamp) an INSERT VALUES statement writes."""
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
        raise StatementError(
            f"Failed to prepare statement: Expected number columns and values to match: {names}, "
            f"{len(stmt.values)} values")
    unknown = [n for n in names if n not in by_name and n != ROWTIME]
    if unknown:
        raise StatementError(f"Column name {unknown[0]} does not exist.").hinted(did_you_mean(unknown[0], by_name))
    given = {n: _literal(v) for n, v in zip(names, stmt.values)}
    timestamp = given.pop(ROWTIME, None)
    row = {n: _coerce(v, by_name[n]) for n, v in given.items()}

    def encode(role: str, spec, columns):
        fields = [Field(c.name, c.type) for c in columns]
        return formats.lookup(spec.name).encode([row.get(c.name) for c in columns], fields, spec, role)

    return {
        "key": encode("key", target.key_format, target.with_role(KEY)),
        "value": encode("value", target.value_format, target.with_role(VALUE)),
        "timestamp": timestamp,
    }
