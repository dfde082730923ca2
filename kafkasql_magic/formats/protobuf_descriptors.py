"""Materialize's FORMAT PROTOBUF: every record decoded as one message of a FileDescriptorSet
fixed when the source was made, as Materialize's decoder does (mz_interchange's `protobuf.rs`).

The set comes inline (`MESSAGE 'name' USING SCHEMA '\\x0a...'`, protoc's
`--descriptor_set_out` as a bytea literal), from a file (`USING SCHEMA FILE 'path'`), or from
the subject's latest schema in a Confluent registry, compiled when the source is made (then
records are Confluent-framed, and the schema id and message indexes they carry are skipped:
Materialize reads every record with the schema it knows). Columns are the message's fields:
- scalars, enums (their value's name, as text) and repeated fields (lists) are never NULL, an
  absent one reads as proto3's default;
- a message field is a record, NULL when the message does not have it; well-known types such as
  `google.protobuf.Timestamp` are records like any other;
- map, unsigned and recursive fields are refused with Materialize's messages.
"""

from __future__ import annotations

import functools
import threading
from typing import Sequence

from ..errors import StatementError
from ..sql import ast
from . import schema_registry as sr
from .base import Decoded, Format, deserialization_error
from .json_errors import decode_error_text
from .protobuf_types import _repeated

#: FormatSpec options: the FileDescriptorSet as hex, the message's full name, Confluent framing.
DESCRIPTORS, MESSAGE, FRAMED = "PROTOBUF_DESCRIPTORS", "PROTOBUF_MESSAGE", "CONFLUENT_WIRE_FORMAT"

ERROR_FIELD = "__kafkasql_protobuf_error__"

_SCALARS = {"bool": "BOOLEAN", "int32": "INT", "sint32": "INT", "sfixed32": "INT", "int64": "BIGINT",
            "sint64": "BIGINT", "sfixed64": "BIGINT", "float": "DOUBLE", "double": "DOUBLE", "string": "STRING",
            "bytes": "BYTES", "enum": "STRING"}
_UNSIGNED = frozenset({"uint32", "uint64", "fixed32", "fixed64"})


def bytea_literal(text: str) -> bytes:
    """The bytes of a bytea literal in PostgreSQL's hex form (`\\x0a30...`), as Materialize takes
    an inline FileDescriptorSet."""
    hexed = text[2:] if text[:2] in ("\\x", "\\X") else None
    try:
        if hexed is None:
            raise ValueError("it does not start with \\x")
        return bytes.fromhex(hexed)
    except ValueError as exc:
        raise StatementError(f"invalid input syntax for type bytea: USING SCHEMA takes a FileDescriptorSet in hex "
                             f"('\\x0a...', from protoc --include_imports --descriptor_set_out): {exc}") from None


def descriptors_of_file(path: str) -> bytes:
    """USING SCHEMA FILE: the FileDescriptorSet protoc wrote to `path`."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise StatementError(f"cannot read the PROTOBUF schema file {path!r}: {exc.strerror}") from None


# ---------------------------------------------------------------- descriptors (any process)
_lock = threading.Lock()


@functools.lru_cache(maxsize=64)
def _pool(data: bytes):
    from google.protobuf import descriptor_pb2, descriptor_pool

    from .protobuf_schema import add_with_imports

    files = descriptor_pb2.FileDescriptorSet()
    files.MergeFromString(data)
    named = {f.name: f for f in files.file}
    pool, added = descriptor_pool.DescriptorPool(), set()
    for name in named:
        add_with_imports(pool, name, named, added,
                         lambda missing: ValueError(f"the set has no file {missing}, which another file imports"))
    return pool


def message_of(data: bytes, name: str):
    """The descriptor of message `name` (fully qualified, a leading dot allowed) in the set."""
    try:
        with _lock:
            pool = _pool(data)
    except Exception as exc:  # noqa: BLE001 - not a FileDescriptorSet
        raise StatementError(f"decoding file descriptor set: {exc}") from None
    try:
        return pool.FindMessageTypeByName(name.removeprefix("."))
    except KeyError:
        raise StatementError(f'protobuf message "{name}" not found in file descriptor set') from None


def columns(message) -> list[tuple[str, ast.Type]]:
    """The columns of `message`, by Materialize's rules; StatementError for what it refuses."""
    seen = {message.name}
    return [(fd.name, _field_type(fd, seen)) for fd in message.fields]


def _field_type(fd, seen: set) -> ast.Type:
    if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
        raise StatementError("Protobuf map fields are not supported")
    inner = _inner_type(fd, seen)
    return ast.Type("ARRAY", element=inner) if _repeated(fd) else inner


def _inner_type(fd, seen: set) -> ast.Type:
    kind = _kind(fd)
    if kind in _UNSIGNED:
        raise StatementError("Protobuf unsigned integer types are not supported")
    if kind != "message":
        return ast.Type(_SCALARS[kind])
    message = fd.message_type
    if message.name in seen:
        raise StatementError(f"Recursive types are not supported: {message.name}")
    seen.add(message.name)
    fields = tuple((f.name, _field_type(f, seen)) for f in message.fields)
    seen.discard(message.name)
    return ast.Type("STRUCT", fields=fields)


def _kind(fd) -> str:
    from google.protobuf.descriptor import FieldDescriptor as FD

    names = {FD.TYPE_BOOL: "bool", FD.TYPE_INT32: "int32", FD.TYPE_SINT32: "sint32", FD.TYPE_SFIXED32: "sfixed32",
             FD.TYPE_INT64: "int64", FD.TYPE_SINT64: "sint64", FD.TYPE_SFIXED64: "sfixed64", FD.TYPE_UINT32: "uint32",
             FD.TYPE_UINT64: "uint64", FD.TYPE_FIXED32: "fixed32", FD.TYPE_FIXED64: "fixed64", FD.TYPE_FLOAT: "float",
             FD.TYPE_DOUBLE: "double", FD.TYPE_STRING: "string", FD.TYPE_BYTES: "bytes", FD.TYPE_ENUM: "enum",
             FD.TYPE_MESSAGE: "message", FD.TYPE_GROUP: "message"}
    return names[fd.type]


def never_null(t: ast.Type) -> bool:
    """Whether a column of this type is never NULL: all but a message field's record."""
    return t.name != "STRUCT"


def compiled_set(text: str, references: Sequence[tuple[str, str]], message: str | None) -> tuple[bytes, str]:
    """`.proto` text (a registered schema) and its references compiled to a FileDescriptorSet, as
    `protoc --include_imports --descriptor_set_out` writes one, with the message to read:
    `message`, else the file's only message (Materialize's rule for a registry's schema)."""
    from google.protobuf import descriptor_pb2

    from .protobuf_schema import ProtobufSchemaError, Schema

    try:
        schema = Schema(text, references)
    except (ProtobufSchemaError, ValueError) as exc:
        raise StatementError(f"invalid protobuf schema: {exc}") from None
    files, seen = descriptor_pb2.FileDescriptorSet(), set()

    def add(fd) -> None:
        if fd.name in seen:
            return
        seen.add(fd.name)
        for dep in fd.dependencies:
            add(dep)
        fd.CopyToProto(files.file.add())

    add(schema.file)
    if message is None:
        found = list(schema.file.message_types_by_name.values())
        if len(found) != 1:
            raise StatementError(f"Protobuf schemas with {'no' if not found else 'multiple'} messages not yet supported")
        message = found[0].full_name
    return files.SerializeToString(), message


# ---------------------------------------------------------------- decoding (Spark's Python workers)
def read_message(msg) -> dict:
    """A parsed message as its columns' values (Materialize's `pack_message`)."""
    out = {}
    for fd in msg.DESCRIPTOR.fields:
        if fd.message_type is not None and not _repeated(fd) and not msg.HasField(fd.name):
            out[fd.name] = None
            continue
        value = getattr(msg, fd.name)
        out[fd.name] = [_value(fd, v) for v in value] if _repeated(fd) else _value(fd, value)
    return out


def _value(fd, value):
    if fd.enum_type is not None:
        found = fd.enum_type.values_by_number.get(value)
        if found is None:
            raise ValueError(f"error decoding protobuf: unknown enum value {value} while decoding field {fd.name}")
        return found.name
    if fd.message_type is not None:
        return read_message(value)
    return value


def _unframed(raw: bytes) -> bytes:
    """The message after Confluent's header (magic byte, schema id, message indexes)."""
    from .protobuf import read_indexes

    if len(raw) < sr.HEADER_SIZE:
        raise ValueError(f"Confluent-style protobuf datum is too few bytes: expected at least {sr.HEADER_SIZE} "
                         f"bytes, got {len(raw)}")
    if raw[0] != sr.MAGIC_BYTE:
        raise ValueError(f"wrong Confluent-style protobuf serialization magic: expected 0, got {raw[0]}")
    return raw[read_indexes(raw, sr.HEADER_SIZE)[1]:]


def decode_one(raw: bytes | None, cls, framed: bool) -> tuple[dict | None, str | None]:
    """(the record's columns, None) or (None, Materialize's text for why it does not decode);
    `cls`: the message's class."""
    if raw is None:
        return None, None
    try:
        body = _unframed(raw) if framed else raw
    except ValueError as exc:
        return None, decode_error_text(f"protobuf deserialization error: {exc}", raw)
    try:
        return read_message(cls.FromString(body)), None
    except Exception as exc:  # noqa: BLE001 - DecodeError, an unknown enum value
        text = str(exc) if str(exc).startswith("error decoding") else f"failed to decode Protobuf message: {exc}"
        return None, decode_error_text(f"protobuf deserialization error: {text}", raw)


def decode_batch(values, fields: tuple, data: bytes, name: str, framed: bool):
    """binary Arrow array -> struct<the columns..., error>."""
    import pyarrow as pa

    from .avro_types import arrow_type

    from google.protobuf import message_factory

    target = pa.struct([pa.field(n, arrow_type(t)) for n, t in fields])
    cls = message_factory.GetMessageClass(message_of(data, name))
    records, errors = [], []
    for raw in values.to_pylist():
        record, error = decode_one(raw, cls, framed)
        records.append(record)
        errors.append(error)
    struct = pa.array(records, type=target)
    columns = struct.flatten() if len(records) else [pa.nulls(0, f.type) for f in target]
    return pa.StructArray.from_arrays(columns + [pa.array(errors, type=pa.string())],
                                      fields=list(target) + [pa.field(ERROR_FIELD, pa.string())])


class ProtobufDescriptorsFormat(Format):
    name = "PROTOBUF_DESCRIPTORS"

    def decode(self, raw, fields, spec, role):
        import pyarrow as pa
        from pyspark.sql import functions as F
        from pyspark.sql import types as T

        from .. import types
        from .avro import _barrier, _declared, exchange_type

        if not fields:
            return Decoded([])
        layout = (tuple((f.name, f.type) for f in fields), bytes.fromhex(spec.options[DESCRIPTORS]),
                  spec.options[MESSAGE], bool(spec.options.get(FRAMED)))
        spark_type = T.StructType([T.StructField(f.name, exchange_type(types.to_spark(f.type))) for f in fields]
                                  + [T.StructField(ERROR_FIELD, T.StringType())])

        def decode_protobuf(values):
            return decode_batch(values, *layout)

        decode_protobuf.__annotations__ = {"values": pa.Array, "return": pa.Array}
        decoded = F.arrow_udf(decode_protobuf, spark_type)(raw)
        reason = decoded[ERROR_FIELD]
        return Decoded([_declared(decoded[f.name], f) for f in fields],
                       _barrier(F.when(reason.isNotNull(), deserialization_error(role, reason))))

    def encode(self, values, fields, spec, role):
        raise StatementError("A source read as FORMAT PROTOBUF cannot be written to: Materialize's PROTOBUF is a "
                             "source format only")
