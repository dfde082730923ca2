"""The column-at-a-time Avro encoder writes exactly fastavro's bytes, and declines schemas it does not write."""

import io
import json
import struct

import fastavro
import pyarrow as pa
import pytest

from kafkasql_magic.sinks import avro_columns

HEADER = struct.pack(">bI", 0, 42)
FIELDS = [("ID", "long", pa.int64()), ("NAME", "string", pa.string()), ("AMOUNT", "double", pa.float64()),
          ("OK", "boolean", pa.bool_()), ("RAW", "bytes", pa.binary()), ("N", "int", pa.int32())]


def record_schema(fields=FIELDS) -> dict:
    return {"type": "record", "name": "KsqlDataSourceSchema", "namespace": "io.confluent.ksql.avro_schemas",
            "fields": [{"name": n, "type": ["null", t], "default": None} for n, t, _ in fields]}


def fastavro_bytes(schema, datum) -> bytes:
    out = io.BytesIO()
    out.write(HEADER)
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), datum)
    return out.getvalue()


def test_records_match_fastavro_byte_for_byte():
    rows = [{"ID": v, "NAME": None if i % 4 == 0 else f"n{i}é" * (i % 3), "AMOUNT": None if i % 5 == 0 else i / 3,
             "OK": [True, False, None][i % 3], "RAW": b"\x00\xff" * (i % 70), "N": None if i % 6 == 0 else -i}
            for i, v in enumerate([0, 1, -1, 63, 64, -64, -65, 2**31, -2**31, 2**62, 2**63 - 1, -2**63, 300, -300])]
    schema = record_schema()
    types_ = avro_columns.plan(json.dumps(schema), [n for n, _, _ in FIELDS], bare=False)
    assert types_ == [t for _, t, _ in FIELDS]
    table = pa.array(rows, pa.struct([(n, a) for n, _, a in FIELDS]))
    got = avro_columns.encode([table.field(i) for i in range(len(FIELDS))], types_, HEADER, bare=False)
    assert got.type == pa.binary()
    assert got.to_pylist() == [fastavro_bytes(schema, r) for r in rows]


def test_a_bare_value_and_its_null():
    schema = ["null", "string"]
    assert avro_columns.plan(json.dumps(schema), ["V"], bare=True) == ["string"]
    got = avro_columns.encode([pa.array(["x", None, ""])], ["string"], HEADER, bare=True).to_pylist()
    assert got == [fastavro_bytes(schema, "x"), None, fastavro_bytes(schema, "")]


@pytest.mark.parametrize("schema, names", [
    ({"type": "record", "name": "R", "fields": [{"name": "T", "type": ["null", {"type": "long",
                                                 "logicalType": "timestamp-millis"}]}]}, ["T"]),
    ({"type": "record", "name": "R", "fields": [{"name": "A", "type": ["null", {"type": "array",
                                                 "items": ["null", "long"]}]}]}, ["A"]),
    ({"type": "record", "name": "R", "fields": [{"name": "A", "type": "long"}]}, ["A"]),  # not optional
    (record_schema(), ["NAME", "ID", "AMOUNT", "OK", "RAW", "N"]),  # another field order
])
def test_other_schemas_keep_the_record_by_record_path(schema, names):
    assert avro_columns.plan(json.dumps(schema), names, bare=False) is None


def test_the_sink_writer_encodes_a_struct_value_as_the_udf_would():
    """A CSAS's Avro value is encoded in the `kafkasql_sink` writer from a struct column (one
    Python worker hop fewer): the same bytes, and a NULL struct stays a tombstone."""
    from kafkasql_magic.formats import Field, FormatSpec
    from kafkasql_magic.kafka.writer import SinkOptions, _values
    from kafkasql_magic.sinks.encode import Registered, writer_encoded
    from kafkasql_magic.sql import ast

    fields = [Field("ID", ast.Type("BIGINT")), Field("NAME", ast.Type("STRING"))]
    schema = record_schema(FIELDS[:2])
    options = writer_encoded(fields, FormatSpec("AVRO"), "value", Registered(42, json.dumps(schema)))
    assert options == {"value.avro.schemaId": "42", "value.avro.types": "long,string", "value.avro.bare": "false"}
    parsed = SinkOptions.parse({"bootstrap.servers": "b:1", "topic": "t", **options})
    rows = [{"ID": 1, "NAME": "a"}, None, {"ID": None, "NAME": "é"}]
    value = pa.array(rows, pa.struct([("ID", pa.int64()), ("NAME", pa.string())]))
    batch = pa.RecordBatch.from_arrays([value], ["value"])
    assert _values(batch, parsed) == [fastavro_bytes(schema, rows[0]), None, fastavro_bytes(schema, rows[2])]
    assert writer_encoded(fields, FormatSpec("JSON"), "value", None) is None
    nested = [Field("M", ast.Type("MAP", (ast.Type("STRING"), ast.Type("INT"))))]
    nested_schema = {"type": "record", "name": "S", "fields": [
        {"name": "M", "type": ["null", {"type": "map", "values": ["null", "int"]}], "default": None}]}
    assert writer_encoded(nested, FormatSpec("AVRO"), "value", Registered(1, json.dumps(nested_schema))) is None
