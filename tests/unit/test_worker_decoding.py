"""Keys and values decoded in the reader's worker (kafka.worker_decoding), without Spark: the
Arrow columns, the per-record outcome for every kind of bad record, the source options."""

from __future__ import annotations

import io
import json

import fastavro
import pyarrow as pa
import pytest

from kafkasql_magic.errors import KafkaError
from kafkasql_magic.formats import schema_registry as sr
from kafkasql_magic.formats.avro_decode import ERROR_FIELD, Layout
from kafkasql_magic.kafka import json_columns, worker_decoding
from kafkasql_magic.kafka.arrow_batch import arrow_schema
from kafkasql_magic.kafka.worker_decoding import WorkerDecoding, parse, type_from_plain, type_to_plain
from kafkasql_magic.sql import ast

SCHEMA = {"type": "record", "name": "V", "fields": [
    {"name": "id", "type": "long"}, {"name": "Name", "type": ["null", "string"]},
    {"name": "tags", "type": {"type": "array", "items": "string"}}]}
FIELDS = (("ID", ast.Type("BIGINT")), ("NAME", ast.Type("STRING")), ("TAGS", ast.Type("ARRAY", element=ast.Type("STRING"))))
KNOWN_ID = 7


def _framed(record, schema_id=KNOWN_ID, magic=b"\x00"):
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(SCHEMA), record)
    return magic + schema_id.to_bytes(4, "big") + out.getvalue()


@pytest.fixture
def registry(monkeypatch):
    """A registry that knows schema id 7 only."""
    def by_id(url, schema_id, conf=None, **_):
        if schema_id != KNOWN_ID:
            raise sr.SchemaLookupError(f"Schema id {schema_id} not found")
        return sr.Registered("AVRO", json.dumps(SCHEMA))

    monkeypatch.setattr(sr, "schema_by_id", by_id)
    return "http://registry.test"


def test_avro_values_decoded_exactly_and_every_bad_record_left_with_its_reason(registry):
    good = [_framed({"id": i, "Name": None if i == 2 else f"n{i}", "tags": ["a"] * i}) for i in range(4)]
    bad = {
        "magic byte": b"\x01" + good[1][1:],
        "Schema id 99": _framed({"id": 1, "Name": "x", "tags": []}, schema_id=99),
        "bytes left over": good[1] + b"\x00",
        "truncated": good[3][:-2],
        "too short": b"\x00\x00\x00",
    }
    values = pa.array([good[0], bad["magic byte"], good[1], bad["Schema id 99"], None, good[2],
                       bad["bytes left over"], bad["truncated"], good[3], bad["too short"]], pa.binary())
    decoding = WorkerDecoding(avro_value=Layout(FIELDS, False, registry, registry={"a": "b"}))
    *_, [struct] = decoding.decoders()(pa.nulls(len(values), pa.binary()), values)
    rows = struct.to_pylist()
    assert [r["ID"] for r in rows] == [0, None, 1, None, None, 2, None, None, 3, None]
    assert rows[5] == {"ID": 2, "NAME": None, "TAGS": ["a", "a"], ERROR_FIELD: None}
    assert rows[8]["TAGS"] == ["a"] * 3 and rows[2]["NAME"] == "n1"
    errors = [r[ERROR_FIELD] for r in rows]
    assert [e is None for e in errors] == [True, False, True, False, True, True, False, False, True, False]
    for at, reason in ((1, "magic byte"), (3, "Schema id 99"), (6, "bytes left over"), (7, "truncated"),
                       (9, "too short")):
        assert reason in errors[at], errors[at]
    batch = pa.RecordBatch.from_arrays([struct], schema=pa.schema(decoding.arrow_fields()))  # types as declared
    assert batch.schema.names == ["__avro_value"]


def test_avro_keys_and_json_values_side_by_side():
    key_schema = {"type": "record", "name": "K", "fields": [{"name": "k", "type": "long"}]}
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(key_schema), {"k": 5})
    decoding = WorkerDecoding(json_value=(("v", "INT"),),
                              avro_key=Layout((("K", ast.Type("BIGINT")),), True, None, json.dumps(key_schema),
                                              framed=False))
    keys = pa.array([out.getvalue(), b"\x0a\x00"], pa.binary())  # the second: a byte left over
    values = pa.array([b'{"v": 1}', b'{"v": 2}'], pa.binary())
    *_, columns = decoding.decoders()(keys, values)
    names = [f.name for f in decoding.arrow_fields()]
    assert names == ["__avro_key", json_columns.DECODED, "__json_0"]
    by_name = dict(zip(names, columns))
    assert by_name["__avro_key"].field("K").to_pylist() == [5, None]
    assert "left over" in by_name["__avro_key"].field(ERROR_FIELD).to_pylist()[1]
    assert by_name[json_columns.DECODED].to_pylist() == [True, True]
    assert by_name["__json_0"].to_pylist() == [1, 2]


def test_json_keys_decoded_with_a_flag_per_record():
    decoding = WorkerDecoding(json_key=(("A", "BIGINT"), ("B", "STRING")))
    keys = pa.array([b'{"a": 1, "B": "x"}', b"not json", None, b'{"a": 2}', b'{"a": 1} x'], pa.binary())
    *_, (flag, a, b) = decoding.decoders()(keys, pa.nulls(len(keys), pa.binary()))
    assert flag.to_pylist() == [True, False, False, True, False]  # the rest goes to the planner
    assert a.to_pylist() == [1, None, None, 2, None] and b.to_pylist() == ["x", None, None, None, None]
    assert [f.name for f in decoding.arrow_fields()] == [json_columns.KEY_DECODED, "__json_key_0", "__json_key_1"]


def test_which_json_keys_are_decoded_in_the_worker():
    struct = ast.Type("STRUCT", fields=(("A", ast.Type("INT")), ("B", ast.Type("STRING"))))
    assert json_columns.key_fields("JSON", [("K", struct)]) == (("A", "INT"), ("B", "STRING"))
    assert json_columns.key_fields("JSON", [("A", ast.Type("INT")), ("B", ast.Type("DOUBLE"))]) == (
        ("A", "INT"), ("B", "DOUBLE"))
    assert json_columns.key_fields("JSON", [("K", ast.Type("BIGINT"))]) is None  # a bare value: the planner
    assert json_columns.key_fields("JSON", [("A", ast.Type("INT")), ("B", struct)]) is None  # nested member
    assert json_columns.key_fields("KAFKA", [("A", ast.Type("INT")), ("B", ast.Type("INT"))]) is None


def test_options_round_trip_with_secrets_under_masked_names():
    layout = Layout(FIELDS, False, "http://r:8081", registry={"basic.auth.user.info": "u:pw", "outage.timeout.ms": "5"})
    decoding = WorkerDecoding(json_key=(("A", "INT"),), avro_value=layout)
    options = decoding.options()
    assert "u:pw" in options["secret.avroValueLayout"]  # Spark masks the values of these names
    assert all("u:pw" not in v for k, v in options.items() if "secret" not in k)
    back = parse({"bootstrap.servers": "b:1", "topic": "t", **options})
    assert back.json_key == (("A", "INT"),) and back.avro_value.fields == FIELDS
    assert back.avro_value.registry == layout.registry and back.avro_value.url == layout.url
    assert arrow_schema(back).names[-3:] == [json_columns.KEY_DECODED, "__json_key_0", "__avro_value"]
    assert parse({"topic": "t"}) is None


def test_types_survive_the_option_text():
    t = ast.Type("STRUCT", fields=(("A", ast.Type("DECIMAL", precision=10, scale=2)),
                                   ("M", ast.Type("MAP", key=ast.Type("STRING"), value=ast.Type("ARRAY", element=ast.Type("TIME"))))))
    assert type_from_plain(json.loads(json.dumps(type_to_plain(t)))) == t


@pytest.mark.parametrize("name, bad", [("secret.avroValueLayout", "{}"), ("secret.avroKeyLayout", "[1]"), ("jsonKeyColumns", "[]")])
def test_a_bad_option_is_named(name, bad):
    with pytest.raises(KafkaError, match=name):
        worker_decoding.parse({name: bad})
