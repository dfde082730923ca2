"""AVRO: Confluent-framed Avro binary, decoded on the executors by one vectorised Arrow UDF.

Decoding is `arrow_udf(binary) -> struct<declared columns..., error>`. Per Arrow batch it
parses the 5-byte headers with numpy, groups records by schema id, fetches each writer schema
once per Python worker (cached), reads every record with `fastavro.schemaless_reader` from one
buffer, builds one Arrow array per schema id with `pyarrow.array(dicts)` and converts it to
the declared columns with Arrow kernels (`avro_types.plan`: fields matched by name
case-insensitively, so records written with a newer compatible schema are projected onto the
declared columns). It never raises for bad bytes: a wrong magic byte, an unknown schema id, an
unreachable registry or a truncated record yield NULL columns and an error message, and the
planner routes the record to the processing log.

Spark evaluates the UDF once per row when its struct is read by several columns only if the
projection stays put: the error column carries a nondeterministic no-op (see `_barrier`) so the
optimizer neither pushes filters below it nor merges it into later projections, which would
each call the UDF again.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Sequence

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .. import clientconf, types
from ..errors import StatementError
from ..sql import ast
from . import avro_types
from . import schema_registry as sr
from .avro_decode import ERROR_FIELD, Layout, decode_batch
from .base import Decoded, Field, Format, deserialization_error
from .json_errors import decode_error_text

#: FormatSpec option: one writer schema for every record (Materialize's AVRO USING SCHEMA).
INLINE_SCHEMA = "AVRO_SCHEMA"
#: FormatSpec option: False when records under an inline schema carry no Confluent header.
WIRE_FORMAT = "CONFLUENT_WIRE_FORMAT"
#: Option: the declared fields are fields of a record, even one field of a key (Materialize
#: flattens a record key into columns; ksql reads a one-column key as the whole key).
RECORD_FIELDS = "RECORD_FIELDS"


def _anonymous(fields: Sequence[Field], spec, role: str) -> bool:
    return len(fields) == 1 and not spec.options.get(RECORD_FIELDS) and (
        role == "key" or str(spec.options.get("WRAP_SINGLE_VALUE", "true")).lower() == "false")


def _barrier(error: Column) -> Column:
    """`error` unchanged, made nondeterministic so the decoding projection is evaluated once."""
    return F.coalesce(error, F.when(F.spark_partition_id() < F.lit(0), F.lit("")))


def exchange_type(dt: T.DataType) -> T.DataType:
    """The Spark type a UDF can return for `dt`: Arrow times come back as TIME(6) whatever
    their unit, so TIME(3) travels as TIME(6) and is cast back (see `_declared`)."""
    return types.with_time_as(dt, T.TimeType(6))


def _declared(column: Column, field: Field) -> Column:
    declared = types.to_spark(field.type)
    if exchange_type(declared) != declared:
        column = column.cast(declared)
    return column.alias(field.name)


def layout_for(fields: Sequence[Field], spec, role: str) -> Layout:
    """What decoding `fields` of `role` needs on the executors (the UDF's, or the reader's when
    the source decodes in its worker: kafka.worker_decoding)."""
    inline = spec.options.get(INLINE_SCHEMA)
    url = None if inline else sr.registry_url(spec, "AVRO")
    framed = inline is None or spec.options.get(WIRE_FORMAT, True) is not False
    registry = clientconf.registry_properties(url) if url else {}  # auth, outage timeout
    return Layout(tuple((f.name, f.type) for f in fields), _anonymous(fields, spec, role), url, inline, framed,
                  registry)


def struct_type(fields: Sequence[Field]) -> T.StructType:
    """The Spark type of `decode_batch`'s result: the declared columns and the error."""
    return T.StructType([T.StructField(f.name, exchange_type(types.to_spark(f.type))) for f in fields]
                        + [T.StructField(ERROR_FIELD, T.StringType())])


def from_struct(decoded: Column, fields: Sequence[Field], role: str) -> Decoded:
    """`decode_batch`'s struct (from the UDF or the reader's worker) -> the declared columns
    and the record's error."""
    columns = [_declared(decoded[f.name], f) for f in fields]
    reason = decoded[ERROR_FIELD]
    error = F.when(reason.isNotNull(), deserialization_error(role, reason))
    return Decoded(columns, _barrier(error))


class AvroFormat(Format):
    name = "AVRO"

    def check_spec(self, spec) -> None:
        """CREATE-time check (needs the spec, which `validate` does not get)."""
        if INLINE_SCHEMA not in spec.options:
            sr.registry_url(spec, self.name)

    def decode(self, raw, fields, spec, role):
        if not fields:
            return Decoded([])
        layout = layout_for(fields, spec, role)

        def decode_avro(values):
            return decode_batch(values, layout)

        import pyarrow as pa

        decode_avro.__annotations__ = {"values": pa.Array, "return": pa.Array}  # arrays -> array
        return from_struct(F.arrow_udf(decode_avro, struct_type(fields))(raw), fields, role)

    def encode(self, values, fields, spec, role):
        if not fields:
            return None
        anonymous = _anonymous(fields, spec, role)
        if anonymous and values[0] is None:
            return None
        import json

        if anonymous:
            datum = avro_value(values[0], fields[0].type)
        else:
            datum = {f.name: avro_value(v, f.type) for f, v in zip(fields, values)}
        existing = _existing_writer(spec, role, fields, anonymous, datum)
        if existing is not None:
            try:
                return sr.serialize("AVRO", spec, self.name, role, *existing)
            except StatementError:
                pass  # the registered schema does not take these values: register ours
        schema = avro_types.write_schema(fields, anonymous)
        return sr.serialize("AVRO", spec, self.name, role, json.dumps(schema), datum)


def _existing_writer(spec, role, fields, anonymous, datum):
    """(schema text, datum) for the subject's latest schema when it fits the declared columns
    (as ksqlDB writes with the registered schema): field names mapped case-insensitively."""
    latest = sr.latest_schema(sr.registry_url(spec, "AVRO"), sr.subject(sr.topic_of(spec, "AVRO"), role))
    if latest is None or latest.schema_type.upper() != "AVRO" or latest.references:
        return None
    import json

    writer = json.loads(latest.text)
    if not avro_types.is_record(writer):
        return (latest.text, datum) if anonymous else None
    record = avro_types.non_null(writer, "")
    values = {fields[0].name: datum} if anonymous else datum
    renamed = {}
    for f in fields:
        wf = avro_types.find_field(record, f.name)
        if wf is None:
            return None
        renamed[wf["name"]] = values[f.name]
    return latest.text, renamed


# ---------------------------------------------------------------- Python values -> Avro datum
def avro_value(value, t: ast.Type):
    """An INSERT VALUES value as fastavro writes it for `from_ksql(t)`."""
    import datetime as dt

    if value is None:
        return None
    if t.name == "DECIMAL":
        return Decimal(str(value)).quantize(Decimal(1).scaleb(-(t.scale or 0)))
    if t.name == "TIMESTAMP" and isinstance(value, dt.datetime) and value.tzinfo is None:
        return value.replace(tzinfo=dt.timezone.utc)
    if t.name == "DATE" and isinstance(value, int):
        return dt.date(1970, 1, 1) + dt.timedelta(days=value)
    if t.name == "ARRAY":
        return [avro_value(v, t.element) for v in value]
    if t.name == "MAP":
        return {str(k): avro_value(v, t.value) for k, v in value.items()}
    if t.name == "STRUCT":
        by_lower = {str(k).lower(): v for k, v in value.items()}
        return {n: avro_value(value.get(n, by_lower.get(n.lower())), ft) for n, ft in t.fields}
    if t.name == "DOUBLE":
        return float(value)
    return value


def avro_error_text(raw: bytes, reason: str) -> str:
    """A Confluent-framed Avro value's decoding error (`reason`, ours) in Materialize's words:
    `avro deserialization error: ` and what its decoder checks first (the 5-byte header, then
    the magic byte, in decimal), else the schema id with our reason for the body; then the
    record, as Materialize's DecodeError shows it."""
    if reason is None:  # decoded (Spark runs the UDF ahead of the CASE that guards it)
        return None
    if raw is None:  # not read again past the reader (kafka.worker_decoding): ours
        return reason
    if len(raw) < sr.HEADER_SIZE:
        message = f"Confluent-style avro datum is too few bytes: expected at least 5 bytes, got {len(raw)}"
    elif raw[0] != sr.MAGIC_BYTE:
        message = f"wrong Confluent-style avro serialization magic: expected 0, got {raw[0]}"
    else:
        schema_id = int.from_bytes(raw[1:5], "big", signed=True)
        detail = reason.removeprefix("Failed to deserialize value: ")
        if "not found in the schema registry" in detail or "Cannot fetch schema id" in detail:
            message = f"failed to resolve Avro schema (id = {schema_id}): {detail}"
        else:
            message = f"unable to decode row (Avro schema id = {schema_id}): " + detail.removeprefix(
                f"Error deserializing AVRO message for id {schema_id}: ")
    return decode_error_text(f"avro deserialization error: {message}", raw)


def materialize_decode_error(spec, raw: Column, error: Column) -> Column:
    """`error` (set where a value did not decode) in Materialize's words for a Confluent-framed
    Avro value (`avro_error_text`); an unframed one (an inline schema without the wire format)
    keeps ours."""
    if spec.options.get(INLINE_SCHEMA) is not None and spec.options.get(WIRE_FORMAT, True) is False:
        return error
    return F.coalesce(F.when(error.isNotNull(), F.udf(avro_error_text, "string")(raw, error)), error)
