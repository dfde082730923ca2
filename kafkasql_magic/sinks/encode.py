"""Sink columns -> record bytes, per format, as Spark expressions wherever Spark can.

KAFKA (INT, BIGINT, STRING, BYTES), JSON, DELIMITED and NONE are Spark expressions; KAFKA
DOUBLE, AVRO, JSON_SR, PROTOBUF and PROTOBUF_NOSR run an Arrow UDF (AVRO records of optional
primitives column by column in `avro_columns`, anything else record by record: fastavro, json,
protobuf messages). Schemas for AVRO, JSON_SR and PROTOBUF are registered on the driver before
the query starts (`sinks.schemas`), so executors only frame
bytes with a known schema id and never talk to the registry.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable, Sequence

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..errors import StatementError
from ..formats import Field, FormatSpec
from ..sql import ast
from . import avro_columns

#: ksql types Spark's JSON/CSV writers spell differently from ksqlDB: converted first.
_JSON_READY: dict[str, Callable[[Column], Column]] = {
    "TIMESTAMP": F.unix_millis,
    "DATE": F.unix_date,
    # milliseconds of the day (Spark's second() of a TIME drops the fraction)
    "TIME": lambda c: (F.hour(c) * 3_600_000 + F.minute(c) * 60_000
                       + (F.extract(F.lit("SECOND"), c) * 1000).cast("bigint")),
    "BYTES": F.base64,
}


@dataclass(frozen=True)
class Registered:
    """The schema a sink writes one role with: its registry id and text."""

    schema_id: int
    text: str


def anonymous(fields: Sequence[Field], spec: FormatSpec, role: str) -> bool:
    """One column written bare (not in a record): every single key, or WRAP_SINGLE_VALUE=false."""
    return len(fields) == 1 and (
        role == "key" or str(spec.options.get("WRAP_SINGLE_VALUE", "true")).lower() == "false")


def _json_ready(column: Column, t: ast.Type) -> Column:
    """`column` as ksqlDB's JSON writes it, at any depth: inside an ARRAY, a MAP's values or a
    STRUCT's fields too (Spark's JSON writer would spell a TIME or TIMESTAMP there as text)."""
    convert = _JSON_READY.get(t.name)
    if convert is not None:
        return convert(column)
    if not _spelled_otherwise(t):
        return column
    if t.name == "ARRAY":
        return F.transform(column, lambda e: _json_ready(e, t.element))
    if t.name == "MAP":
        return F.transform_values(column, lambda k, v: _json_ready(v, t.value))
    return F.when(column.isNotNull(), F.struct(*[_json_ready(column[n], ft).alias(n) for n, ft in t.fields]))


def _spelled_otherwise(t: ast.Type) -> bool:
    """Whether a value of `t` holds a type `_JSON_READY` converts."""
    inner = [t.element, t.value, *(ft for _, ft in t.fields)]
    return t.name in _JSON_READY or any(_spelled_otherwise(i) for i in inner if i is not None)


def _utf8(text: Column) -> Column:
    return F.encode(text, "UTF-8")


# ---------------------------------------------------------------- KAFKA
def _fixed_width(width: int) -> Callable[[Column], Column]:
    """Big-endian two's complement of an integer column in `width` bytes."""
    def build(column: Column) -> Column:
        digits = F.lpad(F.hex(column.cast("bigint")), 16, "0")
        return F.unhex(F.substring(digits, 17 - 2 * width, 2 * width))
    return build


def _double_bytes(column: Column) -> Column:
    def pack(values):
        import struct

        import pyarrow as pa

        return pa.array([None if v is None else struct.pack(">d", v) for v in values.to_pylist()],
                        pa.binary())

    import pyarrow as pa

    pack.__annotations__ = {"values": pa.Array, "return": pa.Array}
    return F.arrow_udf(pack, T.BinaryType())(column.cast("double"))


KAFKA_ENCODERS: dict[str, Callable[[Column], Column]] = {
    "INT": _fixed_width(4),
    "BIGINT": _fixed_width(8),
    "DOUBLE": _double_bytes,
    "STRING": _utf8,
    "BYTES": lambda c: c,
}


def _kafka(columns, fields, spec, role, registered):
    (column,), (field,) = columns, fields
    encode = KAFKA_ENCODERS.get(field.type.name)
    if encode is None:
        raise StatementError(f"The 'KAFKA' format does not support type '{field.type.name}'")
    return encode(column)


# ---------------------------------------------------------------- JSON, DELIMITED, NONE
_JSON_OPTIONS = {"ignoreNullFields": "false"}


def _json(columns, fields, spec, role, registered):
    ready = [_json_ready(c, f.type).alias(f.name) for c, f in zip(columns, fields)]
    if anonymous(fields, spec, role):
        wrapped = F.to_json(F.array(ready[0]), _JSON_OPTIONS)
        bare = F.substring(wrapped, F.lit(2), F.length(wrapped) - 2)  # [x] -> x
        return F.when(columns[0].isNotNull(), _utf8(bare))
    return _utf8(F.to_json(F.struct(*ready), _JSON_OPTIONS))


def _csv_cell(text: Column, first: bool, sep: str) -> Column:
    """A field's text quoted as `formats.delimited.needs_quotes` says (Commons CSV 1.4)."""
    head, tail = F.substring(text, 1, 1), F.substring(text, -1, 1)
    special = [F.instr(text, c) > 0 for c in ("\r", "\n", '"', sep)]
    quote = (head <= F.lit("#")) | (tail <= F.lit(" "))
    for found in special:
        quote = quote | found
    if first:
        quote = (text == F.lit("")) | ~head.rlike("^[0-9A-Za-z]$") | quote
    else:
        quote = (text != F.lit("")) & quote
    inner = F.replace(text, F.lit('"'), F.lit('""'))
    return F.coalesce(F.when(quote, F.concat(F.lit('"'), inner, F.lit('"'))).otherwise(text), F.lit(""))


def _delimited(columns, fields, spec, role, registered):
    from ..formats.delimited import delimiter

    sep = delimiter(spec, role)
    texts = [c if f.type.name == "STRING" else F.to_csv(F.struct(_json_ready(c, f.type).alias("_")), {"nullValue": ""})
             for c, f in zip(columns, fields)]
    nulls = [F.when(c.isNotNull(), t) for c, t in zip(columns, texts)]
    return _utf8(F.concat_ws(sep, *[_csv_cell(t, i == 0, sep) for i, t in enumerate(nulls)]))


def _none(columns, fields, spec, role, registered):
    return F.lit(None).cast("binary")


# ---------------------------------------------------------------- AVRO, JSON_SR (Arrow UDF)
def _framed_udf(kind: str, fields: Sequence[Field], bare: bool, registered: Registered):
    """An Arrow UDF: struct of the role's columns -> Confluent-framed AVRO or JSON_SR bytes."""
    import struct as struct_

    import pyarrow as pa

    names = [f.name for f in fields]
    types_ = [f.type for f in fields]
    schema_id, text = registered.schema_id, registered.text
    columnar = avro_columns.plan(text, names, bare) if kind == "AVRO" else None

    def encode(rows):
        if columnar is not None:  # whole columns at once: the fast path
            header = struct_.pack(">bI", 0, schema_id)
            return avro_columns.encode([rows.field(i) for i in range(len(names))], columnar, header, bare)
        return pa.array(frame_rows(kind, rows.to_pylist(), names, types_, bare, schema_id, text), pa.binary())

    encode.__annotations__ = {"rows": pa.Array, "return": pa.Array}
    return F.arrow_udf(encode, T.BinaryType())


#: ksql types whose Arrow Python values fastavro writes as they are (the others go through avro_value).
AVRO_AS_IS = frozenset({"BOOLEAN", "INT", "BIGINT", "DOUBLE", "STRING", "BYTES"})


def frame_rows(kind, rows, names, types_, bare, schema_id, text) -> list:
    """Rows (dicts or None) -> framed payloads; runs on the executors."""
    import io
    import struct

    header = struct.pack(">bI", 0, schema_id)
    if kind == "AVRO":
        import fastavro

        from ..formats.avro import avro_value

        parsed = fastavro.parse_schema(json.loads(text))
        converted = [(n, t) for n, t in zip(names, types_) if t.name not in AVRO_AS_IS]
        buffer, write = io.BytesIO(), fastavro.schemaless_writer

        def payload(row):
            if bare:
                datum = avro_value(row[names[0]], types_[0])
            else:  # Arrow's Python values already fit fastavro except for the converted types
                datum = row
                for n, t in converted:
                    datum[n] = avro_value(row[n], t)
            buffer.seek(0)
            buffer.truncate()
            write(buffer, parsed, datum)
            return buffer.getvalue()
    else:
        from ..formats.json_sr import json_value

        def payload(row):
            datum = (json_value(row[names[0]], types_[0]) if bare
                     else {n: json_value(row[n], t) for n, t in zip(names, types_)})
            return json.dumps(datum, separators=(",", ":")).encode()

    out = []
    for row in rows:
        if row is None or (bare and row[names[0]] is None):
            out.append(None)
        else:
            out.append(header + payload(row))
    return out


def _registry_format(kind: str):
    def build(columns, fields, spec, role, registered):
        if registered is None:
            raise StatementError(f"Internal error: no registered {kind} schema for the sink's {role}")
        struct = F.struct(*[c.alias(f.name) for c, f in zip(columns, fields)])
        return _framed_udf(kind, fields, anonymous(fields, spec, role), registered)(struct)
    return build


# ---------------------------------------------------------------- PROTOBUF, PROTOBUF_NOSR
def _protobuf(framed: bool):
    """PROTOBUF (`registered` schema, Confluent framing with message indexes [0]) or PROTOBUF_NOSR
    (the bare message ksqlDB derives from the columns). ksqlDB's PROTOBUF has no unwrapped
    singles: a single key column is the one field of a message too. PROTOBUF_NOSR's unwrapped
    single (key, or WRAP_SINGLE_VALUE=false) is ksqlDB's wrapper message (Int32Value, ...) of the
    value: the same bytes as that one-field message."""
    def build(columns, fields, spec, role, registered):
        import struct as struct_

        import pyarrow as pa

        from ..formats.protobuf_types import proto_text

        if framed and registered is None:
            raise StatementError(f"Internal error: no registered PROTOBUF schema for the sink's {role}")
        text = registered.text if framed else proto_text([(f.name, f.type) for f in fields])
        header = struct_.pack(">bI", 0, registered.schema_id) + b"\x00" if framed else b""
        names, single = [f.name for f in fields], anonymous(fields, spec, role)

        def encode_protobuf(rows):
            return pa.array(protobuf_rows(rows.to_pylist(), names, single, text, header), pa.binary())

        encode_protobuf.__annotations__ = {"rows": pa.Array, "return": pa.Array}
        struct = F.struct(*[c.alias(f.name) for c, f in zip(columns, fields)])
        return F.arrow_udf(encode_protobuf, T.BinaryType())(struct)
    return build


def protobuf_rows(rows, names, single, text, header) -> list:
    """Rows (dicts or None) -> `header` + the serialized first message of `text`; on executors.
    A NULL column is an unset field (proto3 has no NULL); a NULL `single` column (a key, or an
    unwrapped PROTOBUF_NOSR value) is a NULL record key or value."""
    from ..formats.protobuf import compiled
    from ..formats.protobuf_types import fill

    cls = compiled(text).message_class([0])
    out = []
    for row in rows:
        if row is None or (single and row[names[0]] is None):
            out.append(None)
            continue
        msg = cls()
        fill(msg, row)
        out.append(header + msg.SerializeToString())
    return out


def writer_encoded(fields: Sequence[Field], spec: FormatSpec, role: str,
                   registered: Registered | None) -> dict[str, str] | None:
    """The `kafkasql_sink` writer's options to Avro-encode `role` itself, from a struct column
    of the role's fields, when they are a record of optional primitives (`avro_columns`); else
    None. Encoding in the writer saves the Arrow UDF's own trip to a Python worker."""
    if registered is None or not fields or spec.name.upper() != "AVRO":
        return None
    bare = anonymous(fields, spec, role)
    columnar = avro_columns.plan(registered.text, [f.name for f in fields], bare)
    if columnar is None:
        return None
    return {f"{role}.avro.schemaId": str(registered.schema_id), f"{role}.avro.types": ",".join(columnar),
            f"{role}.avro.bare": str(bare).lower()}


#: Format name -> builder(columns, fields, spec, role, registered) -> binary Column.
ENCODERS = {
    "KAFKA": _kafka,
    "JSON": _json,
    "DELIMITED": _delimited,
    "NONE": _none,
    "AVRO": _registry_format("AVRO"),
    "JSON_SR": _registry_format("JSON"),
    "PROTOBUF": _protobuf(framed=True),
    "PROTOBUF_NOSR": _protobuf(framed=False),
}


def encode(columns: Sequence[Column], fields: Sequence[Field], spec: FormatSpec, role: str,
           registered: Registered | None = None) -> Column:
    """The binary Column holding `columns` serialized as `spec` for `role` ("key" / "value")."""
    if not fields:
        return F.lit(None).cast("binary")
    build = ENCODERS.get(spec.name.upper())
    if build is None:
        raise StatementError(f"Sinks cannot write the '{spec.name.upper()}' format yet.")
    return build(list(columns), list(fields), spec, role, registered)
