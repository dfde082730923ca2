"""PROTOBUF (Confluent-framed, schema from the registry) and PROTOBUF_NOSR (bare messages).

PROTOBUF framing: magic byte 0, the 4-byte schema id, then the message indexes (a zigzag
varint count and that many zigzag varint indexes; a single 0 byte for the first message), then
the message. Decoding is one Arrow UDF per column set, like AVRO: per batch each distinct
(schema id, indexes) is compiled once per Python worker (`protobuf_schema`), each message is
parsed with its generated class and read into the declared columns (`protobuf_types.reader`).
It never raises for bad bytes: a wrong header, an unknown id, indexes the schema does not have
or bytes that do not parse give NULL columns and an error for the processing log.

PROTOBUF_NOSR (ksqlDB 0.29+): no framing, no registry; the message is the one ksqlDB derives
from the declared columns (`ConnectDefault1`).

A single anonymous column (a key, or a value with WRAP_SINGLE_VALUE=false) is the message's one
field, or the whole message when the column is a STRUCT and the message is not a wrapper of one
field of that column's name.
"""

from __future__ import annotations

import threading
from typing import Sequence

from pyspark.sql import functions as F
from pyspark.sql import types as T

from .. import redact, types
from ..errors import StatementError
from ..sql import ast
from . import protobuf_schema, protobuf_types
from . import schema_registry as sr
from .avro import _anonymous, _barrier, _declared, exchange_type
from .base import Decoded, Format, deserialization_error

ERROR_FIELD = "__kafkasql_protobuf_error__"


class ProtobufFormat(Format):
    name = "PROTOBUF"
    framed = True

    def check_spec(self, spec) -> None:
        """CREATE-time check (needs the spec, which `validate` does not get)."""
        if self.framed:
            sr.registry_url(spec, self.name)

    def validate(self, fields, role, kind):
        super().validate(fields, role, kind)
        try:  # the declared columns must make a message (NOSR reads, every INSERT writes one)
            protobuf_types.proto_text([(f.name, f.type) for f in fields])
        except protobuf_types.ProtobufTypeError as exc:
            raise StatementError(f"The '{self.name}' format cannot hold the {role} columns: {exc}") from None

    def decode(self, raw, fields, spec, role):
        if not fields:
            return Decoded([])
        url = sr.registry_url(spec, self.name) if self.framed else None
        layout = Layout(tuple((f.name, f.type) for f in fields), _anonymous(fields, spec, role), url)
        spark_type = T.StructType([T.StructField(f.name, exchange_type(types.to_spark(f.type))) for f in fields]
                                  + [T.StructField(ERROR_FIELD, T.StringType())])

        def decode_protobuf(values):
            return decode_batch(values, layout)

        import pyarrow as pa

        decode_protobuf.__annotations__ = {"values": pa.Array, "return": pa.Array}
        decoded = F.arrow_udf(decode_protobuf, spark_type)(raw)
        columns = [_declared(decoded[f.name], f) for f in fields]
        reason = decoded[ERROR_FIELD]
        return Decoded(columns, _barrier(F.when(reason.isNotNull(), deserialization_error(role, reason))))

    def encode(self, values, fields, spec, role):
        if not fields:
            return None
        anonymous = _anonymous(fields, spec, role)
        if anonymous and values[0] is None:
            return None
        pairs = [(f.name, f.type) for f in fields]
        if anonymous and fields[0].type.name == "STRUCT":
            pairs, values = list(fields[0].type.fields), [
                _field_of(values[0] or {}, n) for n, _ in fields[0].type.fields]
        named = {n: v for (n, _), v in zip(pairs, values)}
        if self.framed:
            existing = _with_registered_schema(spec, self.name, role, named)
            if existing is not None:
                return existing
        msg = compiled(protobuf_types.proto_text(pairs)).message_class([0])()
        try:
            protobuf_types.fill(msg, named)
        except (protobuf_types.ProtobufTypeError, TypeError, ValueError) as exc:
            raise StatementError(f"Failed to serialize {role} as {self.name}: {exc}") from None
        if not self.framed:
            return msg.SerializeToString()
        return _serialize_framed(spec, self.name, role, msg)


class ProtobufNosrFormat(ProtobufFormat):
    name = "PROTOBUF_NOSR"
    framed = False


def _field_of(value: dict, name: str):
    by_lower = {str(k).lower(): v for k, v in value.items()}
    return value.get(name, by_lower.get(name.lower()))


def _with_registered_schema(spec, format_name: str, role: str, named: dict) -> bytes | None:
    """The record framed with the subject's latest schema (its first message) when the values
    fit it, as ksqlDB writes with the registered schema; None when there is none or they do not."""
    url, topic = sr.registry_url(spec, format_name), sr.topic_of(spec, format_name)
    try:
        latest = sr.client(url).get_latest_version(sr.subject(topic, role))
        if (latest.schema.schema_type or "AVRO").upper() != "PROTOBUF":
            return None
        schema = compiled(latest.schema.schema_str, _named_references(sr.client(url), latest.schema.references or []))
        msg = schema.message_class([0])()
        protobuf_types.fill(msg, named)
    except Exception:  # noqa: BLE001 - no subject yet, or values it cannot hold: write our own schema
        return None
    return sr.frame(latest.schema_id, b"\x00" + msg.SerializeToString())


def _serialize_framed(spec, format_name: str, role: str, msg) -> bytes:
    """confluent-kafka's ProtobufSerializer (registers the schema under `<topic>-<role>`)."""
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    url = sr.registry_url(spec, format_name)
    topic = sr.topic_of(spec, format_name)
    key = ("PROTOBUF", url, type(msg).DESCRIPTOR.file.serialized_pb)
    ser = sr._serializers.get(key)
    if ser is None:
        ser = sr._serializers[key] = ProtobufSerializer(type(msg), sr.client(url), conf={"auto.register.schemas": True})
    ctx = SerializationContext(topic, MessageField.KEY if role == "key" else MessageField.VALUE)
    try:
        return ser(msg, ctx)
    except Exception as exc:  # noqa: BLE001 - registry refusals are user errors
        raise StatementError(redact.text(f"Failed to serialize {role} as {format_name} for subject "
                                         f"{sr.subject(topic, role)} (schema registry at {url}): {exc}")) from exc


# ---------------------------------------------------------------- schemas, cached per process
_lock = threading.Lock()
_compiled: dict[str, protobuf_schema.Schema] = {}
_by_id: dict[tuple[str, int], object] = {}


def compiled(text: str, references: Sequence[tuple[str, str]] = ()) -> protobuf_schema.Schema:
    key = repr((text, tuple(references)))
    with _lock:
        found = _compiled.get(key)
        if found is None:
            found = _compiled[key] = protobuf_schema.Schema(text, references)
        return found


def schema_for_id(url: str, schema_id: int):
    """The compiled schema registered under `schema_id`, or the error text its records get."""
    key = (url, schema_id)
    if key in _by_id:
        return _by_id[key]
    try:
        registered = sr.client(url).get_schema(schema_id)
        refs = _named_references(sr.client(url), registered.references or [])
    except Exception as exc:  # noqa: BLE001 - reported per record, retried after a while
        return sr._lookup_message(url, schema_id, exc)
    if (registered.schema_type or "AVRO").upper() != "PROTOBUF":
        found = f"Schema id {schema_id} is a {registered.schema_type or 'AVRO'} schema, not PROTOBUF"
    else:
        try:
            found = compiled(registered.schema_str, refs)
        except Exception as exc:  # noqa: BLE001 - a schema protoc refuses
            found = f"Schema id {schema_id} cannot be used: {exc}"
    _by_id[key] = found
    return found


def _named_references(client, refs, seen=None) -> list[tuple[str, str]]:
    """(import name, text) of every reference, transitively, dependencies first."""
    seen = set() if seen is None else seen
    out: list[tuple[str, str]] = []
    for ref in refs:
        if ref.name in seen:
            continue
        seen.add(ref.name)
        registered = client.get_version(ref.subject, ref.version).schema
        out += _named_references(client, registered.references or [], seen)
        out.append((ref.name, registered.schema_str))
    return out


# ---------------------------------------------------------------- executor side
class Layout:
    """What the UDF needs, as plain picklable data."""

    def __init__(self, fields: tuple, anonymous: bool, url: str | None):
        self.fields, self.anonymous, self.url = fields, anonymous, url
        self._readers: dict = {}
        self._target = None

    def __getstate__(self):
        return (self.fields, self.anonymous, self.url)

    def __setstate__(self, state):
        self.__init__(*state)

    def target(self):
        if self._target is None:
            import pyarrow as pa

            from .avro_types import arrow_type

            self._target = pa.struct([pa.field(n, arrow_type(t)) for n, t in self.fields])
        return self._target

    def reader(self, schema_id: int | None, indexes: tuple):
        """(message class, message -> dict of the declared columns), or an error text."""
        key = (schema_id, indexes)
        found = self._readers.get(key)
        if found is None:
            found = self._readers[key] = self._build(schema_id, indexes)
        return found

    def _build(self, schema_id, indexes):
        if self.url is None:
            schema = compiled(protobuf_types.proto_text(list(self.fields)))
            label = "the declared columns' message"
        else:
            schema = schema_for_id(self.url, schema_id)
            label = f"schema id {schema_id}"
            if isinstance(schema, str):
                return schema
        try:
            return schema.message_class(indexes), self._read_message(schema.message(indexes))
        except (protobuf_schema.ProtobufSchemaError, protobuf_types.ProtobufTypeError) as exc:
            return f"PROTOBUF {label} does not match the declared columns: {exc}"
        except Exception as exc:  # noqa: BLE001 - reported on each record, with its type
            return f"PROTOBUF {label} cannot be read: {type(exc).__name__}: {exc}"

    def _read_message(self, desc):
        if self.anonymous:
            (name, t), = self.fields
            one_field = len(desc.fields) == 1
            whole = t.name == "STRUCT" and not (one_field and desc.fields[0].name.lower() == name.lower())
            if whole:
                read = protobuf_types.reader(desc, t)
                return lambda msg: {name: read(msg)}
            if not one_field:
                raise protobuf_types.ProtobufTypeError(
                    f"message {desc.full_name} has {len(desc.fields)} fields, not the one of column `{name}`")
            inner = protobuf_types.reader(desc, ast.Type("STRUCT", fields=((desc.fields[0].name, t),)))
            field_name = desc.fields[0].name
            return lambda msg: {name: inner(msg)[field_name]}
        return protobuf_types.reader(desc, ast.Type("STRUCT", fields=self.fields))


def read_indexes(data: bytes, pos: int) -> tuple[tuple, int]:
    """Confluent's message indexes at `pos`: (indexes, position after them)."""
    count, pos = _zigzag(data, pos)
    if count == 0:
        return (0,), pos
    if count < 0 or count > 100:
        raise ValueError(f"invalid message index count {count}")
    out = []
    for _ in range(count):
        i, pos = _zigzag(data, pos)
        out.append(i)
    return tuple(out), pos


def _zigzag(data: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if pos >= len(data):
            raise ValueError("record ends inside the message indexes")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift > 63:
            raise ValueError("malformed varint in the message indexes")


def decode_batch(values, layout: Layout):
    """binary Arrow array -> struct<declared columns..., error>; never raises."""
    import pyarrow as pa

    target = layout.target()
    error_field = pa.field(ERROR_FIELD, pa.string())
    records, errors = [], []
    raws = values.to_pylist()
    try:
        for raw in raws:
            record, error = _decode_one(raw, layout)
            records.append(record)
            errors.append(error)
    except Exception as exc:  # noqa: BLE001 - last resort: the whole batch becomes errors
        records = [None] * len(raws)
        errors = [None if r is None else f"Unexpected error decoding PROTOBUF: {exc!r}" for r in raws]
    try:
        struct = pa.array(records, type=target)
    except Exception:  # noqa: BLE001 - find the rows that do not convert
        parts = []
        for i, record in enumerate(records):
            try:
                parts.append(pa.array([record], type=target))
            except Exception as exc:  # noqa: BLE001
                errors[i] = f"Cannot convert the PROTOBUF message to the declared columns: {exc}"
                parts.append(pa.array([None], type=target))
        struct = pa.concat_arrays(parts) if parts else pa.array([], type=target)
    columns = struct.flatten() if len(records) else [pa.nulls(0, f.type) for f in target]
    return pa.StructArray.from_arrays(columns + [pa.array(errors, type=pa.string())],
                                      fields=list(target) + [error_field])


def _decode_one(raw: bytes | None, layout: Layout):
    if raw is None:
        return None, None
    schema_id, indexes, pos = None, (0,), 0
    if layout.url is not None:
        if len(raw) < sr.HEADER_SIZE or raw[0] != sr.MAGIC_BYTE:
            return None, sr.framing_problem(raw)
        schema_id = int.from_bytes(raw[1:5], "big")
        try:
            indexes, pos = read_indexes(raw, sr.HEADER_SIZE)
        except ValueError as exc:
            return None, f"Error deserializing PROTOBUF message for id {schema_id}: {exc}"
    found = layout.reader(schema_id, indexes)
    if isinstance(found, str):
        return None, found
    cls, read = found
    try:
        msg = cls.FromString(raw[pos:])
        return read(msg), None
    except Exception as exc:  # noqa: BLE001 - DecodeError and conversion errors
        where = f"for id {schema_id}" if schema_id is not None else "(PROTOBUF_NOSR)"
        return None, f"Error deserializing PROTOBUF message {where}: {type(exc).__name__}: {exc}"
