"""Sink encoders: exact bytes per format, and a round trip through the formats' own decoders."""

from __future__ import annotations

import datetime as dt
import json
import struct
import uuid
from decimal import Decimal

import fastavro
import pytest
from pyspark.sql import functions as F

from kafkasql_magic import formats
from kafkasql_magic.errors import StatementError
from kafkasql_magic.formats import Field, FormatSpec
from kafkasql_magic.formats import schema_registry as sr
from kafkasql_magic.sinks import schemas
from kafkasql_magic.sinks.encode import encode
from kafkasql_magic.sql import ast

INT, BIGINT, DOUBLE, STRING = ast.Type("INT"), ast.Type("BIGINT"), ast.Type("DOUBLE"), ast.Type("STRING")
TS, BYTES, DEC = ast.Type("TIMESTAMP"), ast.Type("BYTES"), ast.Type("DECIMAL", precision=4, scale=2)

ROWS = [(1, -1, 1.5, "a,b", dt.datetime(2024, 1, 2, 3, 4, 5, 6000), b"\x00\xff", Decimal("12.34")),
        (-7, 2**40, None, None, None, None, None)]
SCHEMA = "i int, b bigint, d double, s string, t timestamp, y binary, m decimal(4,2)"
FIELDS = [Field("I", INT), Field("B", BIGINT), Field("D", DOUBLE), Field("S", STRING), Field("T", TS),
          Field("Y", BYTES), Field("M", DEC)]


def frame(spark):
    return spark.createDataFrame(ROWS, SCHEMA)


def encoded(spark, fields, spec, role="value", registered=None):
    df = frame(spark)
    columns = [df[f.name.lower()] for f in fields]
    return [r.out for r in df.select(encode(columns, fields, spec, role, registered).alias("out")).collect()]


@pytest.mark.parametrize("field, want", [
    (Field("I", INT), [b"\x00\x00\x00\x01", b"\xff\xff\xff\xf9"]),
    (Field("B", BIGINT), [b"\xff" * 8, struct.pack(">q", 2**40)]),
    (Field("D", DOUBLE), [struct.pack(">d", 1.5), None]),
    (Field("S", STRING), [b"a,b", None]),
    (Field("Y", BYTES), [b"\x00\xff", None]),
])
def test_kafka_format_bytes(spark, field, want):
    assert encoded(spark, [field], FormatSpec("KAFKA"), "key") == want


def test_json_value_as_ksqldb_writes_it(spark):
    got = [json.loads(v) for v in encoded(spark, FIELDS, FormatSpec("JSON"))]
    assert got[0] == {"I": 1, "B": -1, "D": 1.5, "S": "a,b", "T": 1704164645006, "Y": "AP8=", "M": 12.34}
    assert got[1] == {"I": -7, "B": 2**40, "D": None, "S": None, "T": None, "Y": None, "M": None}


def test_json_single_key_and_unwrapped_value_are_bare(spark):
    assert encoded(spark, [Field("S", STRING)], FormatSpec("JSON"), "key") == [b'"a,b"', None]
    unwrapped = FormatSpec("JSON", {"WRAP_SINGLE_VALUE": "false"})
    assert encoded(spark, [Field("I", INT)], unwrapped) == [b"1", b"-7"]


def test_delimited_quotes_and_empty_nulls(spark):
    got = encoded(spark, [Field("I", INT), Field("S", STRING), Field("T", TS)], FormatSpec("DELIMITED"))
    assert got == [b'1,"a,b",1704164645006', b'"-7",,']  # a first field not starting alphanumeric is quoted
    tab = FormatSpec("DELIMITED", {"VALUE_DELIMITER": "TAB"})
    assert encoded(spark, [Field("I", INT), Field("B", BIGINT)], tab) == [b"1\t-1", b'"-7"\t1099511627776']


#: ksqlDB's own expected records (query-validation-tests string.json, bytes-and-strings.json, date.json):
#: Commons CSV 1.4 quotes a field starting with a character up to '#' or ending in one up to a space,
#: and the record's first field unless it starts with an ASCII letter or digit; spaces are kept.
KSQLDB_DELIMITED = [
    ([" \t with white space \t", " \t WITH WHITE SPACE \t", "with white space", "\t wit"],
     b'" \t with white space \t"," \t WITH WHITE SPACE \t",with white space,"\t wit"'),
    (["!", "IQ==", "!"], b'"!",IQ==,"!"'),
    (["#", "Iw==", "#"], b'"#",Iw==,"#"'),
    (["-10"], b'"-10"'),
    (["1AB2", "GrI=", "1AB2"], b"1AB2,GrI=,1AB2"),
    (['say "hi"', "", None, "x-"], b'"say ""hi""",,,x-'),
    (["", "a"], b'"",a'),
]


@pytest.mark.parametrize("values, want", KSQLDB_DELIMITED)
def test_delimited_quotes_as_ksqldb_writes_them(spark, values, want):
    fields = [Field(f"S{i}", STRING) for i in range(len(values))]
    df = spark.createDataFrame([tuple(values)], ", ".join(f"s{i} string" for i in range(len(values))))
    got = df.select(encode([df[f"s{i}"] for i in range(len(values))], fields, FormatSpec("DELIMITED"), "value")
                    .alias("out")).collect()[0].out
    assert got == want
    assert formats.lookup("DELIMITED").encode(list(values), fields, FormatSpec("DELIMITED"), "value") == want
    decoded = formats.lookup("DELIMITED").decode(F.lit(want), fields, FormatSpec("DELIMITED"), "value")
    row = df.select(*decoded.columns).collect()[0]
    assert [v if v != "" else None for v in row] == [v if v != "" else None for v in values]


def test_none_writes_no_bytes(spark):
    assert encoded(spark, [], FormatSpec("NONE")) == [None, None]


@pytest.mark.parametrize("name, spec", [
    ("JSON", FormatSpec("JSON")), ("DELIMITED", FormatSpec("DELIMITED")), ("KAFKA", FormatSpec("KAFKA"))])
def test_round_trip_through_decoders(spark, name, spec):
    fields = [Field("B", BIGINT)] if name == "KAFKA" else FIELDS[:5] if name == "DELIMITED" else FIELDS
    df = frame(spark)
    df = df.withColumn("raw", encode([df[f.name.lower()] for f in fields], fields, spec, "value"))
    decoded = formats.lookup(name).decode(F.col("raw"), fields, spec, "value")
    for column_name, expression in decoded.intermediates:
        df = df.withColumn(column_name, expression)
    out = df.select(*decoded.columns, decoded.error.alias("err") if decoded.error is not None
                    else F.lit(None).alias("err")).collect()
    assert all(r.err is None for r in out)
    want = [tuple(row[i] for i, f in enumerate(FIELDS) if f in fields) for row in ROWS]
    assert [tuple(r)[:-1] for r in out] == want


def spec_for(fmt, registry, topic, **options):
    return FormatSpec(fmt, {sr.URL_OPTION: registry, sr.TOPIC_OPTION: topic, **options})


def test_avro_registers_ksqldb_names_and_frames_records(spark, registry):
    topic = f"sink-{uuid.uuid4().hex[:8]}"
    fields = FIELDS[:5]
    value = schemas.register(registry, topic, fields, spec_for("AVRO", registry, topic), "value")
    key = schemas.register(registry, topic, [Field("S", STRING)], spec_for("AVRO", registry, topic), "key")
    latest = sr.client(registry).get_latest_version(f"{topic}-value")
    assert latest.schema_id == value.schema_id
    schema = json.loads(latest.schema.schema_str)
    assert (schema["namespace"], schema["name"]) == ("io.confluent.ksql.avro_schemas", "KsqlDataSourceSchema")
    assert [f["name"] for f in schema["fields"]] == ["I", "B", "D", "S", "T"]
    rows = encoded(spark, fields, spec_for("AVRO", registry, topic), "value", value)
    assert rows[0][:5] == b"\x00" + value.schema_id.to_bytes(4, "big")
    import io

    datum = fastavro.schemaless_reader(io.BytesIO(rows[0][5:]), fastavro.parse_schema(schema))
    assert datum["I"] == 1 and datum["S"] == "a,b" and datum["T"] == dt.datetime(2024, 1, 2, 3, 4, 5, 6000, tzinfo=dt.timezone.utc)
    keys = encoded(spark, [Field("S", STRING)], spec_for("AVRO", registry, topic), "key", key)
    assert keys[1] is None and keys[0][5:] == b"\x02\x06a,b"  # union branch 1, then the string


def test_json_sr_frames_compact_json(spark, registry):
    topic = f"sink-{uuid.uuid4().hex[:8]}"
    fields = [Field("I", INT), Field("S", STRING)]
    value = schemas.register(registry, topic, fields, spec_for("JSON_SR", registry, topic), "value")
    rows = encoded(spark, fields, spec_for("JSON_SR", registry, topic), "value", value)
    assert rows[0] == b"\x00" + value.schema_id.to_bytes(4, "big") + b'{"I":1,"S":"a,b"}'
    assert json.loads(sr.client(registry).get_latest_version(f"{topic}-value").schema.schema_str)["title"] \
        == "KsqlDataSourceSchema"


def test_incompatible_schema_refused_with_registry_reason(registry):
    from confluent_kafka.schema_registry import Schema

    topic = f"sink-{uuid.uuid4().hex[:8]}"
    sr.client(registry).register_schema(f"{topic}-value", Schema('{"type":"record","name":"X","fields":['
                                                                  '{"name":"A","type":"int"}]}', "AVRO"))
    with pytest.raises(StatementError, match=f"Could not register schema for subject {topic}-value: .*incompatible"):
        schemas.register(registry, topic, [Field("A", STRING)], spec_for("AVRO", registry, topic), "value")


def test_given_schema_id_is_used(registry):
    topic = f"sink-{uuid.uuid4().hex[:8]}"
    first = schemas.register(registry, topic, [Field("A", INT)], spec_for("AVRO", registry, topic), "value")
    again = schemas.register(registry, topic + "x", [Field("A", INT)],
                             spec_for("AVRO", registry, topic, VALUE_SCHEMA_ID=str(first.schema_id)), "value")
    assert again.schema_id == first.schema_id and json.loads(again.text) == json.loads(first.text)
    with pytest.raises(StatementError, match="Cannot use VALUE_SCHEMA_ID 987654"):
        schemas.register(registry, topic, [Field("A", INT)], spec_for("AVRO", registry, topic, VALUE_SCHEMA_ID="987654"), "value")
