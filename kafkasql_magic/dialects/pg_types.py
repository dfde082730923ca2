"""Materialize's names for our types, as SHOW COLUMNS prints them.

Materialize names a column's type by its catalog name (PostgreSQL's `typname`: `int4`, not
`integer`); a list, map or record column shows the generic `list`, `map` or `record`. Two
metadata columns have types of their own there: a Kafka offset is `uint8` (unsigned) and a
partition `int4`, whatever type we hold them in.
"""

from __future__ import annotations

from typing import Iterable

from ..catalog import INLINE_ERROR, KEY, OFFSET, VALUE, SourceDef
from ..formats import protobuf_descriptors
from ..sql import ast

#: ast.Type name -> Materialize type name
TYPE_NAMES: dict[str, str] = {
    "BOOLEAN": "bool",
    "INT": "int4",
    "BIGINT": "int8",
    "DOUBLE": "float8",
    "DECIMAL": "numeric",
    "STRING": "text",
    "BYTES": "bytea",
    "DATE": "date",
    "TIME": "time",
    "TIMESTAMP": "timestamp",
    "ARRAY": "list",
    "MAP": "map",
    "STRUCT": "record",
}

#: column role (catalog.OFFSET, ...) -> the Materialize type that role always has
ROLE_TYPE_NAMES: dict[str, str] = {"OFFSET": "uint8", "PARTITION": "int4", "TIMESTAMP": "timestamp",
                                   "TOPIC": "text"}

#: roles whose columns are never NULL in Materialize (every record has them)
NOT_NULL_ROLES = frozenset({"OFFSET", "PARTITION", "TIMESTAMP", "TOPIC", "HEADERS"})

#: value formats whose columns Materialize declares NOT NULL: BYTES and TEXT (our KAFKA), JSON's
#: document, CSV's fields (a record without a value has no row); REGEX groups and Avro fields may be NULL
NOT_NULL_VALUE_FORMATS = frozenset({"KAFKA", "JSON_DOCUMENT", "DELIMITED"})

SHOW_COLUMNS_HEADER = ("name", "nullable", "type", "comment")


def materialize_type_name(type_: ast.Type, role: str | None = None) -> str:
    """The name Materialize gives a column of `type_` in `role` (None: a key or value column)."""
    if role in ROLE_TYPE_NAMES:
        return ROLE_TYPE_NAMES[role]
    try:
        return TYPE_NAMES[type_.name]
    except KeyError:
        raise ValueError(f"no Materialize name for type {type_.name}") from None


def never_null_values(source: SourceDef) -> frozenset[str]:
    """The value columns of a Materialize source that Materialize declares NOT NULL: those of a
    BYTES, TEXT, JSON or CSV value and a PROTOBUF message's fields but its message fields,
    unless the value's decoding errors are inline (then they are NULL beside the error) or
    ENVELOPE DEBEZIUM gives the row."""
    if source.dialect != "materialize" or source.envelope == "DEBEZIUM" or source.with_role(INLINE_ERROR):
        return frozenset()
    if source.value_format.name == "PROTOBUF_DESCRIPTORS":
        return frozenset(c.name for c in source.value_columns if protobuf_descriptors.never_null(c.type))
    if source.value_format.name not in NOT_NULL_VALUE_FORMATS:
        return frozenset()
    return frozenset(c.name for c in source.value_columns)


def show_columns_rows(columns: Iterable, source: SourceDef | None = None) -> list[dict]:
    """SHOW COLUMNS rows for catalog columns (anything with `name`, `type` and `role`) of `source`
    (None: a view's columns, each nullable)."""
    never_null = never_null_values(source) if source is not None else frozenset()
    return [
        {"name": c.name, "nullable": c.role not in NOT_NULL_ROLES and c.name not in never_null,
         "type": materialize_type_name(c.type, c.role), "comment": ""}
        for c in columns
    ]


def own_type(source: SourceDef, column) -> str | None:
    """Materialize's type for a source column we hold as another type, else None: `uint8` for an
    offset (held as BIGINT), `jsonb` for a JSON document (FORMAT JSON's `data`, held as its text)."""
    if column.role == OFFSET:
        return "uint8"
    spec = {KEY: source.key_format, VALUE: source.value_format}.get(column.role)
    if spec is not None and spec.name == "JSON_DOCUMENT":
        return "jsonb"
    return None
