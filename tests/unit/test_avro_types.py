"""Avro <-> ksql type mapping and the Arrow reading plan (no Spark session, no registry)."""

import datetime as dt
import io
import json
from decimal import Decimal

import fastavro
import pyarrow as pa
import pytest

from kafkasql_magic.formats import avro_types as at
from kafkasql_magic.formats import schema_registry as sr
from kafkasql_magic.formats.avro import avro_value
from kafkasql_magic.formats.avro_decode import Layout, decode_batch
from kafkasql_magic.formats.base import Field
from kafkasql_magic.sql import ast

T = ast.Type
INT, BIGINT, STRING, DOUBLE = T("INT"), T("BIGINT"), T("STRING"), T("DOUBLE")


@pytest.mark.parametrize("avro, ksql", [
    ("int", INT), ("long", BIGINT), ("float", DOUBLE), ("double", DOUBLE), ("string", STRING),
    ("boolean", T("BOOLEAN")), ("bytes", T("BYTES")),
    ({"type": "fixed", "name": "F", "size": 4}, T("BYTES")),
    ({"type": "enum", "name": "E", "symbols": ["A", "B"]}, STRING),
    ({"type": "bytes", "logicalType": "decimal", "precision": 6, "scale": 2}, T("DECIMAL", precision=6, scale=2)),
    ({"type": "fixed", "name": "D", "size": 8, "logicalType": "decimal", "precision": 10},
     T("DECIMAL", precision=10, scale=0)),
    ({"type": "int", "logicalType": "date"}, T("DATE")),
    ({"type": "int", "logicalType": "time-millis"}, T("TIME")),
    ({"type": "long", "logicalType": "time-micros"}, T("TIME")),
    ({"type": "long", "logicalType": "timestamp-millis"}, T("TIMESTAMP")),
    ({"type": "long", "logicalType": "timestamp-micros"}, T("TIMESTAMP")),
    ({"type": "string", "logicalType": "uuid"}, STRING),
    (["null", "long"], BIGINT), (["long", "null"], BIGINT),
    ({"type": "array", "items": ["null", "string"]}, T("ARRAY", element=STRING)),
    ({"type": "map", "values": "double"}, T("MAP", key=STRING, value=DOUBLE)),
    ({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"},
                                                 {"name": "b", "type": {"type": "array", "items": "long"}}]},
     T("STRUCT", fields=(("a", INT), ("b", T("ARRAY", element=BIGINT))))),
])
def test_avro_to_ksql(avro, ksql):
    assert at.to_ksql(avro) == ksql


def test_other_unions_name_the_field():
    schema = {"type": "record", "name": "R", "fields": [
        {"name": "outer", "type": {"type": "record", "name": "I", "fields": [
            {"name": "u", "type": ["null", "int", "string"]}]}}]}
    with pytest.raises(at.AvroTypeError, match=r"union \[null, int, string\] in field `outer.u` is not supported"):
        at.to_ksql(schema)


def test_columns_of_a_record_and_of_a_primitive():
    assert at.columns({"type": "record", "name": "R", "fields": [{"name": "id", "type": "int"}]}) == [("id", INT)]
    assert at.columns("string", "ROWKEY") == [("ROWKEY", STRING)]


ALL_TYPES = T("STRUCT", fields=(
    ("B", T("BOOLEAN")), ("I", INT), ("L", BIGINT), ("D", DOUBLE), ("DEC", T("DECIMAL", precision=5, scale=2)),
    ("S", STRING), ("BY", T("BYTES")), ("DA", T("DATE")), ("TI", T("TIME")), ("TS", T("TIMESTAMP")),
    ("A", T("ARRAY", element=T("STRUCT", fields=(("X", INT),)))), ("M", T("MAP", key=STRING, value=BIGINT))))


def test_ksql_to_avro_round_trips_and_is_a_valid_schema():
    schema = at.from_ksql(ALL_TYPES)
    fastavro.parse_schema(schema)
    assert at.to_ksql(schema) == ALL_TYPES
    anon = at.write_schema([Field("K", INT)], anonymous=True)
    assert anon == ["null", "int"]
    record = at.write_schema([Field("K", INT), Field("V", STRING)], anonymous=False)
    assert record["name"] == "KsqlDataSourceSchema" and record["namespace"] == "io.confluent.ksql.avro_schemas"
    assert record["fields"][0] == {"name": "K", "type": ["null", "int"], "default": None}


def test_reading_schema_strips_temporal_logical_types_but_keeps_decimal():
    schema = {"type": "record", "name": "R", "fields": [
        {"name": "d", "type": ["null", {"type": "int", "logicalType": "date"}]},
        {"name": "n", "type": {"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": 1}},
        {"name": "a", "type": {"type": "array", "items": {"type": "long", "logicalType": "timestamp-millis"}}}]}
    stripped = at.reading_schema(schema)
    assert stripped["fields"][0]["type"] == ["null", {"type": "int"}]
    assert stripped["fields"][1]["type"]["logicalType"] == "decimal"
    assert stripped["fields"][2]["type"]["items"] == {"type": "long"}


def encode(schema, datum) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(schema), datum)
    return buf.getvalue()


def read_as(schema, records, t):
    parsed, expanded = at.parse_writer(json.dumps(schema))
    plan = at.plan(expanded, t)
    values = [fastavro.schemaless_reader(io.BytesIO(encode(schema, r)), parsed) for r in records]
    return plan.conform(pa.array(values, type=plan.natural)).to_pylist()


def test_plan_reads_nested_values_case_insensitively_with_logical_types():
    schema = {"type": "record", "name": "R", "fields": [
        {"name": "When", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "at", "type": {"type": "long", "logicalType": "time-micros"}},
        {"name": "amt", "type": ["null", {"type": "bytes", "logicalType": "decimal", "precision": 6, "scale": 3}]},
        {"name": "items", "type": {"type": "array", "items": {"type": "record", "name": "I", "fields": [
            {"name": "Qty", "type": "int"}, {"name": "extra", "type": "string"}]}}},
        {"name": "m", "type": ["null", {"type": "map", "values": {"type": "enum", "name": "C", "symbols": ["X", "Y"]}}]},
    ]}
    declared = T("STRUCT", fields=(
        ("WHEN", T("TIMESTAMP")), ("DAY", T("DATE")), ("AT", T("TIME")), ("AMT", T("DECIMAL", precision=8, scale=3)),
        ("ITEMS", T("ARRAY", element=T("STRUCT", fields=(("QTY", BIGINT), ("GONE", STRING))))),
        ("M", T("MAP", key=STRING, value=STRING)), ("ABSENT", INT)))
    when = dt.datetime(2024, 3, 4, 5, 6, 7, 891011, tzinfo=dt.timezone.utc)
    rows = read_as(schema, [
        {"When": when, "day": dt.date(1999, 12, 31), "at": dt.time(23, 59, 59, 999999), "amt": Decimal("1.250"),
         "items": [{"Qty": 2, "extra": "e"}], "m": {"k": "Y"}},
        {"When": 0, "day": 0, "at": 0, "amt": None, "items": [], "m": None},
    ], declared)
    assert rows[0] == {"WHEN": when, "DAY": dt.date(1999, 12, 31), "AT": dt.time(23, 59, 59, 999999),
                       "AMT": Decimal("1.250"), "ITEMS": [{"QTY": 2, "GONE": None}], "M": [("k", "Y")], "ABSENT": None}
    assert rows[1]["AMT"] is None and rows[1]["M"] is None and rows[1]["ITEMS"] == []


@pytest.mark.parametrize("avro, ksql, message", [
    ("string", INT, "Avro type string in the schema cannot be read as INTEGER"),
    ("long", INT, "Avro type long in the schema cannot be read as INTEGER"),
    (["int", "string"], STRING, r"Avro union \[int, string\] in the schema is not supported"),
    ({"type": "array", "items": "int"}, STRING, "Avro type array<int> in the schema cannot be read as STRING"),
    ({"type": "record", "name": "R", "fields": [{"name": "a", "type": "boolean"}]},
     T("STRUCT", fields=(("A", INT),)), "Avro type boolean in field `A` cannot be read as INTEGER"),
])
def test_plan_refuses_types_that_do_not_fit(avro, ksql, message):
    with pytest.raises(at.AvroTypeError, match=message):
        at.plan(avro, ksql)


def test_plan_widens_numbers():
    assert read_as("int", [1, -2], BIGINT) == [1, -2]
    assert read_as("float", [0.5], DOUBLE) == [0.5]
    assert read_as("long", [3], T("DECIMAL", precision=4, scale=1)) == [Decimal("3.0")]


# ---------------------------------------------------------------- the batch decoder, registry faked
USER = {"type": "record", "name": "U", "fields": [{"name": "ID", "type": "int"}, {"name": "name", "type": "string"}]}


@pytest.fixture
def fake_registry(monkeypatch):
    schemas = {1: json.dumps(USER), 2: json.dumps("long")}

    def lookup(url, schema_id, conf=None):
        if schema_id not in schemas:
            raise sr.SchemaLookupError(f"Schema id {schema_id} not found in the schema registry at {url}")
        return sr.Registered("AVRO", schemas[schema_id])

    monkeypatch.setattr(sr, "schema_by_id", lookup)
    from kafkasql_magic.formats import avro_decode as avro

    avro._readers.clear()
    yield
    avro._readers.clear()


def test_decode_batch_mixes_schema_ids_and_errors_in_row_order(fake_registry):
    layout = Layout((("ID", INT), ("NAME", STRING)), False, "http://r")
    good = sr.frame(1, encode(USER, {"ID": 7, "name": "x"}))
    rows = decode_batch(pa.array([
        good, None, b"\x07abcde", sr.frame(5, b"\x02"), good[:-1], sr.frame(2, encode("long", 3)), good,
    ], pa.binary()), layout).to_pylist()
    err = "__kafkasql_avro_error__"
    assert [(r["ID"], r["NAME"]) for r in rows] == [(7, "x"), (None, None), (None, None), (None, None),
                                                    (None, None), (None, None), (7, "x")]
    assert [r[err] for r in rows][:2] == [None, None] and rows[6][err] is None
    assert rows[2][err] == "Unknown magic byte! (got 0x07, expected 0x00)"
    assert rows[3][err] == "Schema id 5 not found in the schema registry at http://r"
    assert rows[4][err].startswith("Error deserializing AVRO message for id 1")
    assert rows[5][err].startswith("Schema id 2 does not match the declared columns: the schema is long")


def test_decode_batch_anonymous_key_and_large_binary(fake_registry):
    layout = Layout((("K", BIGINT),), True, "http://r")
    data = pa.array([sr.frame(2, encode("long", v)) for v in (1, -5)] + [None], pa.large_binary())
    assert [r["K"] for r in decode_batch(data.slice(0, 3), layout).to_pylist()] == [1, -5, None]
    # a single wrapped column read from a record by name
    layout = Layout((("NAME", STRING),), True, "http://r")
    assert decode_batch(pa.array([sr.frame(1, encode(USER, {"ID": 1, "name": "n"}))]), layout).to_pylist()[0]["NAME"] == "n"


def test_a_value_that_does_not_convert_fails_only_its_row(fake_registry):
    layout = Layout((("ID", T("DECIMAL", precision=2, scale=0)), ("NAME", STRING)), False, "http://r")
    rows = decode_batch(pa.array([sr.frame(1, encode(USER, {"ID": i, "name": "n"})) for i in (5, 500, 6)]),
                        layout).to_pylist()
    assert [r["ID"] for r in rows] == [Decimal(5), None, Decimal(6)]
    assert rows[1]["__kafkasql_avro_error__"].startswith("Cannot convert the AVRO record to the declared columns")


def test_avro_values_for_insert():
    assert avro_value(Decimal("1.5"), T("DECIMAL", precision=4, scale=2)) == Decimal("1.50")
    assert avro_value({"x": 1}, T("STRUCT", fields=(("X", DOUBLE),))) == {"X": 1.0}
    assert avro_value(3, T("DATE")) == dt.date(1970, 1, 4)
    assert avro_value(dt.datetime(2020, 1, 1), T("TIMESTAMP")).tzinfo == dt.timezone.utc


def test_framing():
    assert sr.unframe(sr.frame(258, b"p")) == (258, b"p")
    with pytest.raises(ValueError, match="Unknown magic byte"):
        sr.unframe(b"\x01\x00\x00\x00\x01")
