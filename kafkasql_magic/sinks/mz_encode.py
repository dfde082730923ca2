"""Materialize sink formats: a struct column -> record bytes as Materialize writes them.

JSON is an object of the columns (also for one column) with Materialize's conversions at any
depth (timestamps as text of fractional epoch milliseconds, numeric as text, bytea as an array
of byte values, jsonb as its JSON value, other non-JSON types as their text); TEXT one column's
text; BYTES one bytea or text column's bytes; AVRO a Confluent-framed record named `row` (a
key, a Debezium before/after) or `envelope` (a value), registered under `<topic>-key` /
`<topic>-value` before the sink starts, so executors only frame bytes with a known schema id.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..dialects.materialize_sinks import SinkFormat
from ..engine.functions.postgres_spark import pg_text
from ..errors import StatementError
from ..formats import Field
from ..sql import ast

#: Avro record names Materialize gives a sink's schemas.
KEY_RECORD, VALUE_RECORD = "row", "envelope"
_JSON_OPTIONS = {"ignoreNullFields": "false"}


def _fractional_millis(c: Column) -> Column:
    """'1720032185312.123': epoch milliseconds with microsecond precision, as text."""
    micros = F.unix_micros(c)
    return F.concat(F.floor(micros / 1000).cast("string"), F.lit("."),
                    F.lpad(F.pmod(micros, F.lit(1000)).cast("string"), 3, "0"))


def _byte_numbers(c: Column) -> Column:
    """bytea as Materialize's JSON writes it: an array of the bytes' values (`[116,53]`)."""
    numbers = F.transform(F.sequence(F.lit(1), F.octet_length(c)),
                          lambda i: F.conv(F.hex(F.substring(c, i, 1)), 16, 10).cast("int"))
    return F.when(F.octet_length(c) == 0, F.array().cast("array<int>")).otherwise(numbers)


#: ksql type -> how Materialize's JSON writes it, for types JSON has no literal for.
JSON_CONVERSIONS: dict[str, Callable[[Column, ast.Type], Column]] = {
    "TIMESTAMP": lambda c, t: _fractional_millis(c),
    "DECIMAL": lambda c, t: c.cast("string"),
    "DATE": pg_text,
    "TIME": pg_text,
    "BYTES": lambda c, t: _byte_numbers(c),
    "STRUCT": lambda c, t: F.when(c.isNotNull(), F.struct(*[json_value(c[n], ft).alias(n) for n, ft in t.fields])),
    "ARRAY": lambda c, t: F.transform(c, lambda e: json_value(e, t.element)),
    "MAP": lambda c, t: F.transform_values(c, lambda k, v: json_value(v, t.value)),
}

#: Materialize type (Field.sql_type) -> how its JSON writes it: a jsonb column is its JSON value.
SQL_TYPE_CONVERSIONS: dict[str, Callable[[Column], Column]] = {"jsonb": F.try_parse_json}


def json_value(c: Column, t: ast.Type) -> Column:
    """A value of type `t` as Materialize's JSON writes it, at any depth (a bytea in a list too)."""
    convert = JSON_CONVERSIONS.get(t.name)
    return convert(c, t) if convert else c


def json_ready(row: Column, fields: Sequence[Field]) -> Column:
    """`row` (a struct, possibly NULL) with each field converted as Materialize's JSON writes it."""
    converted = []
    for f in fields:
        convert = SQL_TYPE_CONVERSIONS.get(f.sql_type)
        value = convert(row[f.name]) if convert else json_value(row[f.name], f.type)
        converted.append(value.alias(f.name))
    return F.when(row.isNotNull(), F.struct(*converted))


def to_json_bytes(obj: Column) -> Column:
    return F.encode(F.to_json(obj, _JSON_OPTIONS), "UTF-8")


def single(row: Column, fields: Sequence[Field], fmt: SinkFormat) -> Column:
    """TEXT or BYTES: the one column's text or bytes (NULL stays NULL)."""
    (f,) = fields
    value = row[f.name]
    if fmt.name == "TEXT":
        return F.encode(pg_text(value, f.type), "UTF-8")
    return value if f.type.name == "BYTES" else F.encode(value, "UTF-8")


# ---------------------------------------------------------------- AVRO
#: Materialize type (Field.sql_type) -> its Avro type in a sink's schema (a uint8 is an 8-byte
#: big-endian `fixed`; a named type, so written whole once per schema and by name after).
AVRO_SQL_TYPES = {"uint8": {"type": "fixed", "size": 8, "name": "com.materialize.sink.uint8"}}


def row_schema(fields: Sequence[Field], name: str, doc: str | None = None, field_docs: Mapping[str, str] = {},
               null_defaults: bool = False) -> dict:
    """The record of `fields` named `name` (Materialize's `row`, `envelope` or an AVRO ... FULLNAME),
    with its `doc` and its fields' docs (by column); with `null_defaults` (NULL DEFAULTS) each
    nullable field defaults to null."""
    from ..formats.avro_types import from_ksql

    record = from_ksql(ast.Type("STRUCT", fields=tuple((f.name, f.type) for f in fields)), name)
    defined: set[str] = set()
    for f, field in zip(fields, record["fields"]):
        own = AVRO_SQL_TYPES.get(f.sql_type)
        if own is not None:
            field["type"] = ["null", own["name"] if own["name"] in defined else dict(own)]
            defined.add(own["name"])
        if f.name in field_docs:
            field["doc"] = field_docs[f.name]
    named: dict[str, str] = {}
    for field in record["fields"]:
        field["type"] = _record_names(field["type"], named)
    _null_defaults(record, null_defaults)
    if doc is not None:
        record["doc"] = doc
    return record


#: The namespace of the records Materialize generates for record columns.
RECORD_NAMESPACE = "com.materialize.sink"


def _record_names(schema, seen: dict[str, str]):
    """`schema` with each nested record named as Materialize names it: `record0`, `record1`, ...
    in the order they are met (a record before its fields), in `com.materialize.sink`; a record of
    the same fields again is that name (`seen`: the fields' JSON -> the full name)."""
    if isinstance(schema, list):
        return [_record_names(branch, seen) for branch in schema]
    if not isinstance(schema, dict):
        return schema
    if schema.get("type") == "record":
        shape = json.dumps(_unnamed(schema["fields"]), sort_keys=True)
        if shape in seen:
            return seen[shape]
        name = f"record{len(seen)}"
        seen[shape] = f"{RECORD_NAMESPACE}.{name}"
        fields = [{**f, "type": _record_names(f["type"], seen)} for f in schema["fields"]]
        return {**schema, "name": name, "namespace": RECORD_NAMESPACE, "fields": fields}
    return {**schema, **{k: _record_names(schema[k], seen) for k in ("items", "values") if k in schema}}


def _unnamed(schema):
    """`schema` without its records' names: what makes two record types the same."""
    if isinstance(schema, list):
        return [_unnamed(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    record = schema.get("type") == "record"
    return {k: _unnamed(v) for k, v in schema.items() if not (record and k in ("name", "namespace"))}


def _null_defaults(schema, given: bool) -> None:
    """Every nullable field of `schema`'s records, nested ones too, defaults to null when `given`
    (NULL DEFAULTS) and has no default otherwise, as Materialize generates them."""
    if isinstance(schema, list):
        for branch in schema:
            _null_defaults(branch, given)
    elif isinstance(schema, dict):
        for field in schema.get("fields", ()):
            field.pop("default", None)
            if given and isinstance(field["type"], list) and field["type"][0] == "null":
                field["default"] = None
            _null_defaults(field["type"], given)
        for inner in ("items", "values"):
            _null_defaults(schema.get(inner), given)


def _avro_field(value, f: Field):
    """A field's value as fastavro writes it for `row_schema` (a uint8 as its 8 bytes)."""
    from ..formats.avro import avro_value

    if f.sql_type == "uint8" and value is not None:
        return int(value).to_bytes(8, "big")
    return avro_value(from_arrow(value, f.type), f.type)


def debezium_schema(fields: Sequence[Field], name: str = VALUE_RECORD, doc: str | None = None,
                    field_docs: Mapping[str, str] = {}, null_defaults: bool = False) -> dict:
    """Debezium's record `name` of `before` and `after`, each a nullable `row` of `fields`
    (the docs and NULL DEFAULTS as `row_schema` takes them). As Materialize writes it, the doc
    is the row's, not the envelope's, and `before` and `after` default to null only under
    NULL DEFAULTS."""
    row = row_schema(fields, KEY_RECORD, doc, field_docs=field_docs, null_defaults=null_defaults)
    default = {"default": None} if null_defaults else {}
    return {"type": "record", "name": name, "fields": [
        {"name": "before", "type": ["null", row], **default},
        {"name": "after", "type": ["null", KEY_RECORD], **default}]}


@dataclass(frozen=True)
class AvroWriter:
    """A registered Avro schema and how to shape a row for it ("row", or "debezium": a struct
    of before/after rows)."""

    schema_id: int
    text: str
    shape: str
    fields: tuple[Field, ...]

    def encode(self, value: Column) -> Column:
        import pyarrow as pa

        schema_id, text, shape, fields = self.schema_id, self.text, self.shape, self.fields

        def frame(rows):
            return pa.array(avro_payloads(rows.to_pylist(), schema_id, text, shape, fields), pa.binary())

        frame.__annotations__ = {"rows": pa.Array, "return": pa.Array}
        return F.arrow_udf(frame, T.BinaryType())(value)


def from_arrow(value, t: ast.Type):
    """A value as Arrow's to_pylist gives it (a map as (key, value) pairs), as plain Python."""
    if value is None:
        return None
    if t.name == "MAP":
        pairs = value.items() if isinstance(value, dict) else value
        return {k: from_arrow(v, t.value) for k, v in pairs}
    if t.name == "ARRAY":
        return [from_arrow(v, t.element) for v in value]
    if t.name == "STRUCT":
        return {n: from_arrow(value.get(n), ft) for n, ft in t.fields}
    return value


def avro_payloads(rows: list, schema_id: int, text: str, shape: str, fields) -> list:
    """Rows (dicts or None) -> Confluent-framed Avro payloads; runs on the executors."""
    import io
    import struct

    import fastavro

    parsed = fastavro.parse_schema(json.loads(text))
    header = struct.pack(">bI", 0, schema_id)

    def record(row):
        return None if row is None else {f.name: _avro_field(row[f.name], f) for f in fields}

    out = []
    for row in rows:
        if row is None:
            out.append(None)
            continue
        datum = ({"before": record(row["before"]), "after": record(row["after"])} if shape == "debezium"
                 else record(row))
        buffer = io.BytesIO()
        fastavro.schemaless_writer(buffer, parsed, datum)
        out.append(header + buffer.getvalue())
    return out


def _subject_level(client, subject: str) -> str | None:
    """The compatibility level set on `subject` itself, None when it has none (40408) or the
    subject is new (40401)."""
    from confluent_kafka.schema_registry.error import SchemaRegistryError

    try:
        return client.get_compatibility(subject)
    except SchemaRegistryError as exc:
        if exc.error_code in (40401, 40408):
            return None
        raise


def register_avro(url: str, topic: str, role: str, schema: dict, shape: str, fields,
                  compatibility: str | None = None) -> AvroWriter:
    """Register `schema` under `<topic>-<role>`; the registry's refusal is a user error. With
    `compatibility` (KEY / VALUE COMPATIBILITY LEVEL) the subject gets that level first, as
    Materialize sets it: only when the subject has no level of its own."""
    from confluent_kafka.schema_registry import Schema

    from ..formats import schema_registry as sr

    text = json.dumps(schema)
    subject = sr.subject(topic, role)
    try:
        client = sr.client(url)
        if compatibility is not None and _subject_level(client, subject) is None:
            client.set_compatibility(subject, compatibility)
        schema_id = client.register_schema(subject, Schema(text, "AVRO"))
    except Exception as exc:  # noqa: BLE001 - incompatible schema, registry down: a user error
        reason = getattr(exc, "error_message", None) or str(exc)
        raise StatementError(f"Could not register schema for subject {subject}: {reason}") from None
    return AvroWriter(int(getattr(schema_id, "schema_id", schema_id)), text, shape, tuple(fields))
