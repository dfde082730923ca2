"""Schema inference (registry schemas -> ksql columns), guessing from records, CREATE statements.

Pure: no broker, no Spark session; the registry is a fake client (or a closed loopback port)."""

from __future__ import annotations

import json
import socket
import struct
import time

import pytest
from confluent_kafka.schema_registry.error import SchemaRegistryError

from kafkasql_magic import sql
from kafkasql_magic.dialects import ksql_sources as ddl
from kafkasql_magic.errors import StatementError
from kafkasql_magic.formats.json_sr import json_schema
from kafkasql_magic.registry import inference as inf
from kafkasql_magic.registry import json_schema_types as jst
from kafkasql_magic.registry.guess import Guess, guess
from kafkasql_magic.sql import ast

T = ast.Type
INT, BIGINT, STRING, DOUBLE = T("INT"), T("BIGINT"), T("STRING"), T("DOUBLE")
BOOLEAN, BYTES = T("BOOLEAN"), T("BYTES")


#: CREATE validation only checks that a registry URL is configured; nothing is fetched.
WITH_REGISTRY = {ddl.SCHEMA_REGISTRY_URL: "http://127.0.0.1:1"}


def reg(text, schema_type="AVRO", subject="t-value", schema_id=7, version=3, refs=()):
    text = text if isinstance(text, str) else json.dumps(text)
    return inf.RegisteredVersion(subject, schema_id, version, schema_type, text, tuple(refs))


def record(*fields, name="R"):
    return {"type": "record", "name": name, "fields": [{"name": n, "type": t} for n, t in fields]}


def value_cols(schema, schema_type="AVRO"):
    return inf.columns_of(schema_type, json.dumps(schema), "value")


# ---------------------------------------------------------------- Avro
@pytest.mark.parametrize("avro, ksql", [
    ("boolean", BOOLEAN), ("int", INT), ("long", BIGINT), ("float", DOUBLE), ("double", DOUBLE),
    ("string", STRING), ("bytes", BYTES), ({"type": "fixed", "name": "F", "size": 2}, BYTES),
    ({"type": "enum", "name": "E", "symbols": ["A"]}, STRING),
    ({"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 3}, T("DECIMAL", precision=9, scale=3)),
    ({"type": "int", "logicalType": "date"}, T("DATE")),
    ({"type": "int", "logicalType": "time-millis"}, T("TIME")),
    ({"type": "long", "logicalType": "timestamp-millis"}, T("TIMESTAMP")),
    (["null", "string"], STRING),
    ({"type": "array", "items": ["null", "long"]}, T("ARRAY", element=BIGINT)),
    ({"type": "map", "values": "int"}, T("MAP", key=STRING, value=INT)),
])
def test_avro_field_types(avro, ksql):
    cols, wrapped = value_cols(record(("f", avro)))
    assert cols == [("F", ksql)] and wrapped


def test_avro_record_value_gives_upper_cased_columns_nested_too():
    schema = record(("id", "long"), ("userName", ["null", "string"]),
                    ("addr", record(("city", "string"), ("zipCode", "int"), name="Addr")))
    cols, wrapped = value_cols(schema)
    assert wrapped
    assert cols == [("ID", BIGINT), ("USERNAME", STRING),
                    ("ADDR", T("STRUCT", fields=(("CITY", STRING), ("ZIPCODE", INT))))]


def test_avro_named_type_reused_and_references():
    inner = record(("x", "int"), name="ns.Inner")
    outer = {"type": "record", "name": "Outer", "fields": [
        {"name": "a", "type": "ns.Inner"}, {"name": "b", "type": ["null", "ns.Inner"]}]}
    cols, _ = inf.columns_of("AVRO", json.dumps(outer), "value", (json.dumps(inner),))
    assert cols == [("A", T("STRUCT", fields=(("X", INT),))), ("B", T("STRUCT", fields=(("X", INT),)))]


def test_avro_non_record_value_is_rowval_unwrapped():
    assert value_cols("string") == ([("ROWVAL", STRING)], False)
    assert value_cols(["null", {"type": "array", "items": "int"}]) == ([("ROWVAL", T("ARRAY", element=INT))], False)


def test_avro_keys_are_one_rowkey_column():
    assert inf.columns_of("AVRO", '"long"', "key") == ([("ROWKEY", BIGINT)], False)
    cols, _ = inf.columns_of("AVRO", json.dumps(record(("id", "int"), ("region", "string"))), "key")
    assert cols == [("ROWKEY", T("STRUCT", fields=(("ID", INT), ("REGION", STRING))))]


def test_avro_other_unions_are_an_error_naming_the_field():
    value = reg(record(("outer", record(("u", ["null", "int", "string"]), name="I"))))
    with pytest.raises(StatementError) as err:
        inf.infer_from("t", key_format="KAFKA", value_format="AVRO", value=value)
    msg = str(err.value)
    assert "field `outer.u`" in msg and "union [null, int, string]" in msg
    assert "subject t-value" in msg and "schema id 7" in msg


def test_avro_unsupported_type_names_the_field():
    with pytest.raises(ValueError, match="field `n`"):
        value_cols(record(("n", "null")))


def test_avro_fields_clashing_once_upper_cased():
    with pytest.raises(StatementError, match="`id` and `ID`"):
        inf.infer_from("t", key_format="KAFKA", value_format="AVRO", value=reg(record(("id", "int"), ("ID", "long"))))


# ---------------------------------------------------------------- JSON Schema
def obj(**props):
    return {"type": "object", "properties": props}


@pytest.mark.parametrize("schema, ksql", [
    ({"type": "string"}, STRING), ({"type": "integer"}, BIGINT), ({"type": "number"}, DOUBLE),
    ({"type": "boolean"}, BOOLEAN),
    ({"type": "integer", "connect.type": "int32"}, INT), ({"type": "integer", "connect.type": "int8"}, INT),
    ({"type": "integer", "connect.type": "int64"}, BIGINT),
    ({"type": "string", "connect.type": "bytes"}, BYTES),
    ({"type": "string", "enum": ["a", "b"]}, STRING), ({"enum": ["a", "b"]}, STRING),
    ({"type": "string", "format": "date-time"}, STRING),
    ({"type": "array", "items": {"type": "number"}}, T("ARRAY", element=DOUBLE)),
    ({"type": "object", "additionalProperties": {"type": "integer"}}, T("MAP", key=STRING, value=BIGINT)),
    ({"type": "object", "connect.type": "map", "additionalProperties": {"type": "string"}},
     T("MAP", key=STRING, value=STRING)),
    ({"type": "array", "connect.type": "map", "items": {"type": "object", "properties": {
        "key": {"type": "integer"}, "value": {"type": "boolean"}}}}, T("MAP", key=STRING, value=BOOLEAN)),
    ({"oneOf": [{"type": "null"}, {"type": "integer"}]}, BIGINT),
    ({"anyOf": [{"type": "string"}, {"type": "null"}]}, STRING),
    ({"type": ["null", "boolean"]}, BOOLEAN),
    (obj(a={"type": "integer"}), T("STRUCT", fields=(("A", BIGINT),))),
])
def test_json_schema_types(schema, ksql):
    assert jst.to_ksql(schema) == ksql


@pytest.mark.parametrize("ksql", [
    BOOLEAN, INT, BIGINT, DOUBLE, STRING, BYTES, T("DATE"), T("TIME"), T("TIMESTAMP"),
    T("DECIMAL", precision=6, scale=2), T("ARRAY", element=INT), T("MAP", key=STRING, value=DOUBLE),
    T("STRUCT", fields=(("A", INT), ("B", T("ARRAY", element=STRING)))),
])
def test_json_schema_round_trips_what_json_sr_writes(ksql):
    assert jst.to_ksql(json_schema(ksql)) == ksql


def test_json_schema_object_value_columns_in_connect_index_order():
    schema = {"type": "object", "title": "KsqlDataSourceSchema", "properties": {
        "b": {"oneOf": [{"type": "null"}, {"type": "string"}], "connect.index": 1},
        "a": {"oneOf": [{"type": "null"}, {"type": "integer", "connect.type": "int32"}], "connect.index": 0}}}
    assert value_cols(schema, "JSON") == ([("A", INT), ("B", STRING)], True)


def test_json_schema_local_refs_are_followed():
    schema = {"type": "object", "properties": {"home": {"$ref": "#/definitions/Addr"},
                                               "work": {"$ref": "#/$defs/Addr"}},
              "definitions": {"Addr": obj(city={"type": "string"})}, "$defs": {"Addr": obj(zip={"type": "integer"})}}
    assert jst.to_ksql(schema) == T("STRUCT", fields=(("HOME", T("STRUCT", fields=(("CITY", STRING),))),
                                                      ("WORK", T("STRUCT", fields=(("ZIP", BIGINT),)))))


def test_json_schema_non_object_value_is_rowval_and_keys_rowkey():
    assert value_cols({"type": "string"}, "JSON") == ([("ROWVAL", STRING)], False)
    assert inf.columns_of("JSON", json.dumps(obj(id={"type": "integer"})), "key") == (
        [("ROWKEY", T("STRUCT", fields=(("ID", BIGINT),)))], False)


@pytest.mark.parametrize("schema, message", [
    (obj(x={"oneOf": [{"type": "string"}, {"type": "integer"}]}), "oneOf with 2 non-null types in field `x`"),
    (obj(x={"type": ["string", "integer", "null"]}), "in field `x` is not supported"),
    (obj(x={}), "field `x` accepts any JSON value"),
    (obj(x={"type": "object"}), "object in field `x` declares no properties"),
    (obj(x={"type": "array"}), "array in field `x` needs one `items`"),
    (obj(x={"$ref": "other.json#/X"}), "reference 'other.json#/X' in field `x` is not supported"),
    (obj(x={"$ref": "#/definitions/nope"}), "points nowhere"),
    ({"type": "object", "properties": {"n": {"$ref": "#"}}}, "recursive"),
    (obj(x={"type": "null"}), "type 'null' in field `x`"),
])
def test_json_schema_errors_name_the_field(schema, message):
    with pytest.raises(jst.JsonSchemaTypeError, match=message.replace("[", r"\[").replace("(", r"\(")):
        jst.to_ksql(schema)


# ---------------------------------------------------------------- infer_from / formats
def test_infer_from_fills_key_and_value_details():
    key, value = reg('"string"', subject="t-key", schema_id=1, version=1), reg(record(("v", "int")))
    got = inf.infer_from("t", key_format="AVRO", value_format="AVRO", key=key, value=value)
    assert got.key_columns == [("ROWKEY", STRING)] and got.value_columns == [("V", INT)]
    assert (got.key_subject, got.key_schema_id, got.key_version, got.key_schema_type) == ("t-key", 1, 1, "AVRO")
    assert (got.value_subject, got.value_schema_id, got.value_version) == ("t-value", 7, 3)
    assert got.value_schema == value.text and got.key_inferred and got.value_inferred and not got.is_guess


def test_infer_from_without_key_schema_leaves_key_empty():
    got = inf.infer_from("t", key_format="KAFKA", value_format="JSON_SR",
                         value=reg(obj(a={"type": "boolean"}), "JSON"))
    assert got.key_columns == [] and got.key_subject is None and got.key_schema_id is None
    assert got.value_columns == [("A", BOOLEAN)]


def test_schema_type_mismatch_suggests_the_format():
    with pytest.raises(StatementError, match="You may want to set VALUE_FORMAT to 'JSON_SR'"):
        inf.infer_from("t", key_format="KAFKA", value_format="AVRO", value=reg(obj(a={"type": "string"}), "JSON"))
    with pytest.raises(StatementError, match="KEY_FORMAT to 'AVRO'"):
        inf.infer_from("t", key_format="JSON_SR", value_format="KAFKA", key=reg('"int"', subject="t-key"))


def test_protobuf_message_fields_become_columns_as_ksqldb_maps_them():
    proto = """syntax = "proto3";
    import "google/protobuf/timestamp.proto";
    message M { int32 a = 1; uint32 u = 2; repeated string tags = 3; map<string, int64> m = 4;
      google.protobuf.Timestamp ts = 5; Inner inner = 6; oneof pick { string s = 7; bool b = 8; }
      E e = 9; float f = 10;
      message Inner { bytes raw = 1; }
      enum E { X = 0; } }"""
    got = inf.infer_from("t", key_format="KAFKA", value_format="PROTOBUF", value=reg(proto, "PROTOBUF"))
    assert got.value_columns == [
        ("A", INT), ("U", BIGINT), ("TAGS", ast.Type("ARRAY", element=STRING)),
        ("M", ast.Type("MAP", key=STRING, value=BIGINT)), ("TS", ast.Type("TIMESTAMP")),
        ("INNER", ast.Type("STRUCT", fields=(("RAW", ast.Type("BYTES")),))),
        ("PICK_0", ast.Type("STRUCT", fields=(("S", STRING), ("B", BOOLEAN)))),
        ("E", STRING), ("F", ast.Type("DOUBLE"))]
    assert got.value_wrapped


def test_a_protobuf_key_of_one_field_is_that_fields_type_and_references_compile_by_name():
    dep = 'syntax = "proto3"; package acme; message Id { string v = 1; }'
    key = reg('syntax = "proto3"; import "acme/id.proto"; message K { acme.Id id = 1; }', "PROTOBUF",
              subject="t-key")
    key = inf.RegisteredVersion(key.subject, 1, 1, "PROTOBUF", key.text, (dep,), ("acme/id.proto",))
    got = inf.infer_from("t", key_format="PROTOBUF", value_format="KAFKA", key=key)
    assert got.key_columns == [("ROWKEY", ast.Type("STRUCT", fields=(("V", STRING),)))]


def test_a_protobuf_schema_that_does_not_compile_names_the_line():
    with pytest.raises(StatementError, match=r"does not compile: .*:1:\d+: Expected"):
        inf.infer_from("t", key_format="KAFKA", value_format="PROTOBUF",
                       value=reg('syntax = "proto3"; message M { int32 a = 1 }', "PROTOBUF"))


class FakeClient:
    """The SchemaRegistryClient calls inference makes, over a dict of subjects."""

    def __init__(self, subjects):
        self.subjects = subjects  # subject -> [(id, Schema-like), ...] by version

    @staticmethod
    def missing(what):
        return SchemaRegistryError(404, 40401, f"{what} not found")

    def get_subjects(self):
        return list(self.subjects)

    def get_latest_version(self, name):
        from confluent_kafka.schema_registry import RegisteredSchema, Schema

        if name not in self.subjects:
            raise self.missing(f"Subject '{name}'")
        versions = self.subjects[name]
        sid, (text, kind) = versions[-1]
        return RegisteredSchema(schema_id=sid, guid=None, schema=Schema(text, kind), subject=name,
                                version=len(versions))

    def get_schema(self, schema_id):
        from confluent_kafka.schema_registry import Schema

        for versions in self.subjects.values():
            for sid, (text, kind) in versions:
                if sid == schema_id:
                    return Schema(text, kind)
        raise self.missing(f"Schema {schema_id}")

    def get_schema_versions(self, schema_id):
        from collections import namedtuple

        SchemaVersion = namedtuple("SchemaVersion", "subject version")
        return [SchemaVersion(s, i + 1) for s, vs in self.subjects.items() for i, (sid, _) in enumerate(vs)
                if sid == schema_id]


@pytest.fixture
def fake_registry(monkeypatch):
    client = FakeClient({
        "t-key": [(1, ('"long"', "AVRO"))],
        "t-value": [(2, (json.dumps(record(("a", "int"))), "AVRO")),
                    (3, (json.dumps(record(("a", "int"), ("b", "string"))), "AVRO"))],
        "other-value": [(4, (json.dumps(obj(x={"type": "number"})), "JSON"))],
    })
    monkeypatch.setattr(inf, "registry_client", lambda url: client)
    return client


def test_infer_uses_latest_versions(fake_registry):
    got = inf.infer("http://reg", "t", key_format="avro", value_format="AVRO")
    assert got.key_columns == [("ROWKEY", BIGINT)] and got.value_columns == [("A", INT), ("B", STRING)]
    assert (got.value_schema_id, got.value_version, got.value_pinned) == (3, 2, False)


def test_infer_with_pinned_schema_id(fake_registry):
    got = inf.infer("http://reg", "t", key_format="KAFKA", value_format="AVRO", value_schema_id=2)
    assert got.value_columns == [("A", INT)] and (got.value_version, got.value_pinned_id) == (1, 2)
    text = inf.create_statement("S", "t", got, key_format="KAFKA", value_format="AVRO")
    assert "VALUE_SCHEMA_ID=2" in text


def test_infer_json_sr_and_non_inferable_formats(fake_registry):
    got = inf.infer("http://reg", "other", key_format="NONE", value_format="JSON_SR")
    assert got.value_columns == [("X", DOUBLE)] and got.value_schema_type == "JSON"
    plain = inf.infer("http://reg", "t", key_format="KAFKA", value_format="JSON")
    assert plain.key_columns == plain.value_columns == [] and plain.value_schema_id is None


def test_missing_subject_names_subject_and_url(fake_registry):
    with pytest.raises(StatementError) as err:
        inf.infer("http://reg", "nope", key_format="KAFKA", value_format="AVRO")
    assert "Subject: nope-value" in str(err.value) and "http://reg" in str(err.value)
    with pytest.raises(StatementError, match="Subject: other-key"):
        inf.infer("http://reg", "other", key_format="JSON_SR", value_format="JSON_SR")
    with pytest.raises(StatementError, match="Schema id 99 not found in the Schema Registry at http://reg"):
        inf.infer("http://reg", "t", key_format="KAFKA", value_format="AVRO", value_schema_id=99)


def test_latest_schema_of_returns_the_expanded_avro_schema(fake_registry):
    from kafkasql_magic.formats import avro_types

    schema = inf.latest_schema_of("http://reg", "t", "value")
    assert avro_types.is_record(schema) and [f["name"] for f in schema["fields"]] == ["a", "b"]
    with pytest.raises(StatementError, match="holds a JSON schema, not AVRO"):
        inf.latest_schema_of("http://reg", "other", "value")
    with pytest.raises(StatementError, match="Subject: nope-key"):
        inf.latest_schema_of("http://reg", "nope", "key")


def test_registry_down_names_the_url_quickly():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    url = f"http://127.0.0.1:{port}"
    start = time.monotonic()
    for call in (lambda: inf.infer(url, "t", key_format="KAFKA", value_format="AVRO"),
                 lambda: inf.latest_schema_of(url, "t", "value"), lambda: inf.subjects(url)):
        with pytest.raises(StatementError, match=f"Schema registry at {url} is not reachable"):
            call()
    assert time.monotonic() - start < 5


def test_registry_url_required_for_inferable_formats():
    with pytest.raises(StatementError, match="requires a schema registry URL"):
        inf.infer("", "t", key_format="KAFKA", value_format="AVRO")
    assert inf.infer("", "t", key_format="KAFKA", value_format="JSON").value_columns == []


# ---------------------------------------------------------------- guessing from records
def rec(key=None, value=None):
    return {"key": key, "value": value, "headers": [], "topic": "t", "partition": 0, "offset": 0, "timestamp": 0}


def test_guess_merges_json_objects():
    g = guess([rec(b"k1", b'{"id": 1, "name": "a", "tags": ["x"], "addr": {"city": "P"}}'),
               rec(b"k2", b'{"id": 2, "score": 1.5, "addr": {"zip": 75}, "maybe": null}'),
               rec(b"k3", b'{"id": 3.5, "name": null, "tags": []}')])
    assert isinstance(g, Guess) and g.is_guess and g.sampled == 3
    assert g.value_format == "JSON" and g.value_wrapped
    assert g.value_columns == [
        ("ID", DOUBLE), ("NAME", STRING), ("TAGS", T("ARRAY", element=STRING)),
        ("ADDR", T("STRUCT", fields=(("CITY", STRING), ("ZIP", BIGINT)))), ("SCORE", DOUBLE), ("MAYBE", STRING)]
    assert any("`MAYBE` was null in every sampled record" in n for n in g.notes)
    assert g.key_format == "KAFKA" and g.key_columns == [("ROWKEY", STRING)]
    assert "Guess from 3 sampled record(s)" in g.summary() and "not from a registered schema" in g.summary()


def test_guess_mixed_types_become_string_with_a_note():
    g = guess([rec(None, b'{"v": 1}'), rec(None, b'{"v": "one"}')])
    assert g.value_columns == [("V", STRING)]
    assert any("`V` holds both BIGINT and STRING" in n for n in g.notes)


@pytest.mark.parametrize("keys, fmt, ktype", [
    ([struct.pack(">i", 1), struct.pack(">i", 70000)], "KAFKA", INT),
    ([struct.pack(">q", 5), struct.pack(">q", 1)], "KAFKA", BIGINT),
    ([struct.pack(">q", 1_700_000_000_000), struct.pack(">q", 1_800_000_000_000)], "KAFKA", BIGINT),
    ([b"alice", "bob"], "KAFKA", STRING), ([b"123", b"456"], "KAFKA", STRING),
    ([b'{"id": 1}', b'{"id": 2, "r": "eu"}'], "JSON", T("STRUCT", fields=(("ID", BIGINT), ("R", STRING)))),
    ([b'"a"', b'"b"'], "JSON", STRING),
    ([b"\x01\x02\xff", b"\xfe"], "KAFKA", BYTES),
])
def test_guess_key_formats(keys, fmt, ktype):
    g = guess([rec(k, b"{}") for k in keys])
    assert (g.key_format, g.key_columns) == (fmt, [("ROWKEY", ktype)])


def test_guess_null_keys_mean_no_key():
    g = guess([rec(None, b'{"a": 1}'), rec(None, b'{"a": 2}')])
    assert g.key_format == "NONE" and g.key_columns == []
    assert "CREATE STREAM S (\n  A BIGINT\n) WITH (KAFKA_TOPIC='t', KEY_FORMAT='NONE', VALUE_FORMAT='JSON');" == \
        inf.create_statement("S", "t", g, key_format=g.key_format, value_format=g.value_format)


def test_guess_schema_registry_framing():
    avro = b"\x00" + (5).to_bytes(4, "big") + b"\x02\x04ab"
    jsr = b"\x00" + (6).to_bytes(4, "big") + b'{"a": true}'
    g = guess([rec(avro, jsr), rec(avro, jsr)])
    assert (g.key_format, g.key_schema_ids, g.key_columns) == ("AVRO", (5,), [])
    assert (g.value_format, g.value_schema_ids, g.value_columns) == ("JSON_SR", (6,), [("A", BOOLEAN)])
    assert any("schema id(s) 5" in n for n in g.notes)


def test_guess_delimited_and_plain_text_values():
    g = guess([rec(b"1", b"1,alice,2.5"), rec(b"2", b"2,bob,3")])
    assert g.value_format == "DELIMITED"
    assert g.value_columns == [("COLUMN1", BIGINT), ("COLUMN2", STRING), ("COLUMN3", DOUBLE)]
    text = guess([rec(None, b"hello world"), rec(None, b"bye")])
    assert (text.value_format, text.value_columns, text.value_wrapped) == ("KAFKA", [("ROWVAL", STRING)], False)
    arrays = guess([rec(None, b"[1, 2]"), rec(None, b"[]")])
    assert (arrays.value_format, arrays.value_columns) == ("JSON", [("ROWVAL", T("ARRAY", element=BIGINT))])
    assert "WRAP_SINGLE_VALUE=false" in inf.create_statement("S", "t", arrays, key_format="NONE",
                                                             value_format="JSON")
    assert "WRAP_SINGLE_VALUE" not in inf.create_statement("S", "t", text, key_format="NONE", value_format="KAFKA")


def test_guess_without_records():
    g = guess([])
    assert g.sampled == 0 and g.value_format is None and "no records" in g.summary()
    tombstones = guess([rec(b"k", None)])
    assert tombstones.value_format is None and any("tombstones" in n for n in tombstones.notes)


# ---------------------------------------------------------------- CREATE statements
@pytest.fixture
def inferred():
    decimal = {"type": "number", "connect.type": "bytes", "title": "org.apache.kafka.connect.data.Decimal",
               "connect.parameters": {"scale": "2", "connect.decimal.precision": "8"}}
    value = obj(id={"type": "integer"}, select={"type": "string"},
                **{"first-name": {"oneOf": [{"type": "null"}, {"type": "string"}]}}, amount=decimal)
    return inf.infer_from("orders", key_format="JSON_SR", value_format="JSON_SR",
                          key=reg(obj(id={"type": "integer"}), "JSON", subject="orders-key", schema_id=6),
                          value=reg(value, "JSON", subject="orders-value"))


def test_ksqldb_style_statement_leaves_inferred_columns_out(inferred):
    assert inf.create_statement("ORDERS", "orders", inferred, key_format="JSON_SR", value_format="JSON_SR") == (
        "CREATE STREAM ORDERS WITH (KAFKA_TOPIC='orders', KEY_FORMAT='JSON_SR', VALUE_FORMAT='JSON_SR');")


def test_explicit_statement_lists_every_column_quoted_where_needed(inferred):
    text = inf.create_statement("orders-v1", "orders", inferred, kind="TABLE", key_format="JSON_SR",
                                value_format="JSON_SR", explicit=True)
    assert text == (
        "CREATE TABLE `orders-v1` (\n"
        "  ROWKEY STRUCT<`ID` BIGINT> PRIMARY KEY,\n"
        "  ID BIGINT,\n"
        "  `SELECT` STRING,\n"
        "  `FIRST-NAME` STRING,\n"
        "  AMOUNT DECIMAL(8, 2)\n"
        ") WITH (KAFKA_TOPIC='orders', KEY_FORMAT='JSON_SR', VALUE_FORMAT='JSON_SR');")
    stmt = sql.parse_statement(text)
    assert [c.name for c in stmt.columns] == ["ROWKEY", "ID", "SELECT", "FIRST-NAME", "AMOUNT"]
    source = ddl.source_from_create(stmt, WITH_REGISTRY, text)
    assert source.kind == "TABLE" and source.topic == "orders"


def test_partial_inference_lists_the_key_of_a_kafka_key():
    value = inf.infer_from("t", key_format="KAFKA", value_format="AVRO", value=reg('"string"'))
    import dataclasses

    with_key = dataclasses.replace(value, key_columns=[("ROWKEY", INT)])
    assert inf.create_statement("S", "t", with_key, key_format="KAFKA", value_format="AVRO") == (
        "CREATE STREAM S (\n  ROWKEY INTEGER KEY\n) WITH (KAFKA_TOPIC='t', KEY_FORMAT='KAFKA', "
        "VALUE_FORMAT='AVRO', WRAP_SINGLE_VALUE=false);")
    table = inf.create_statement("S", "t", value, kind="table", key_format="KAFKA", value_format="AVRO",
                                 explicit=True)
    assert "ROWKEY STRING PRIMARY KEY,\n  ROWVAL STRING" in table
    assert ddl.source_from_create(sql.parse_statement(table), WITH_REGISTRY, table).kind == "TABLE"


def test_table_needs_a_key_format():
    g = guess([rec(None, b'{"a": 1}')])
    with pytest.raises(StatementError, match="Tables require a key format other than 'NONE'"):
        inf.create_statement("S", "t", g, kind="TABLE", key_format="NONE", value_format="JSON")


def test_guessed_statement_runs_through_ddl():
    g = guess([rec(struct.pack(">i", 1), b'{"id": 1, "when": "2024-01-01", "vals": [1.5]}')])
    text = inf.create_statement(inf.source_name("my-topic.v1"), "my-topic.v1", g, key_format=g.key_format,
                                value_format=g.value_format)
    assert text.startswith("CREATE STREAM MY_TOPIC_V1 (\n  ROWKEY INTEGER KEY,\n  ID BIGINT,\n  `WHEN` STRING,")
    assert ddl.source_from_create(sql.parse_statement(text), WITH_REGISTRY, text).topic == "my-topic.v1"


def test_source_name_and_ident():
    assert inf.source_name("orders") == "ORDERS" and inf.source_name("1-x") == "T_1_X"
    assert inf.ident("ID") == "ID" and inf.ident("id") == "`id`" and inf.ident("FROM") == "`FROM`"
    assert inf.ident("a`b") == "`a``b`"


def test_avro_recursive_schema_is_an_error_naming_the_field():
    node = {"type": "record", "name": "Node", "fields": [{"name": "v", "type": "int"},
                                                         {"name": "next", "type": ["null", "Node"]}]}
    with pytest.raises(StatementError, match="field `next`"):
        inf.infer_from("t", key_format="KAFKA", value_format="AVRO", value=reg(node))


def test_a_pinned_schema_id_is_not_written_beside_listed_columns(fake_registry):
    """ksqlDB refuses `Table elements and VALUE_SCHEMA_ID cannot both exist for create statement.`"""
    got = inf.infer("http://reg", "t", key_format="KAFKA", value_format="AVRO", value_schema_id=2)
    text = inf.create_statement("S", "t", got, key_format="KAFKA", value_format="AVRO", explicit=True)
    assert "A INTEGER" in text and "VALUE_SCHEMA_ID" not in text
