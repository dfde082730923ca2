"""Planner and decoding on Spark, over an in-memory frame with the raw Kafka schema (no broker)."""

import base64
import datetime as dt
import json
import struct

import pytest

from kafkasql_magic.dialects import ksql_sources as ddl
from kafkasql_magic.catalog import Catalog
from kafkasql_magic.errors import StatementError
from kafkasql_magic.engine.analysis import analyse
from kafkasql_magic.engine.build.query_spark import build
from kafkasql_magic.kafka.source import SCHEMA as RAW_SCHEMA
from kafkasql_magic.results import split_batch
from kafkasql_magic.sql import parse_statement

T0 = dt.datetime(2023, 11, 14, 22, 13, 20, tzinfo=dt.timezone.utc)


def raw_frame(spark, records):
    rows = [(r.get("key"), r.get("value"), r.get("headers", []), "t", r.get("partition", 0), i,
             T0 + dt.timedelta(milliseconds=i)) for i, r in enumerate(records)]
    return spark.createDataFrame(rows, RAW_SCHEMA)


def run(spark, create, select, records):
    catalog = Catalog()
    catalog.add(ddl.source_from_create(parse_statement(create), {ddl.DEFAULT_KEY_FORMAT: "KAFKA"}))
    raw = raw_frame(spark, records)
    plan = analyse(parse_statement(select), catalog)
    batch = split_batch(build(plan, raw, read=None).frame.toArrow(), len(plan.names), "q", plan.source.name)
    return plan.names, batch


BYTES_STREAM = "CREATE STREAM b (v BYTES) WITH (kafka_topic='t', value_format='KAFKA');"


@pytest.mark.parametrize("expr, value, expected", [
    ("INT_FROM_BYTES(v)", bytes.fromhex("000007E5"), 2021),
    ("INT_FROM_BYTES(v, 'little_endian')", bytes.fromhex("E5070000"), 2021),
    ("INT_FROM_BYTES(v)", struct.pack(">i", -7), -7),
    ("BIGINT_FROM_BYTES(v)", bytes.fromhex("000000012A05F200"), 5000000000),
    ("BIGINT_FROM_BYTES(v, 'LITTLE_ENDIAN')", struct.pack("<q", -5000000000), -5000000000),
    ("DOUBLE_FROM_BYTES(v)", bytes.fromhex("4080A6FD9BC9F582"), 532.8738323),
    ("DOUBLE_FROM_BYTES(v, 'little_endian')", struct.pack("<d", -1.25e-300), -1.25e-300),
    ("DOUBLE_FROM_BYTES(v)", struct.pack(">d", 5e-324), 5e-324),
    ("FROM_BYTES(v, 'hex')", b"\x01\xab", "01AB"),
    ("FROM_BYTES(v, 'UTF8')", "grüß".encode(), "grüß"),
    ("FROM_BYTES(v, 'base64')", b"hi", "aGk="),
    ("FROM_BYTES(v, 'ascii')", b"abc", "abc"),
    ("TO_BYTES(FROM_BYTES(v, 'hex'), 'hex')", b"\x01\xab", b"\x01\xab"),
    ("TO_BYTES('aGk=', 'base64')", b"", b"hi"),
])
def test_byte_functions(spark, expr, value, expected):
    names, batch = run(spark, BYTES_STREAM, f"SELECT {expr} AS r FROM b EMIT CHANGES;", [{"value": value}])
    assert batch.rows == [(expected,)] and batch.errors == []


@pytest.mark.parametrize("expr, value", [("FROM_BYTES(v, 'utf8')", b"a\xff"), ("FROM_BYTES(v, 'ascii')", "é".encode())])
def test_bytes_that_are_not_text_are_null_and_a_processing_log_entry(spark, expr, value):
    names, batch = run(spark, BYTES_STREAM, f"SELECT {expr} AS r FROM b EMIT CHANGES;", [{"value": value}])
    assert batch.rows == [(None,)]  # never text with U+FFFD invented in it
    (entry,) = batch.errors
    assert entry["MESSAGE"].endswith("Bytes are not valid " + expr.split("'")[1] + " text; the result is NULL")


def test_wrong_width_is_a_null_column_and_a_processing_log_entry(spark):
    names, batch = run(spark, BYTES_STREAM, "SELECT INT_FROM_BYTES(v) AS r, v FROM b EMIT CHANGES;",
                       [{"value": b"\x00\x01"}, {"value": b"\x00\x00\x00\x01"}])
    assert batch.rows == [(None, b"\x00\x01"), (1, b"\x00\x00\x00\x01")]
    (entry,) = batch.errors
    assert entry["MESSAGE"] == ("Error computing expression INT_FROM_BYTES(V) for column R with index 0: "
                                "Number of bytes must be equal to 4, but found 2")
    assert (entry["TOPIC"], entry["PARTITION"], entry["OFFSET"]) == ("t", 0, 0)


def test_function_error_in_where_skips_the_row_and_logs_it(spark):
    names, batch = run(spark, BYTES_STREAM, "SELECT v FROM b WHERE INT_FROM_BYTES(v) > 0 EMIT CHANGES;",
                       [{"value": b"\x01"}, {"value": b"\x00\x00\x00\x05"}])
    assert batch.rows == [(b"\x00\x00\x00\x05",)]
    assert len(batch.errors) == 1 and "Number of bytes must be equal to 4, but found 1" in batch.errors[0]["MESSAGE"]


def test_a_byte_order_computed_per_record(spark):
    """ksqlDB evaluates the byte order per record: an unknown one (NULL too) gives NULL and its
    processing-log entry (BytesUtils.byteOrderType's message); the good ones decode."""
    names, batch = run(
        spark, "CREATE STREAM b (v BYTES, o STRING) WITH (kafka_topic='t', value_format='JSON');",
        "SELECT INT_FROM_BYTES(v, o) AS i, BIGINT_FROM_BYTES(CONCAT(v, v), o) AS l FROM b EMIT CHANGES;",
        [{"value": json.dumps({"V": base64.b64encode(bytes.fromhex(h)).decode(), "O": o}).encode()}
         for h, o in [("E5070000", "little_endian"), ("000007E5", "BIG_ENDIAN"), ("000007E5", "middle"),
                      ("000007E5", None), ("07E5", "BIG_ENDIAN")]])
    assert batch.rows == [(2021, 2021 + (2021 << 32)), (2021, 2021 + (2021 << 32)), (None, None), (None, None),
                          (None, None)]
    messages = [e["MESSAGE"].split(": ", 1)[1] for e in batch.errors]
    assert messages == ["Byte order must be BIG_ENDIAN or LITTLE_ENDIAN. Unknown byte order 'middle'.",
                        "Byte order must be BIG_ENDIAN or LITTLE_ENDIAN. Unknown byte order 'null'.",
                        "Number of bytes must be equal to 4, but found 2"]  # a row's first error


@pytest.mark.parametrize("select, message", [
    ("SELECT INT_FROM_BYTES(v, 'x') FROM b EMIT CHANGES;",
     "Byte order must be BIG_ENDIAN or LITTLE_ENDIAN. Unknown byte order 'x'."),
    ("SELECT FROM_BYTES(v, 'x') FROM b EMIT CHANGES;",
     "Unknown encoding type 'x'. Supported formats are 'hex', 'utf8', 'ascii', and 'base64'."),
    ("SELECT v AS rowpartition FROM b EMIT CHANGES;",
     "`ROWPARTITION` is a reserved column name. You cannot use it as an alias for a column."),
    ("SELECT nope(v) FROM b EMIT CHANGES;", "Can't find any functions with the name 'NOPE'"),
])
def test_plan_time_errors(spark, select, message):
    with pytest.raises(StatementError) as info:
        run(spark, BYTES_STREAM, select, [])
    assert str(info.value) == message


def test_pseudocolumns_headers_and_naming(spark):
    names, batch = run(
        spark,
        "CREATE STREAM s (k STRING KEY, v STRUCT<a INT>, hs ARRAY<STRUCT<key STRING, value BYTES>> HEADERS) "
        "WITH (kafka_topic='t', key_format='KAFKA', value_format='JSON');",
        "SELECT k, v->a, ROWTIME, ROWPARTITION, ROWOFFSET, hs[1]->key AS first_key, "
        "ROWOFFSET + 1 FROM s EMIT CHANGES;",
        [{"key": b"x", "value": b'{"V": {"A": 7}}', "headers": [("h", None), ("h", b"2")], "partition": 3},
         {"key": None, "value": b'{"v": null}'}],
    )
    assert names == ["K", "A", "ROWTIME", "ROWPARTITION", "ROWOFFSET", "FIRST_KEY", "KSQL_COL_0"]
    t0 = int(T0.timestamp() * 1000)
    assert batch.rows == [("x", 7, t0, 3, 0, "h", 1), (None, None, t0 + 1, 0, 1, None, 2)]


def test_integer_division_by_zero_is_null_and_logged(spark):
    names, batch = run(spark, "CREATE STREAM s (a INT, b INT) WITH (kafka_topic='t', value_format='JSON');",
                       "SELECT a / b AS q, a % b AS m FROM s EMIT CHANGES;",
                       [{"value": b'{"a": 7, "b": 2}'}, {"value": b'{"a": -7, "b": 2}'}, {"value": b'{"a": 1, "b": 0}'}])
    assert [r[0] for r in batch.rows] == [3, -3, None]
    assert [e["OFFSET"] for e in batch.errors] == [2] and "/ by zero" in batch.errors[0]["MESSAGE"]


def test_json_nested_case_insensitive_and_typed(spark):
    names, batch = run(
        spark,
        "CREATE STREAM s (id BIGINT, ok BOOLEAN, amount DECIMAL(6, 2), tags ARRAY<STRING>, "
        "m MAP<STRING, INT>, nest STRUCT<deep STRUCT<x DOUBLE>>, ts TIMESTAMP, d DATE, raw BYTES) "
        "WITH (kafka_topic='t', value_format='JSON');",
        "SELECT * FROM s EMIT CHANGES;",
        [{"value": b'{"ID": 12345678901, "Ok": true, "amount": 12.5, "tags": ["a", "b"], "m": {"x": 1}, '
                   b'"Nest": {"Deep": {"X": 1.5}}, "ts": 1700000000000, "d": 19675, "raw": "aGk="}'}],
    )
    assert batch.errors == []
    (row,) = batch.rows
    assert row[:2] == (12345678901, True) and str(row[2]) == "12.50"
    assert row[3] == ["a", "b"] and row[4] == {"x": 1} and row[5] == {"DEEP": {"X": 1.5}}
    assert row[6].replace(tzinfo=None) == dt.datetime(2023, 11, 14, 22, 13, 20)
    assert row[7] == dt.date(2023, 11, 14) and row[8] == b"hi"
