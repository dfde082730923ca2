"""Protobuf <-> ksql types, as ksqlDB maps them (Confluent's ProtobufData), and readers of messages.

- `to_ksql(message)`: schema inference. Scalars by the tables below (unsigned 32-bit and all
  64-bit integers -> BIGINT, float -> DOUBLE, enum -> STRING), messages -> STRUCT, `repeated` ->
  ARRAY, `map<k, v>` -> MAP, a `oneof` -> one STRUCT column `<oneof name>_<index>` holding its
  alternatives (proto3 `optional` is a plain field), well-known types: Timestamp -> TIMESTAMP,
  google.type.Date -> DATE, google.type.TimeOfDay -> TIME, confluent.type.Decimal -> DECIMAL, the
  wrappers (Int32Value, ...) -> STRUCT<VALUE ...> (ksqlDB's default, UNWRAP_PRIMITIVES off).
- `reader(message, declared)`: a function message -> Python value of the declared ksql type;
  fields matched case-insensitively; a wrapper read into a primitive column is unwrapped.
- `proto_text(fields)`: the `.proto` ksqlDB writes for declared columns.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Callable, Sequence

from ..sql import ast

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


class ProtobufTypeError(ValueError):
    """A protobuf field with no ksql type, or that cannot be read as the declared one."""


def _scalars():
    from google.protobuf.descriptor import FieldDescriptor as FD

    return {
        FD.TYPE_INT32: "INT", FD.TYPE_SINT32: "INT", FD.TYPE_SFIXED32: "INT",
        FD.TYPE_UINT32: "BIGINT", FD.TYPE_FIXED32: "BIGINT",
        FD.TYPE_INT64: "BIGINT", FD.TYPE_SINT64: "BIGINT", FD.TYPE_SFIXED64: "BIGINT",
        FD.TYPE_UINT64: "BIGINT", FD.TYPE_FIXED64: "BIGINT",
        FD.TYPE_FLOAT: "DOUBLE", FD.TYPE_DOUBLE: "DOUBLE", FD.TYPE_BOOL: "BOOLEAN",
        FD.TYPE_STRING: "STRING", FD.TYPE_BYTES: "BYTES", FD.TYPE_ENUM: "STRING",
    }


#: Well-known messages read as one ksql value.
WELL_KNOWN = {
    "google.protobuf.Timestamp": ast.Type("TIMESTAMP"),
    "google.type.Date": ast.Type("DATE"),
    "google.type.TimeOfDay": ast.Type("TIME"),
}
DECIMAL_MESSAGE = "confluent.type.Decimal"
WRAPPERS = {
    "google.protobuf.DoubleValue": "DOUBLE", "google.protobuf.FloatValue": "DOUBLE",
    "google.protobuf.Int64Value": "BIGINT", "google.protobuf.UInt64Value": "BIGINT",
    "google.protobuf.Int32Value": "INT", "google.protobuf.UInt32Value": "BIGINT",
    "google.protobuf.BoolValue": "BOOLEAN", "google.protobuf.StringValue": "STRING",
    "google.protobuf.BytesValue": "BYTES",
}


# ---------------------------------------------------------------- inference
def _real_oneofs(message):
    """The message's oneofs that are not proto3 `optional` markers."""
    return [o for o in message.oneofs if not _synthetic(o)]


def _synthetic(oneof) -> bool:
    return len(oneof.fields) == 1 and getattr(oneof.fields[0], "has_presence", False) and \
        oneof.name == "_" + oneof.fields[0].name


def oneof_column(oneof) -> str:
    """Confluent's name for the STRUCT a `oneof` becomes."""
    return f"{oneof.name}_{oneof.index}"


def to_ksql(message) -> ast.Type:
    """The ksql STRUCT of a message descriptor (field names as written)."""
    fields: list[tuple[str, ast.Type]] = []
    done = set()
    for fd in message.fields:
        oneof = fd.containing_oneof
        if oneof is not None and not _synthetic(oneof):
            if oneof.name not in done:
                done.add(oneof.name)
                fields.append((oneof_column(oneof), ast.Type(
                    "STRUCT", fields=tuple((f.name, field_type(f)) for f in oneof.fields))))
            continue
        fields.append((fd.name, field_type(fd)))
    return ast.Type("STRUCT", fields=tuple(fields))


def field_type(fd) -> ast.Type:
    if _is_map(fd):
        k, v = fd.message_type.fields_by_name["key"], fd.message_type.fields_by_name["value"]
        return ast.Type("MAP", key=_single_type(k), value=_single_type(v))
    t = _single_type(fd)
    return ast.Type("ARRAY", element=t) if _repeated(fd) else t


def _repeated(fd) -> bool:
    if hasattr(fd, "is_repeated"):  # protobuf >= 6 (`label` is gone in 7)
        return fd.is_repeated
    from google.protobuf.descriptor import FieldDescriptor as FD

    return fd.label == FD.LABEL_REPEATED


def _is_map(fd) -> bool:
    """A `map<k, v>` field, or (as Confluent's ProtobufData reads it) a repeated `...Entry` message
    of exactly a `key` and a `value` field: how ksqlDB's registered schemas spell a MAP."""
    if not _repeated(fd) or fd.message_type is None:
        return False
    entry = fd.message_type
    return entry.GetOptions().map_entry or (
        entry.name.endswith("Entry") and [f.name for f in entry.fields] == ["key", "value"]
        and not any(_repeated(f) for f in entry.fields))


def _entries(container):
    """(key, value) pairs of a map field, whether a real map or repeated entry messages."""
    if hasattr(container, "items"):
        return container.items()
    return [(e.key, e.value) for e in container]


def _single_type(fd) -> ast.Type:
    if fd.message_type is None:
        return ast.Type(_scalars()[fd.type])
    name = fd.message_type.full_name
    if name in WELL_KNOWN:
        return WELL_KNOWN[name]
    if name in WRAPPERS:
        return ast.Type("STRUCT", fields=(("value", ast.Type(WRAPPERS[name])),))
    if name == DECIMAL_MESSAGE:
        precision, scale = _decimal_params(fd)
        return ast.Type("DECIMAL", precision=precision, scale=scale)
    if name.startswith("google.protobuf."):
        raise ProtobufTypeError(f"field `{fd.name}` has type {name}, which has no ksql type")
    return to_ksql(fd.message_type)


def _decimal_params(fd) -> tuple[int, int]:
    """precision and scale from Confluent's `(confluent.field_meta).params`, else DECIMAL(64, 0)'s
    nearest ksql limit."""
    params = {}
    for option, value in fd.GetOptions().ListFields():
        if option.name == "field_meta":
            params = dict(getattr(value, "params", {}))
    return int(params.get("precision", 38)), int(params.get("scale", 0))


# ---------------------------------------------------------------- readers
def reader(message, declared: ast.Type) -> Callable:
    """message -> dict of the declared STRUCT's fields (message fields matched case-insensitively)."""
    if declared.name != "STRUCT":
        raise ProtobufTypeError(f"a message ({message.full_name}) cannot be read as {declared.name}")
    by_lower = {fd.name.lower(): fd for fd in message.fields}
    oneofs = {oneof_column(o).lower(): o for o in _real_oneofs(message)}
    parts = []
    for name, t in declared.fields:
        fd = by_lower.get(name.lower())
        if fd is not None:
            parts.append((name, _field_reader(fd, t)))
        elif name.lower() in oneofs:
            parts.append((name, _oneof_reader(oneofs[name.lower()], t)))
        else:
            raise ProtobufTypeError(f"message {message.full_name} has no field `{name}`")

    def read(msg):
        return {name: part(msg) for name, part in parts}
    return read


def _oneof_reader(oneof, t: ast.Type) -> Callable:
    if t.name != "STRUCT":
        raise ProtobufTypeError(f"oneof `{oneof.name}` can only be read as a STRUCT, not {t.name}")
    by_lower = {fd.name.lower(): fd for fd in oneof.fields}
    parts = []
    for name, ft in t.fields:
        fd = by_lower.get(name.lower())
        if fd is None:
            raise ProtobufTypeError(f"oneof `{oneof.name}` has no field `{name}`")
        parts.append((name, fd.name, _field_reader(fd, ft)))
    oneof_name = oneof.name

    def read(msg):
        chosen = msg.WhichOneof(oneof_name)
        return {name: (part(msg) if chosen == fname else None) for name, fname, part in parts}
    return read


def _field_reader(fd, t: ast.Type) -> Callable:
    name = fd.name
    if _is_map(fd):
        if t.name != "MAP":
            raise ProtobufTypeError(f"field `{name}` is a map, not {t.name}")
        vfd = fd.message_type.fields_by_name["value"]
        convert_key = _value_reader(fd.message_type.fields_by_name["key"], t.key)
        convert = _value_reader(vfd, t.value)
        return lambda msg: {convert_key(k): convert(v) for k, v in _entries(getattr(msg, name))}
    if _repeated(fd):
        if t.name != "ARRAY":
            raise ProtobufTypeError(f"field `{name}` is repeated, not {t.name}")
        convert = _value_reader(fd, t.element)
        return lambda msg: [convert(v) for v in getattr(msg, name)]
    convert = _value_reader(fd, t)
    if fd.message_type is not None:  # unset message fields are NULL
        return lambda msg: convert(getattr(msg, name)) if msg.HasField(name) else None
    return lambda msg: convert(getattr(msg, name))


def _value_reader(fd, t: ast.Type) -> Callable:
    """One (non-repeated) value of field `fd` -> Python value of `t`."""
    if fd.message_type is None:
        if fd.enum_type is not None:
            names = {v.number: v.name for v in fd.enum_type.values}
            return lambda v: names.get(v, str(v))
        return _scalar(t)
    full = fd.message_type.full_name
    if full == "google.protobuf.Timestamp":
        return lambda m: _EPOCH + dt.timedelta(seconds=m.seconds, microseconds=m.nanos // 1000)
    if full == "google.type.Date":
        return lambda m: dt.date(m.year, m.month, m.day)
    if full == "google.type.TimeOfDay":
        return lambda m: dt.time(m.hours, m.minutes, m.seconds, m.nanos // 1000)
    if full == DECIMAL_MESSAGE:
        return lambda m: Decimal(int.from_bytes(m.value, "big", signed=True)).scaleb(-m.scale)
    if full in WRAPPERS and t.name != "STRUCT":
        scalar = _scalar(t)
        return lambda m: scalar(m.value)
    return reader(fd.message_type, t)


def _scalar(t: ast.Type) -> Callable:
    if t.name == "DOUBLE":
        return float
    if t.name == "DECIMAL":
        return lambda v: Decimal(str(v))
    return lambda v: v


# ---------------------------------------------------------------- writing
_PROTO_SCALARS = {"BOOLEAN": "bool", "INT": "int32", "BIGINT": "int64", "DOUBLE": "double",
                  "STRING": "string", "BYTES": "bytes"}
_PROTO_WELL_KNOWN = {"TIMESTAMP": ("google.protobuf.Timestamp", "google/protobuf/timestamp.proto"),
                     "DATE": ("google.type.Date", "google/type/date.proto"),
                     "TIME": ("google.type.TimeOfDay", "google/type/timeofday.proto"),
                     "DECIMAL": ("confluent.type.Decimal", "confluent/type/decimal.proto")}


def proto_text(fields: Sequence[tuple[str, ast.Type]], message: str = "ConnectDefault1") -> str:
    """proto3 text of one message with `fields`, as ksqlDB (Confluent's ProtobufData) writes it:
    nested messages `ConnectDefault2`, `ConnectDefault3`, ... numbered in field order, declared
    after the fields; a MAP is `repeated ConnectDefaultNEntry` of a `key`/`value` message."""
    imports: set[str] = set()
    body = _message(message, fields, imports, [1], "")
    head = ['syntax = "proto3";', ""] + [f'import "{i}";' for i in sorted(imports)]
    return "\n".join(head + ([""] if imports else []) + body) + "\n"


def _message(name: str, fields, imports: set, counter: list, indent: str) -> list[str]:
    lines, nested = [], []
    for number, (fname, t) in enumerate(fields, start=1):
        type_text = _proto_type(fname, t, imports, nested, counter, indent + "  ")
        lines.append(f"{indent}  {type_text} {fname} = {number}{_field_options(t, imports)};")
    return [f"{indent}message {name} {{", *lines, *([indent] if nested else []), *nested, f"{indent}}}"]


def _proto_type(fname: str, t: ast.Type, imports: set, nested: list, counter: list, indent: str) -> str:
    if t.name == "ARRAY":
        if t.element.name in ("ARRAY", "MAP"):
            raise ProtobufTypeError(f"column `{fname}`: PROTOBUF cannot hold an ARRAY of {t.element.name}")
        return "repeated " + _proto_type(fname, t.element, imports, nested, counter, indent)
    if t.name in ("MAP", "STRUCT"):
        counter[0] += 1
        inner = f"ConnectDefault{counter[0]}" + ("Entry" if t.name == "MAP" else "")
        inner_fields = (("key", t.key), ("value", t.value)) if t.name == "MAP" else t.fields
        nested += _message(inner, inner_fields, imports, counter, indent)
        return ("repeated " if t.name == "MAP" else "") + inner
    if t.name in _PROTO_WELL_KNOWN:
        full, path = _PROTO_WELL_KNOWN[t.name]
        imports.add(path)
        return full
    return _PROTO_SCALARS[t.name]


def _field_options(t: ast.Type, imports: set) -> str:
    """A DECIMAL's precision and scale, as Confluent's ProtobufData writes them (and reads them
    back: without them a reader takes the field for DECIMAL(38, 0))."""
    while t.name == "ARRAY":
        t = t.element
    if t.name != "DECIMAL":
        return ""
    imports.add("confluent/meta.proto")
    return (f' [(confluent.field_meta) = {{ params: [{{ key: "precision", value: "{t.precision}" }}, '
            f'{{ key: "scale", value: "{t.scale}" }}] }}]')


def fill(msg, values: dict) -> None:
    """Set a message's fields from Python values (names matched case-insensitively)."""
    by_lower = {fd.name.lower(): fd for fd in msg.DESCRIPTOR.fields}
    oneofs = {oneof_column(o).lower() for o in _real_oneofs(msg.DESCRIPTOR)}
    for key, value in values.items():
        fd = by_lower.get(str(key).lower())
        if fd is None and str(key).lower() in oneofs:  # the STRUCT of a oneof: its one set member
            fill(msg, {k: v for k, v in (value or {}).items() if v is not None})
            continue
        if fd is None:
            raise ProtobufTypeError(f"message {msg.DESCRIPTOR.full_name} has no field `{key}`")
        if value is None:
            continue
        name = fd.name
        if _is_map(fd):  # a dict, or Arrow's list of (key, value) pairs
            target = getattr(msg, name)
            vfd = fd.message_type.fields_by_name["value"]
            for k, v in (value.items() if isinstance(value, dict) else value):
                if not hasattr(target, "items"):  # repeated entry messages
                    fill(target.add(), {"key": k, "value": v})
                elif vfd.message_type is None:
                    target[k] = v
                else:
                    _set_message(target[k], vfd, v)
        elif _repeated(fd):
            target = getattr(msg, name)
            for v in value:
                if fd.message_type is None:
                    target.append(v)
                else:
                    _set_message(target.add(), fd, v)
        elif fd.enum_type is not None and isinstance(value, str):
            number = fd.enum_type.values_by_name.get(value)
            if number is None:
                raise ProtobufTypeError(f"`{value}` is not a value of enum {fd.enum_type.full_name}")
            setattr(msg, name, number.number)
        elif fd.message_type is None:
            floating = fd.cpp_type in (fd.CPPTYPE_DOUBLE, fd.CPPTYPE_FLOAT)
            setattr(msg, name, float(value) if floating else value)
        else:
            _set_message(getattr(msg, name), fd, value)


def _set_message(target, fd, value) -> None:
    full = fd.message_type.full_name
    if full == "google.protobuf.Timestamp":
        if isinstance(value, dt.datetime):
            value = value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
            micros = (value - _EPOCH) // dt.timedelta(microseconds=1)
        else:
            micros = int(value) * 1000  # epoch milliseconds
        target.seconds, target.nanos = micros // 1_000_000, (micros % 1_000_000) * 1000
    elif full == "google.type.Date":
        value = value if isinstance(value, dt.date) else _EPOCH.date() + dt.timedelta(days=int(value))
        target.year, target.month, target.day = value.year, value.month, value.day
    elif full == "google.type.TimeOfDay":
        target.hours, target.minutes, target.seconds = value.hour, value.minute, value.second
        target.nanos = value.microsecond * 1000
    elif full == DECIMAL_MESSAGE:
        d = Decimal(str(value))
        scale = max(0, -d.as_tuple().exponent)
        unscaled = int(d.scaleb(scale))
        target.value = unscaled.to_bytes(max(1, (unscaled.bit_length() + 8) // 8), "big", signed=True)
        target.precision, target.scale = len(str(abs(unscaled))), scale
    else:
        fill(target, value)
