"""Keys and timestamps of the records persistent queries write, as ksqlDB writes them (its
query-validation tests `group-by.json`, `partition-by.json` and `multi-col-keys.json`): the key
columns in the key's order, whatever the projection's, no key where the input record had none,
and the record time as given, 0 included. Each sink topic is read back record by record: key
bytes, value, timestamp."""

from __future__ import annotations

import json
import struct
import uuid

import pytest

from kafkasql_magic.errors import StatementError
from kafkasql_magic.kafka.peek import fetch_records
from kafkasql_magic.kafka.producer import produce

BASE = 1_700_000_000_000


def tagged(prefix: str) -> tuple[str, str]:
    tag = uuid.uuid4().hex[:8].upper()
    return f"{prefix}_{tag}", f"t-{prefix.lower()}-{tag.lower()}"


def read_back(broker, topic: str, count: int) -> list[dict]:
    got = fetch_records(broker.bootstrap_servers, topic, from_beginning=True, limit=count, timeout_s=30,
                        until_end=False)
    assert len(got) == count, got
    return sorted(got, key=lambda r: (r["key"] or b"", r["partition"], r["offset"]))  # one batch: any order


def written(ksql, broker, statement: str, count: int) -> list[dict]:
    """The records a persistent query writes, read back once it wrote `count`; the query is
    then terminated (one query at a time: a loaded machine starts Python workers slowly)."""
    query = ksql.sql(statement)
    assert query.wait_for_records(count, 180), query.failure
    ksql.sql(f"TERMINATE {query.id};")
    return read_back(broker, query.sink_topic, count)


def keys_of(ksql, name: str) -> list[str]:
    described = ksql.sql(f"DESCRIBE {name};")
    return [field for field, kind in described.itertuples(index=False) if kind.endswith("key)")]


def test_multi_column_keys_follow_group_by_and_partition_by_order(ksql, broker):
    src, topic = tagged("G")
    ksql.sql(f"CREATE STREAM {src} (ID INT KEY, A INT, B STRING) WITH (kafka_topic='{topic}', "
             "format='DELIMITED', partitions=1);")
    produce(broker.bootstrap_servers, topic, [
        {"key": b"1", "value": b"7,x", "timestamp": BASE + 1},
        {"key": b"2", "value": b"8,y", "timestamp": BASE + 2}])
    # group-by.json "fields (stream->table)": SELECT f1, f2 ... GROUP BY f2, f1 keys 'a,1'
    got = written(ksql, broker, f"CREATE TABLE D_{src} AS SELECT B, A, COUNT(*) AS N FROM {src} GROUP BY A, B;", 2)
    assert [(r["key"], r["value"], r["timestamp"]) for r in got] == [
        (b"7,x", b"1", BASE + 1), (b"8,y", b"1", BASE + 2)]
    got = written(ksql, broker, f"CREATE TABLE J_{src} WITH (KEY_FORMAT='JSON') AS SELECT B, A, COUNT(*) AS N "
                  f"FROM {src} GROUP BY A, B;", 2)
    assert [(r["key"], r["value"], r["timestamp"]) for r in got] == [  # the value stays DELIMITED
        (b'{"A":7,"B":"x"}', b"1", BASE + 1), (b'{"A":8,"B":"y"}', b"1", BASE + 2)]
    # partition-by.json "multiple columns - select explicit - reorder partition by but keep same order in project"
    got = written(ksql, broker, f"CREATE STREAM P_{src} WITH (KEY_FORMAT='JSON') AS SELECT ID, B, A FROM {src} "
                  "PARTITION BY A, ID;", 2)
    assert [(r["key"], r["value"], r["timestamp"]) for r in got] == [
        (b'{"A":7,"ID":1}', b"x", BASE + 1), (b'{"A":8,"ID":2}', b"y", BASE + 2)]
    assert keys_of(ksql, f"D_{src}") == ["A", "B"]
    assert keys_of(ksql, f"J_{src}") == ["A", "B"]
    assert keys_of(ksql, f"P_{src}") == ["A", "ID"]
    described = ksql.sql(f"DESCRIBE J_{src};")
    assert list(described.iloc[:, 0]) == ["A", "B", "N"]  # ksqlDB's schema: `A INT KEY, B STRING KEY, N BIGINT`


def test_a_record_time_of_zero_is_written_as_zero(ksql, broker):
    src, topic = tagged("Z")
    ksql.sql(f"CREATE STREAM {src} (ID STRING KEY, T BIGINT, V INT) WITH (kafka_topic='{topic}', "
             "value_format='JSON', partitions=1);")
    times = [0, 5, 0, 0, 7]  # runs of time 0 between others: the partition keeps its order
    produce(broker.bootstrap_servers, topic, [
        {"key": f"k{i}".encode(), "value": json.dumps({"T": t, "V": i}).encode(), "timestamp": BASE + i}
        for i, t in enumerate(times)])
    query = ksql.sql(f"CREATE STREAM Z_{src} WITH (TIMESTAMP='T') AS SELECT * FROM {src};")
    assert query.wait_for_records(len(times), 180), query.failure
    got = sorted(read_back(broker, f"Z_{src}", len(times)), key=lambda r: r["offset"])
    assert [(r["key"], json.loads(r["value"]), r["timestamp"]) for r in got] == [
        (f"k{i}".encode(), {"T": t, "V": i}, t) for i, t in enumerate(times)]


def test_a_record_without_a_key_keeps_none_through_a_multi_column_key(ksql, broker):
    src, topic = tagged("N")
    ksql.sql(f"CREATE STREAM {src} (K INT KEY, K2 INT KEY, V INT) WITH (kafka_topic='{topic}', format='JSON', "
             "partitions=1);")
    keys = [b'{"K":1,"K2":2}', b'{"K":null,"K2":2}', None, b'{"K":null,"K2":null}']
    produce(broker.bootstrap_servers, topic, [
        {"key": key, "value": json.dumps({"V": i}).encode(), "timestamp": BASE + i} for i, key in enumerate(keys)])
    # multi-col-keys.json "select * from stream": a NULL key stays NULL, a key of NULL columns stays one
    as_json = ksql.sql(f"CREATE STREAM J_{src} AS SELECT * FROM {src};")
    delimited = ksql.sql(f"CREATE STREAM D_{src} WITH (KEY_FORMAT='DELIMITED') AS SELECT * FROM {src};")
    for query in (as_json, delimited):
        assert query.wait_for_records(4, 180), query.failure
    got = sorted(read_back(broker, f"J_{src}", 4), key=lambda r: r["offset"])
    assert [(r["key"], json.loads(r["value"]), r["timestamp"]) for r in got] == [
        (key, {"V": i}, BASE + i) for i, key in enumerate(keys)]
    got = sorted(read_back(broker, f"D_{src}", 4), key=lambda r: r["offset"])
    assert [(r["key"], json.loads(r["value"]), r["timestamp"]) for r in got] == [
        (key, {"V": i}, BASE + i) for i, key in enumerate([b"1,2", b",2", None, b","])]


def test_insert_values_with_a_rowtime_of_zero_writes_time_zero(session, broker):
    src, topic = tagged("I")
    session.sql(f"CREATE STREAM {src} (ID INT KEY, V STRING) WITH (kafka_topic='{topic}', value_format='JSON', "
                "partitions=1);")
    session.sql(f"INSERT INTO {src} (ID, V, ROWTIME) VALUES (1, 'a', 0);"
                f"INSERT INTO {src} (ID, V, ROWTIME) VALUES (2, 'b', 5);")
    got = sorted(read_back(broker, topic, 2), key=lambda r: r["offset"])
    assert [(r["key"], json.loads(r["value"]), r["timestamp"]) for r in got] == [
        (struct.pack(">i", 1), {"V": "a"}, 0), (struct.pack(">i", 2), {"V": "b"}, 5)]


def test_a_keyless_stream_takes_key_format_none_and_an_unknown_format_is_named_first(ksql, broker):
    """none.json "in CSAS from keyless stream" and "as key format of keyless stream"; formats.json
    "invalid key format - create as select" (`Unknown format: FOO`, before anything about keys)."""
    src, topic = tagged("NK")
    ksql.sql(f"CREATE STREAM {src} (FOO INT) WITH (kafka_topic='{topic}', key_format='KAFKA', "
             "value_format='JSON', partitions=1);")
    produce(broker.bootstrap_servers, topic, [{"key": None, "value": b'{"FOO": 10}', "timestamp": BASE + 1}])
    with pytest.raises(StatementError, match="^Unknown format: FOO$"):
        ksql.sql(f"CREATE STREAM BAD_{src} WITH (KEY_FORMAT='FOO') AS SELECT * FROM {src};")
    got = written(ksql, broker, f"CREATE STREAM O_{src} WITH (KEY_FORMAT='NONE') AS SELECT * FROM {src};", 1)
    assert [(r["key"], r["value"], r["timestamp"]) for r in got] == [(None, b'{"FOO":10}', BASE + 1)]
    assert ksql.sql(f"DESCRIBE O_{src};").iloc[:, 0].tolist() == ["FOO"]
    ksql.sql(f"CREATE STREAM N_{src} (FOO INT) WITH (kafka_topic='{topic}', key_format='NONE', value_format='JSON');")
    got = written(ksql, broker, f"CREATE STREAM C_{src} AS SELECT * FROM N_{src};", 1)
    assert [(r["key"], r["value"], r["timestamp"]) for r in got] == [(None, b'{"FOO":10}', BASE + 1)]
