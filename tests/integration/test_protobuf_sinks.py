"""PROTOBUF and PROTOBUF_NOSR sinks, as ksqlDB writes them: the `.proto` it registers
(`ConnectDefault1`, nested `ConnectDefaultN`, maps as `repeated ConnectDefaultNEntry`; from its
historical plans), Confluent framing with message indexes [0], proto3 defaults for NULL columns
(query-validation-tests protobuf.json: 'protobuf primitives with null', 'STRUCT ... - key'), and
a single key column that is the one field of a message. Read back with protobuf's own classes
and through the session."""

from __future__ import annotations

import datetime as dt
import json
import uuid

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient

from kafkasql_magic.errors import StatementError
from kafkasql_magic.formats.protobuf_schema import Schema
from kafkasql_magic.kafka.peek import fetch_records
from kafkasql_magic.kafka.producer import produce

BASE = 1_700_000_000_000

#: What ksqlDB registers for SRC's value columns (its historical plans spell every part of it).
VALUE_PROTO = """syntax = "proto3";

import "google/protobuf/timestamp.proto";

message ConnectDefault1 {
  int32 I = 1;
  int64 L = 2;
  double D = 3;
  bool B = 4;
  string S = 5;
  google.protobuf.Timestamp T = 6;
  repeated int64 A = 7;
  repeated ConnectDefault2Entry M = 8;
  ConnectDefault3 ST = 9;

  message ConnectDefault2Entry {
    string key = 1;
    double value = 2;
  }
  message ConnectDefault3 {
    int32 F0 = 1;
    ConnectDefault4 IN = 2;
  
    message ConnectDefault4 {
      string X = 1;
    }
  }
}
"""
NOSR_PROTO = """syntax = "proto3";
message ConnectDefault1 {
  int32 I = 1;
  string S = 2;
  ConnectDefault2 ST = 3;
  message ConnectDefault2 { int32 F0 = 1; ConnectDefault3 IN = 2; message ConnectDefault3 { string X = 1; } }
}
"""
KEY_PROTO = 'syntax = "proto3";\n\nmessage ConnectDefault1 {\n  string K = 1;\n}\n'
COLUMNS = ("K STRING KEY, I INT, L BIGINT, D DOUBLE, B BOOLEAN, S STRING, T TIMESTAMP, A ARRAY<BIGINT>, "
           "M MAP<STRING, DOUBLE>, ST STRUCT<F0 INT, `IN` STRUCT<X STRING>>")
FULL = {"I": 1, "L": 2**40, "D": 1.25, "B": True, "S": "foo", "T": "2024-01-02T03:04:05.678",
        "A": [12, 34], "M": {"a": 1.5}, "ST": {"F0": 7, "IN": {"X": "x"}}}
NULLS = {k: None for k in FULL}


def tagged(prefix: str) -> tuple[str, str]:
    tag = uuid.uuid4().hex[:8].upper()
    return f"{prefix}_{tag}", f"t-{prefix.lower()}-{tag.lower()}"


def source(ksql, broker, prefix):
    src, topic = tagged(prefix)
    ksql.sql(f"CREATE STREAM {src} ({COLUMNS}) WITH (kafka_topic='{topic}', key_format='KAFKA', "
             "value_format='JSON', partitions=1);")
    produce(broker.bootstrap_servers, topic, [
        {"key": b"k1", "value": json.dumps(FULL).encode(), "timestamp": BASE},
        {"key": None, "value": json.dumps(NULLS).encode(), "timestamp": BASE + 1}])
    return src


def written(broker, topic, count):
    got = fetch_records(broker.bootstrap_servers, topic, from_beginning=True, limit=count, timeout_s=30,
                        until_end=False)
    assert len(got) == count, got
    return sorted(got, key=lambda r: r["offset"])


def test_protobuf_sink_registers_ksqldbs_proto_and_frames_each_record(ksql, broker, registry):
    src = source(ksql, broker, "PBS")
    out = f"OUT_{src}"
    query = ksql.sql(f"CREATE STREAM {out} WITH (format='PROTOBUF') AS SELECT * FROM {src};")
    assert query.wait_for_records(2, 180), query.failure
    client = SchemaRegistryClient({"url": registry})
    value_schema = client.get_latest_version(f"{out}-value")
    key_schema = client.get_latest_version(f"{out}-key")
    assert (value_schema.schema.schema_type, value_schema.schema.schema_str) == ("PROTOBUF", VALUE_PROTO)
    assert key_schema.schema.schema_str == KEY_PROTO

    first, second = written(broker, out, 2)
    for raw, schema_id in ((first["value"], value_schema.schema_id), (first["key"], key_schema.schema_id)):
        assert raw[0] == 0 and int.from_bytes(raw[1:5], "big") == schema_id and raw[5] == 0  # indexes [0]
    value = Schema(VALUE_PROTO).message_class([0]).FromString(first["value"][6:])
    assert (value.I, value.L, value.D, value.B, value.S, list(value.A)) == (1, 2**40, 1.25, True, "foo", [12, 34])
    assert value.T.ToDatetime() == dt.datetime(2024, 1, 2, 3, 4, 5, 678000)
    assert [(e.key, e.value) for e in value.M] == [("a", 1.5)]
    assert (value.ST.F0, value.ST.IN.X) == (7, "x")
    assert Schema(KEY_PROTO).message_class([0]).FromString(first["key"][6:]).K == "k1"

    # NULL columns are proto3 defaults (protobuf.json 'protobuf primitives with null'), NULL messages unset
    nulls = Schema(VALUE_PROTO).message_class([0]).FromString(second["value"][6:])
    assert (nulls.I, nulls.L, nulls.D, nulls.B, nulls.S, list(nulls.A), list(nulls.M)) == (0, 0, 0.0, False, "", [], [])
    assert not nulls.HasField("T") and not nulls.HasField("ST")
    assert second["key"] is None  # a NULL single key column is a NULL key


def test_a_protobuf_sink_reads_back_through_the_session_with_its_map(ksql, broker):
    src = source(ksql, broker, "PBR")
    out = f"OUT_{src}"
    query = ksql.sql(f"CREATE STREAM {out} WITH (value_format='PROTOBUF') AS SELECT K, A, M, ST FROM {src};")
    assert query.wait_for_records(2, 180), query.failure
    ksql.sql(f"CREATE STREAM R_{src} (K STRING KEY) WITH (kafka_topic='{out}', key_format='KAFKA', value_format='PROTOBUF');")
    rows = ksql.sql(f"SELECT K, A, M, ST FROM R_{src};").to_dict("records")
    by_key = {r["K"]: r for r in rows}
    assert list(by_key["k1"]["A"]) == [12, 34]
    assert dict(by_key["k1"]["M"]) == {"a": 1.5}
    assert by_key["k1"]["ST"] == {"F0": 7, "IN": {"X": "x"}}
    assert list(by_key[None]["A"]) == [] and by_key[None]["ST"] is None


def test_protobuf_nosr_sink_writes_bare_messages_and_registers_nothing(ksql, broker, registry):
    src = source(ksql, broker, "PBN")
    out = f"OUT_{src}"
    query = ksql.sql(f"CREATE STREAM {out} WITH (key_format='PROTOBUF_NOSR', value_format='PROTOBUF_NOSR') "
                     f"AS SELECT K, I, S, ST FROM {src};")
    assert query.wait_for_records(2, 180), query.failure
    first, second = written(broker, out, 2)
    cls = Schema(NOSR_PROTO).message_class([0])
    value = cls.FromString(first["value"])
    assert (value.I, value.S, value.ST.F0, value.ST.IN.X) == (1, "foo", 7, "x")
    assert cls.FromString(second["value"]) == cls()  # every column NULL: an empty message
    assert Schema(KEY_PROTO).message_class([0]).FromString(first["key"]).K == "k1"
    assert not [s for s in SchemaRegistryClient({"url": registry}).get_subjects() if s.startswith(out)]


def test_protobuf_values_are_always_wrapped(ksql):
    """protobuf.json 'WRAP_SINGLE_VALUE=false': ksqlDB's PROTOBUF has no unwrapped single values,
    for a source or a sink; PROTOBUF_NOSR has."""
    name, topic = tagged("PBW")
    refused = "Format 'PROTOBUF' does not support 'WRAP_SINGLE_VALUE' set to 'false'."
    with pytest.raises(StatementError, match=refused):
        ksql.sql(f"CREATE STREAM {name} (K STRING KEY, FOO INT) WITH (WRAP_SINGLE_VALUE=false, "
                 f"kafka_topic='{topic}', value_format='PROTOBUF', partitions=1);")
    ksql.sql(f"CREATE STREAM {name} (K STRING KEY, FOO INT) WITH (WRAP_SINGLE_VALUE=false, "
             f"kafka_topic='{topic}', value_format='PROTOBUF_NOSR', partitions=1);")
    with pytest.raises(StatementError, match=refused):
        ksql.sql(f"CREATE STREAM OUT_{name} WITH (value_format='PROTOBUF', WRAP_SINGLE_VALUE=false) "
                 f"AS SELECT * FROM {name};")
