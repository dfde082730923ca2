"""Materialize's CREATE SOURCE ... FROM KAFKA as a SourceDef: the same catalog, engine and
Kafka source as ksql; only the column naming and the INCLUDE metadata differ.

Column order follows Materialize: key columns, value columns, then INCLUDE metadata in the
order written. A record key is flattened into its fields; a scalar key is one column `key`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, NamedTuple

from .. import types
from ..catalog import (HEADER, HEADERS, INLINE_ERROR, KEY, OFFSET, PARTITION, TIMESTAMP, TOPIC, VALUE, Column,
                       SourceDef)
from ..errors import PlacedError, StatementError
from ..formats import FormatSpec
from ..formats.avro import RECORD_FIELDS
from ..sql import ast
from ..sql.split import excerpt
from . import debezium, limits
from .connections import KAFKA, REGISTRY
from .ksql_sources import check_formats
from .naming import MATERIALIZE

#: Materialize's headers type: a list of records (key text, value bytea).
HEADERS_TYPE = ast.Type("ARRAY", element=ast.Type("STRUCT", fields=(("key", types.STRING), ("value", types.BYTES))))

#: The column of ENVELOPE UPSERT (VALUE DECODING ERRORS = INLINE): record (description text).
INLINE_ERROR_TYPE = ast.Type("STRUCT", fields=(("description", types.STRING),))

#: INCLUDE item -> (catalog role, default column name, type).
INCLUDES: dict[str, tuple[str, str, ast.Type]] = {
    "HEADERS": (HEADERS, "headers", HEADERS_TYPE),
    "PARTITION": (PARTITION, "partition", types.INT),
    "OFFSET": (OFFSET, "offset", types.BIGINT),
    "TIMESTAMP": (TIMESTAMP, "timestamp", ast.Type("TIMESTAMP")),
    "TOPIC": (TOPIC, "topic", types.STRING),
}


class Lookups(NamedTuple):
    """The registry lookups a format may make: `avro(url, topic, role)`, the parsed latest Avro
    schema; `registered(url, topic, role)`, the latest schema's text and references."""

    avro: Callable
    registered: Callable | None = None


@dataclass(frozen=True)
class Decoding:
    spec: FormatSpec
    columns: list[tuple[str, ast.Type]]
    record: bool  # columns are fields of one record (flattened), not one anonymous value


def _scalar(format_name: str, key_name: str, value_name: str, t: ast.Type):
    def build(fmt: ast.SourceFormat, role: str, context: dict, lookups: Lookups) -> Decoding:
        return Decoding(FormatSpec(format_name, context), [(key_name if role == "key" else value_name, t)], False)
    return build


def _csv(fmt: ast.SourceFormat, role: str, context: dict, lookups: Lookups) -> Decoding:
    columns = [(f"column{i}", types.STRING) for i in range(1, (fmt.csv_columns or 0) + 1)]
    return Decoding(FormatSpec("DELIMITED", context), columns, True)


def _avro(fmt: ast.SourceFormat, role: str, context: dict, lookups: Lookups) -> Decoding:
    from ..formats import avro_types

    options = dict(context)
    if fmt.avro_schema is not None:  # checked by source_from_create
        options["AVRO_SCHEMA"] = fmt.avro_schema
        options["CONFLUENT_WIRE_FORMAT"] = fmt.confluent_wire_format
        schema = avro_types.parse_writer(fmt.avro_schema)[1]
    else:
        url = options["SCHEMA_REGISTRY_URL"] = _registry_url(fmt, context)
        schema = lookups.avro(url, context["KAFKA_TOPIC"], role)
    record = avro_types.is_record(schema)
    options[RECORD_FIELDS] = record
    columns = [(name.lower() if record else ("key" if role == "key" else "value"), t)
               for name, t in avro_types.columns(schema)]
    return Decoding(FormatSpec("AVRO", options), columns, record)


def _registry_url(fmt: ast.SourceFormat, context: dict) -> str:
    url = fmt.registry_url or context.get("SCHEMA_REGISTRY_URL")
    if not url:
        raise StatementError(f"{fmt.name} USING CONFLUENT SCHEMA REGISTRY needs a registry URL: give one in the "
                             "statement or connect(..., schema_registry_url=...)")
    limits.check_registry_url(url)
    return url


def _protobuf(fmt: ast.SourceFormat, role: str, context: dict, lookups: Lookups) -> Decoding:
    """The message's fields as columns (formats.protobuf_descriptors), its FileDescriptorSet kept
    in the format's options so that the workers decode with it and never ask the registry."""
    from ..formats import protobuf_descriptors as pd

    if fmt.protobuf_descriptors is not None:
        data, message, framed = pd.bytea_literal(fmt.protobuf_descriptors), fmt.protobuf_message, False
    elif fmt.protobuf_file is not None:
        data, message, framed = pd.descriptors_of_file(fmt.protobuf_file), fmt.protobuf_message, False
    else:
        registered = lookups.registered(_registry_url(fmt, context), context["KAFKA_TOPIC"], role)
        if registered.schema_type != "PROTOBUF":
            raise StatementError(f"Subject {registered.subject} holds a {registered.schema_type} schema, not PROTOBUF")
        data, message = pd.compiled_set(registered.text, tuple(zip(registered.reference_names,
                                                                     registered.references)), fmt.protobuf_message)
        framed = True
    columns = pd.columns(pd.message_of(data, message))
    spec = FormatSpec("PROTOBUF_DESCRIPTORS", {**context, pd.DESCRIPTORS: data.hex(), pd.MESSAGE: message,
                                               pd.FRAMED: framed})
    return Decoding(spec, columns, True)


def _regex(fmt: ast.SourceFormat, role: str, context: dict, lookups: Lookups) -> Decoding:
    from ..formats.regex import regex_fields

    spec = FormatSpec("REGEX", {**context, "REGEX": fmt.regex})
    return Decoding(spec, [(f.name, f.type) for f in regex_fields(fmt.regex)], True)


#: Materialize format name -> how it decodes and which columns it yields.
FORMATS: dict[str, Callable[[ast.SourceFormat, str, dict, Lookups], Decoding]] = {
    "TEXT": _scalar("KAFKA", "key", "text", types.STRING),
    "BYTES": _scalar("KAFKA", "key", "data", types.BYTES),
    "JSON": _scalar("JSON_DOCUMENT", "key", "data", types.STRING),
    "CSV": _csv,
    "AVRO": _avro,
    "PROTOBUF": _protobuf,
    "REGEX": _regex,
}


#: A source without a format (Materialize's current syntax, where tables decode) reads as BYTES.
BYTES_FORMAT = ast.SourceFormat("BYTES")


def _registry_format(fmt: ast.SourceFormat | None) -> bool:
    """A registry format alone (`FORMAT AVRO | PROTOBUF USING CONFLUENT SCHEMA REGISTRY`) decodes
    the key too, with the key subject's schema."""
    return fmt is not None and fmt.name in ("AVRO", "PROTOBUF") and fmt.registry_url is not None


def source_from_create(stmt: ast.CreateKafkaSource, *, registry_url: str | None, lookups: Lookups = Lookups(None),
                       text: str = "", connection=None, cell: str = "") -> SourceDef:
    """Validate a CREATE SOURCE. `lookups` supply the schemas of a USING CONFLUENT SCHEMA
    REGISTRY format; `connection(name, kind)` (the catalog's) the address of a CONNECTION the
    source or its registry names; `cell` the text the statement's positions count in (for a
    caret under a bad schema)."""
    limits.topic_name(stmt.topic)
    for fmt in (stmt.key_format, stmt.value_format, stmt.format):
        if fmt is not None and fmt.avro_schema is not None:
            _check_inline_schema(fmt, cell)
    properties = _connection_properties(stmt, connection)
    stmt = replace(stmt, **{role: _registry_of(getattr(stmt, role), connection)
                            for role in ("key_format", "value_format", "format")})
    includes = {i.what for i in stmt.includes}
    if stmt.format is not None and "KEY" in includes and not _registry_format(stmt.format):
        raise StatementError("INCLUDE KEY requires specifying KEY FORMAT .. VALUE FORMAT, got bare FORMAT")
    key_format = stmt.key_format or (stmt.format if _registry_format(stmt.format) else None)
    if stmt.envelope == "UPSERT" and key_format is None:
        raise StatementError("ENVELOPE UPSERT requires that KEY FORMAT be specified")
    if stmt.envelope == "DEBEZIUM":
        debezium.check_source(includes, key_format is not None)
    context = {"KAFKA_TOPIC": stmt.topic, "SCHEMA_REGISTRY_URL": registry_url}
    value_format = stmt.value_format or stmt.format or BYTES_FORMAT
    value = FORMATS[value_format.name](value_format, "value", context, lookups)
    columns = [Column(n, t, VALUE) for n, t in value.columns]
    if stmt.envelope == "DEBEZIUM":
        columns = _debezium_columns(value_format, value)
    key_spec = FormatSpec("NONE")
    if key_format is not None and ("KEY" in includes or stmt.envelope == "UPSERT"):
        key = FORMATS[key_format.name](key_format, "key", context, lookups)
        alias = next((i.alias for i in stmt.includes if i.what == "KEY"), None)
        key_spec, key_columns = _key_columns(key, alias)
        columns[:0] = key_columns
    if stmt.value_errors_column is not None:  # after the key columns, as Materialize places it
        columns.insert(sum(c.role == KEY for c in columns),
                       Column(stmt.value_errors_column, INLINE_ERROR_TYPE, INLINE_ERROR))
    for item in stmt.includes:
        if item.what == "KEY":
            continue
        if item.what == "HEADER":
            columns.append(Column(item.alias, types.BYTES if item.as_bytes else types.STRING, HEADER, item.header_key))
        else:
            role, default, t = INCLUDES[item.what]
            columns.append(Column(item.alias or default, t, role))
    columns = _renamed(columns, stmt.columns)
    MATERIALIZE.check_unique((c.name for c in columns), "" if stmt.columns else _rename_hint(columns))
    kind = "TABLE" if stmt.envelope in ("UPSERT", "DEBEZIUM") else "STREAM"
    check_formats(kind, key_spec, value.spec, columns)
    return SourceDef(kind=kind, name=stmt.name, topic=stmt.topic,
                     key_format=key_spec, value_format=value.spec, columns=tuple(columns), statement=text,
                     properties=properties, envelope=stmt.envelope,
                     dialect="materialize")


def _check_inline_schema(fmt: ast.SourceFormat, cell: str) -> None:
    """`AVRO USING SCHEMA '...'` is an Avro schema, or the statement is refused there."""
    try:
        limits.check_avro_schema(fmt.avro_schema)
    except StatementError as exc:
        shown = excerpt(cell, fmt.line, fmt.column) if cell and fmt.line else ""
        raise PlacedError(str(exc), fmt.line, fmt.column, shown) from None


def _connection_properties(stmt: ast.CreateKafkaSource, connection) -> dict:
    """BROKER (where the source reads) and the connections it depends on, by name."""
    if stmt.connection is None:
        properties = {"BROKER": stmt.broker} if stmt.broker else {}
    else:
        properties = {"BROKER": connection(stmt.connection, KAFKA).address, "CONNECTION": stmt.connection}
    registry = next((f.registry_connection for f in (stmt.key_format, stmt.value_format, stmt.format)
                     if f is not None and f.registry_connection), None)
    if registry is not None:
        properties["REGISTRY CONNECTION"] = registry
    return properties


def _debezium_columns(fmt: ast.SourceFormat, value: Decoding) -> list[Column]:
    """The fields of the value's `after` record (Avro change events); JSON change events give
    their `after` row as one jsonb column `data`, as FORMAT JSON gives a document."""
    if fmt.name == "JSON":
        return [Column(n, t, VALUE) for n, t in value.columns]
    if fmt.name != "AVRO":
        raise StatementError(debezium.FORMAT_MESSAGE)
    after = debezium.after_fields(value.columns)
    if after.name != "STRUCT":
        raise StatementError(f"ENVELOPE DEBEZIUM: the value's 'after' field must be a record, found {after.name}")
    return [Column(name.lower(), t, VALUE, field=name) for name, t in after.fields]


def _registry_of(fmt: ast.SourceFormat | None, connection) -> ast.SourceFormat | None:
    """`fmt` with the URL of the registry connection it names."""
    if fmt is None or fmt.registry_connection is None:
        return fmt
    return replace(fmt, registry_url=connection(fmt.registry_connection, REGISTRY).address)


def _key_columns(key: Decoding, alias: str | None) -> tuple[FormatSpec, list[Column]]:
    """The key's format and columns. A record key is flattened into its fields, unless it is
    named (INCLUDE KEY AS name): then a one-field record gives that field's value under `name`
    and a record of several fields stays one record column (Materialize's rule)."""
    if alias is None:
        return key.spec, [Column(n, t, KEY) for n, t in key.columns]
    if not key.record:
        return key.spec, [Column(alias, key.columns[0][1], KEY)]
    if len(key.columns) == 1:
        ((field, t),) = key.columns
        return key.spec, [Column(alias, t, KEY, field=field)]
    whole = FormatSpec(key.spec.name, {**key.spec.options, RECORD_FIELDS: False})
    return whole, [Column(alias, ast.Type("STRUCT", fields=tuple(key.columns)), KEY)]


def _renamed(columns: list[Column], names: tuple[str, ...]) -> list[Column]:
    """The column list renames the first columns, in order; the others keep their names
    (Materialize's `maybe_rename_columns`, with its message when the list is longer)."""
    if len(names) > len(columns):
        def plural(n: int) -> str:
            return f"{n} column{'' if n == 1 else 's'}"
        raise StatementError(f"source definition names {plural(len(names))}, but source has {plural(len(columns))}")
    renamed = [Column(n, c.type, c.role, c.header_key, c.format_field) for n, c in zip(names, columns)]
    return renamed + columns[len(names):]


def _rename_hint(columns: list[Column]) -> str:
    return (" (rename one: INCLUDE KEY AS <name>, INCLUDE ... AS <name>, or give the source an explicit "
            f"column list such as ({', '.join('key_' + x.name if x.role == KEY else x.name for x in columns)}))")
