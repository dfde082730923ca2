"""ksql's CREATE STREAM / CREATE TABLE: validate a statement into a SourceDef, with ksqlDB's messages.

Pure: no Kafka, no Spark. The session checks the topic and registers the result.
"""

from __future__ import annotations

import re

from .. import formats, types
from ..catalog import HEADER, HEADERS, KEY, VALUE, Column, SourceDef
from ..engine.columns import RESERVED_COLUMN_NAMES
from ..errors import StatementError
from ..formats import Field, FormatSpec
from ..sql import ast
from . import limits
from .naming import KSQL

#: WITH-clause properties a CREATE STREAM/TABLE accepts.
KNOWN_PROPERTIES = frozenset({
    "KAFKA_TOPIC", "KEY_FORMAT", "VALUE_FORMAT", "FORMAT", "PARTITIONS", "REPLICAS",
    "KEY_DELIMITER", "VALUE_DELIMITER", "WRAP_SINGLE_VALUE", "TIMESTAMP", "TIMESTAMP_FORMAT",
    "KEY_SCHEMA_ID", "VALUE_SCHEMA_ID", "KEY_SCHEMA_FULL_NAME", "VALUE_SCHEMA_FULL_NAME",
    "VALUE_AVRO_SCHEMA_FULL_NAME", "WINDOW_TYPE", "WINDOW_SIZE", "RETENTION_MS", "SOURCE",
})

DEFAULT_KEY_FORMAT = "ksql.persistence.default.format.key"
DEFAULT_VALUE_FORMAT = "ksql.persistence.default.format.value"
WRAP_SINGLE_VALUES = "ksql.persistence.wrap.single.values"
#: Formats that can write a single value column either wrapped in a record or bare.
WRAPPABLE = frozenset({"JSON", "JSON_SR", "AVRO", "PROTOBUF_NOSR"})
#: Formats whose single value column is always wrapped in a record (ksqlDB: WRAP_SINGLES only).
ALWAYS_WRAPPED = frozenset({"PROTOBUF"})
#: Not a ksqlDB property: the session passes its registry URL to the formats this way.
SCHEMA_REGISTRY_URL = "schema.registry.url"

#: Column role in the AST -> role in the catalog.
ROLES = {None: VALUE, "KEY": KEY, "PRIMARY_KEY": KEY, "HEADERS": HEADERS, "HEADER": HEADER}


#: Formats whose columns can come from the Schema Registry when none are declared.
INFERABLE = frozenset({"AVRO", "JSON_SR", "PROTOBUF"})


def source_from_create(stmt: ast.CreateSource, settings: dict[str, str], text: str = "",
                       infer=None) -> SourceDef:
    """Validate a CREATE STREAM/TABLE. `infer(topic, key_format, value_format, key_schema_id,
    value_schema_id)` (the registry lookup) supplies the columns of an AVRO/JSON_SR key or value
    that the statement does not declare, as ksqlDB's schema inference does."""
    props = _properties(stmt)
    _check_window(props)
    limits.check_properties(props)
    for c in stmt.columns:
        limits.check_type(c.type)
    columns = tuple(_column(stmt.kind, c) for c in stmt.columns)
    _check_headers(stmt.columns)
    topic = props.get("KAFKA_TOPIC")
    if topic is None:
        raise StatementError('Missing required property "KAFKA_TOPIC" which has no default value.')
    key_spec, value_spec = _formats(props, settings)
    _check_schema_ids(columns, key_spec, value_spec, props)
    if key_spec.name not in INFERABLE:  # no registry can supply the key: say so before asking it
        _require_table_key(stmt.kind, columns)
    columns, value_spec = _with_inferred(columns, key_spec, value_spec, props, infer)
    value_spec = with_default_wrapping(value_spec, sum(c.role == VALUE for c in columns), settings)
    KSQL.check_unique(c.name for c in columns)
    if not columns:
        raise StatementError("No columns supplied.")
    _require_table_key(stmt.kind, columns)
    if props.get("WINDOW_TYPE") is not None and not any(c.role == KEY for c in columns):
        raise StatementError("Windowed sources require a key column.")
    check_key_types((c.name, c.type) for c in columns if c.role == KEY)
    check_formats(stmt.kind, key_spec, value_spec, columns)
    if stmt.kind == "TABLE" and key_spec.name == "NONE":
        raise StatementError("Tables require a key format other than 'NONE'.")
    return SourceDef(
        kind=stmt.kind, name=stmt.name, topic=str(topic), key_format=key_spec,
        value_format=value_spec, columns=columns, statement=text, properties=props,
    )


def with_default_wrapping(spec: FormatSpec, value_count: int, settings: dict) -> FormatSpec:
    """A value format without WRAP_SINGLE_VALUE takes `ksql.persistence.wrap.single.values` when
    the value is one column and the format can wrap it either way, as ksqlDB's
    `SerdeFeaturesFactory` does; a statement's own WITH wins, and nothing comes from another source."""
    default = settings.get(WRAP_SINGLE_VALUES)
    if default is None or "WRAP_SINGLE_VALUE" in spec.options or value_count != 1 or spec.name not in WRAPPABLE:
        return spec
    return FormatSpec(spec.name, {**spec.options, "WRAP_SINGLE_VALUE": str(default).lower()})


def check_value_wrapping(spec: FormatSpec) -> None:
    """An explicit WRAP_SINGLE_VALUE=false needs a format that can write a bare value, as
    ksqlDB's `SerdeFeaturesFactory` checks (PROTOBUF cannot; PROTOBUF_NOSR can)."""
    if spec.name in ALWAYS_WRAPPED and str(spec.options.get("WRAP_SINGLE_VALUE", "")).lower() == "false":
        raise StatementError(f"Format '{spec.name}' does not support 'WRAP_SINGLE_VALUE' set to 'false'.")


def check_key_types(keys) -> None:
    """ksqlDB refuses a MAP anywhere in a key column's type (its serialization is not stable, so
    equal keys could differ in bytes), before any format looks at the key: `keys` are
    (name, type) pairs."""
    for name, t in keys:
        if _holds_map(t):
            raise StatementError(
                "Map keys, including types that contain maps, are not supported as they may lead to unexpected "
                f"behavior due to inconsistent serialization. Key column name: `{name}`. Column type: "
                f"{types.display(t)}. See https://github.com/confluentinc/ksql/issues/6621 for more.")


def _holds_map(t: ast.Type) -> bool:
    inner = [t.element, t.key, t.value, *(ft for _, ft in t.fields)]
    return t.name == "MAP" or any(_holds_map(i) for i in inner if i is not None)


def check_formats(kind: str, key_spec: FormatSpec, value_spec: FormatSpec, columns) -> None:
    """Each format accepts its columns (every dialect's sources go through this)."""
    check_value_wrapping(value_spec)
    for spec, role, roles in ((key_spec, "key", (KEY,)), (value_spec, "value", (VALUE,))):
        fields = [Field(c.name, c.type) for c in columns if c.role in roles]
        fmt = formats.lookup(spec.name)
        fmt.validate(fields, role, kind)
        if fields and hasattr(fmt, "check_spec"):  # e.g. AVRO needs a registry
            fmt.check_spec(spec)


def _check_schema_ids(columns, key_spec, value_spec, props) -> None:
    """A KEY_SCHEMA_ID or VALUE_SCHEMA_ID needs a format that infers columns and no columns of
    its part declared, as ksqlDB's schema injector checks them before it asks the registry."""
    for part, role, spec in (("KEY", KEY, key_spec), ("VALUE", VALUE, value_spec)):
        if props.get(f"{part}_SCHEMA_ID") is None:
            continue
        if spec.name not in INFERABLE:
            raise StatementError(f"{part}_FORMAT should support schema inference when {part}_SCHEMA_ID is provided. "
                                 f"Current format is {spec.name}.")
        if any(c.role == role for c in columns):
            raise StatementError(f"Table elements and {part}_SCHEMA_ID cannot both exist for create statement.")


def _with_inferred(columns, key_spec, value_spec, props, infer):
    """Declared columns plus those the registry supplies for undeclared AVRO/JSON_SR parts."""
    need_key = key_spec.name in INFERABLE and not any(c.role == KEY for c in columns)
    need_value = value_spec.name in INFERABLE and not any(c.role == VALUE for c in columns)
    if not (need_key or need_value) or infer is None:
        return columns, value_spec
    inferred = infer(props["KAFKA_TOPIC"], key_spec.name if need_key else "NONE",
                     value_spec.name if need_value else "NONE",
                     props.get("KEY_SCHEMA_ID"), props.get("VALUE_SCHEMA_ID"))
    keys = tuple(Column(n, t, KEY) for n, t in inferred.key_columns) if need_key else ()
    values = tuple(Column(n, t, VALUE) for n, t in inferred.value_columns) if need_value else ()
    if need_value and not inferred.value_wrapped:
        value_spec = FormatSpec(value_spec.name, {**value_spec.options, "WRAP_SINGLE_VALUE": "false"})
    return keys + columns + values, value_spec


def _properties(stmt: ast.CreateSource) -> dict:
    props = {p.name: p.value.value for p in stmt.properties}
    unknown = sorted(set(props) - KNOWN_PROPERTIES)
    if unknown:
        raise StatementError(f"Invalid config variable(s) in the WITH clause: {','.join(unknown)}")
    return props


#: Java's TimeUnit names, which ksqlDB's WINDOW_SIZE durations take (with or without the final S).
DURATION_UNITS = ("NANOSECONDS", "MICROSECONDS", "MILLISECONDS", "SECONDS", "MINUTES", "HOURS", "DAYS")


def _require_table_key(kind: str, columns) -> None:
    if kind == "TABLE" and not any(c.role == KEY for c in columns):
        raise StatementError("Tables require a PRIMARY KEY. Please define the PRIMARY KEY.")


def _check_window(props: dict) -> None:
    """WINDOW_TYPE and WINDOW_SIZE as ksqlDB's CreateSourceProperties checks them."""
    kind, size = props.get("WINDOW_TYPE"), props.get("WINDOW_SIZE")
    if size is not None:
        parts = str(size).split()
        unit = parts[-1].upper() if len(parts) == 2 else ""
        if len(parts) == 2 and (unit if unit.endswith("S") else unit + "S") not in DURATION_UNITS:
            raise StatementError(f"Configuration WINDOW_SIZE is invalid: Invalid duration: '{size}'. Unknown time "
                                 f"unit: '{unit}'\nSupported time units are: {', '.join(DURATION_UNITS)}")
        if len(parts) == 2 and not re.fullmatch(r"[+-]?\d+", parts[0]):
            raise StatementError(f"Configuration WINDOW_SIZE is invalid: Invalid duration: '{size}'. "
                                 f"Not numeric: '{parts[0]}'")
    sized = kind is not None and str(kind).upper() != "SESSION"
    if sized and size is None:
        raise StatementError(f"{str(kind).upper()} windows require 'WINDOW_SIZE' to be provided in the WITH clause. "
                             "For example: 'WINDOW_SIZE'='10 SECONDS'")
    if not sized and size is not None:
        raise StatementError("'WINDOW_SIZE' should not be set for SESSION windows.")


def _column(kind: str, c: ast.ColumnDef) -> Column:
    if c.name.upper() in RESERVED_COLUMN_NAMES:
        raise StatementError(
            f"'{c.name.upper()}' is a reserved column name. You cannot use it as a name for a column."
        )
    at = f"Line: {c.line}, Col: {c.column}: " if c.line else ""  # where ksqlDB's parser says it is
    if kind == "STREAM" and c.role == "PRIMARY_KEY":
        raise StatementError(f"{at}Column `{c.name}` is a 'PRIMARY KEY' column: please use 'KEY' for streams.")
    if kind == "TABLE" and c.role == "KEY":
        raise StatementError(f"{at}Column `{c.name}` is a 'KEY' column: please use 'PRIMARY KEY' for tables.")
    return Column(c.name, c.type, ROLES[c.role], c.header_key)


def _check_headers(defs: tuple[ast.ColumnDef, ...]) -> None:
    """KLIP-57 rules: HEADERS is ARRAY<STRUCT<KEY STRING, VALUE BYTES>>, HEADER('k') is BYTES,
    and a HEADERS column excludes every other header column."""
    has_headers = False
    header_keys: set[str] = set()
    for c in defs:
        if c.role == "HEADERS":
            if c.type != types.HEADERS_TYPE:
                raise StatementError(
                    f"Invalid type for HEADERS column: expected {types.display(types.HEADERS_TYPE)}, "
                    f"got {types.display(c.type)}"
                )
            if has_headers or header_keys:
                raise StatementError("Schema already contains a HEADERS column.")
            has_headers = True
        elif c.role == "HEADER":
            if c.type != types.BYTES:
                raise StatementError(
                    f"Invalid type for HEADER('{c.header_key}') column: expected BYTES, "
                    f"got {types.display(c.type)}"
                )
            if has_headers:
                raise StatementError("Schema already contains a HEADERS column.")
            if c.header_key in header_keys:
                raise StatementError(f"Schema already contains a HEADER('{c.header_key}') column.")
            header_keys.add(c.header_key)


def _formats(props: dict, settings: dict[str, str]) -> tuple[FormatSpec, FormatSpec]:
    both = props.get("FORMAT")
    for part in ("KEY_FORMAT", "VALUE_FORMAT"):
        if both is not None and part in props:
            raise StatementError(
                f"Cannot supply both '{part}' and 'FORMAT' properties, as 'FORMAT' sets both key and "
                "value formats. Either use just 'FORMAT', or use 'KEY_FORMAT' and 'VALUE_FORMAT'."
            )
    key = both or props.get("KEY_FORMAT") or settings.get(DEFAULT_KEY_FORMAT) or "KAFKA"
    value = both or props.get("VALUE_FORMAT") or settings.get(DEFAULT_VALUE_FORMAT)
    if value is None:
        raise StatementError(
            "Statement is missing the 'VALUE_FORMAT' property from the WITH clause. Either provide "
            "one or set a default via the 'ksql.persistence.default.format.value' config."
        )
    for name in (key, value):
        formats.lookup(str(name))
    shared = {"KAFKA_TOPIC": props.get("KAFKA_TOPIC"), "SCHEMA_REGISTRY_URL": settings.get(SCHEMA_REGISTRY_URL)}
    key_opts = {**shared, **{k: v for k, v in props.items() if k.startswith("KEY_")}}
    value_opts = {**shared, **{k: v for k, v in props.items() if k.startswith("VALUE_") or k == "WRAP_SINGLE_VALUE"}}
    return FormatSpec(str(key).upper(), key_opts), FormatSpec(str(value).upper(), value_opts)
