"""The records persistent queries write, as ksqlDB writes them (its query-validation tests
`having.json` and `headers.json` show the behaviours): a group failing HAVING is a tombstone,
an aggregation's record has the latest contributing time and the newest record's headers, and
a stream-stream join's record has the later record's time and headers. Read back with
confluent-kafka."""

from __future__ import annotations

import json
import struct
import uuid

from kafkasql_magic.kafka.partitioner import default_partition
from kafkasql_magic.kafka.peek import fetch_records
from kafkasql_magic.kafka.producer import produce

BASE = 1_700_000_000_000


def tagged(prefix: str) -> tuple[str, str]:
    tag = uuid.uuid4().hex[:8].upper()
    return f"{prefix}_{tag}", f"t-{prefix.lower()}-{tag.lower()}"


def record(key: bytes, value, ts: int, *headers) -> dict:
    return {"key": key, "value": None if value is None else json.dumps(value).encode(), "timestamp": ts,
            "headers": list(headers)}


def history(broker, topic: str, count: int) -> dict[bytes, list[dict]]:
    """The records of `topic` per key, oldest first."""
    got = fetch_records(broker.bootstrap_servers, topic, from_beginning=True, limit=count, timeout_s=30,
                        until_end=False)
    assert len(got) == count, got
    by_key: dict[bytes, list[dict]] = {}
    for r in sorted(got, key=lambda r: (r["partition"], r["offset"])):
        by_key.setdefault(r["key"], []).append(r)
    return by_key


def test_group_by_having_tombstones_and_record_time_and_headers(ksql, broker):
    src, topic = tagged("S")
    out = f"SUMS_{src}"
    ksql.sql(f"CREATE STREAM {src} (ID STRING KEY, V INT) WITH (kafka_topic='{topic}', value_format='JSON', "
             "partitions=1);")
    others = [f"k{i}".encode() for i in range(8)]  # small sums: a tombstone each, spread over the partitions
    produce(broker.bootstrap_servers, topic, [
        record(b"a", {"V": 50}, BASE + 1, ("h", b"a1")),
        record(b"b", {"V": 100}, BASE + 5, ("h", b"b1")),
        record(b"b", {"V": 50}, BASE + 3, ("h", b"b2"), ("x", None)),  # newer offset, older time
    ] + [record(k, {"V": 1}, BASE, ("h", k)) for k in others])
    query = ksql.sql(f"CREATE TABLE {out} WITH (PARTITIONS=4) AS SELECT ID, SUM(V) AS S FROM {src} "
                     "GROUP BY ID HAVING SUM(V) > 100;")
    assert query.wait_for_records(10, 180), query.failure
    first = {k: rs[0] for k, rs in history(broker, out, 10).items()}
    assert first[b"a"]["value"] is None  # never passed HAVING: a tombstone all the same (ksqlDB)
    assert all(first[k]["value"] is None for k in others)
    assert json.loads(first[b"b"]["value"]) == {"S": 150}
    assert (first[b"a"]["timestamp"], first[b"b"]["timestamp"]) == (BASE + 1, BASE + 5)  # latest contributing
    assert first[b"a"]["headers"] == [("h", b"a1")]
    assert first[b"b"]["headers"] == [("h", b"b2"), ("x", None)]  # the newest record counted
    # keyed records land where ksqlDB's (Java) producer puts them, so ksqlDB can join and look them up
    assert {k: r["partition"] for k, r in first.items()} == {k: default_partition(k, 4) for k in first}
    produce(broker.bootstrap_servers, topic, [
        record(b"a", {"V": 60}, BASE + 2, ("h", b"a2")),
        record(b"b", {"V": -100}, BASE + 9, ("h", b"b3")),
    ])
    assert query.wait_for_records(12, 180), query.failure
    second = {k: rs[1] for k, rs in history(broker, out, 12).items() if len(rs) > 1}
    assert json.loads(second[b"a"]["value"]) == {"S": 110}
    assert second[b"b"]["value"] is None  # stopped satisfying HAVING
    assert (second[b"a"]["timestamp"], second[b"b"]["timestamp"]) == (BASE + 2, BASE + 9)
    assert (second[b"a"]["headers"], second[b"b"]["headers"]) == ([("h", b"a2")], [("h", b"b3")])
    # a push query over the same aggregation still shows only the groups that pass HAVING
    rows = ksql.sql(f"SELECT ID, SUM(V) AS S FROM {src} GROUP BY ID HAVING SUM(V) > 100 EMIT CHANGES LIMIT 1;")
    assert rows.to_dict("records") == [{"ID": "a", "S": 110}]


def test_table_aggregation_writes_an_emptied_groups_count_of_zero(ksql, broker):
    src, topic = tagged("P")
    out = f"BYREGION_{src}"
    ksql.sql(f"CREATE TABLE {src} (ID INT PRIMARY KEY, REGION STRING) WITH (kafka_topic='{topic}', "
             "value_format='JSON', partitions=1);")
    key = struct.Struct(">i").pack
    produce(broker.bootstrap_servers, topic, [
        record(key(1), {"REGION": "eu"}, BASE + 1, ("h", b"p1")),
        record(key(2), {"REGION": "us"}, BASE + 2, ("h", b"p2"))])
    query = ksql.sql(f"CREATE TABLE {out} AS SELECT REGION, COUNT(*) AS N FROM {src} GROUP BY REGION;")
    assert query.wait_for_records(2, 90), query.failure
    produce(broker.bootstrap_servers, topic, [record(key(1), {"REGION": "us"}, BASE + 7, ("h", b"moved"))])
    assert query.wait_for_records(4, 90), query.failure
    changed = {k: rs[-1] for k, rs in history(broker, out, 4).items()}
    assert json.loads(changed[b"eu"]["value"]) == {"N": 0}  # its only row moved away: counted back to 0
    assert json.loads(changed[b"us"]["value"]) == {"N": 2}
    assert {r["timestamp"] for r in changed.values()} == {BASE + 7}  # the change's time and headers
    assert all(r["headers"] == [("h", b"moved")] for r in changed.values())


def test_stream_stream_join_takes_the_later_records_time_and_headers(ksql, broker):
    left, left_topic = tagged("L")
    right, right_topic = tagged("R")
    out = f"J_{left}"
    for name, topic, header in ((left, left_topic, "abc"), (right, right_topic, "def")):
        ksql.sql(f"CREATE STREAM {name} (A INT KEY, B INT, C BYTES HEADER('{header}')) WITH "
                 f"(kafka_topic='{topic}', value_format='JSON', partitions=1);")
    key = struct.Struct(">i").pack
    produce(broker.bootstrap_servers, left_topic, [
        record(key(0), {"B": 1}, BASE + 10, ("abc", b"!")),
        record(key(1), {"B": 2}, BASE + 30, ("abc", b"L1"))])
    produce(broker.bootstrap_servers, right_topic, [
        record(key(0), {"B": -1}, BASE + 11, ("def", b"#")),
        record(key(1), {"B": -2}, BASE + 25, ("def", b"R1"))])
    query = ksql.sql(f"CREATE STREAM {out} AS SELECT * FROM {left} INNER JOIN {right} WITHIN 10 SECONDS "
                     f"ON {left}.A = {right}.A;")
    assert query.wait_for_records(2, 180), query.failure
    got = {struct.unpack(">i", r["key"])[0]: r for r in  # keyed by the join column, as ksqlDB keys it
           fetch_records(broker.bootstrap_servers, out, from_beginning=True, limit=None, timeout_s=30)}
    assert json.loads(got[0]["value"]) == {f"{left}_B": 1, f"{left}_C": "IQ==", f"{right}_A": 0,
                                           f"{right}_B": -1, f"{right}_C": "Iw=="}
    assert (got[0]["timestamp"], got[0]["headers"]) == (BASE + 11, [("def", b"#")])  # the right one is later
    assert (got[1]["timestamp"], got[1]["headers"]) == (BASE + 30, [("abc", b"L1")])  # the left one is later


def test_insert_values_lands_keys_where_ksqldb_would(ksql, broker):
    name, topic = tagged("INS")
    produce(broker.bootstrap_servers, topic, [], create_partitions=4)
    ksql.sql(f"CREATE STREAM {name} (k STRING KEY, v INT) WITH (kafka_topic='{topic}', value_format='JSON');")
    keys = [f"key-{i}" for i in range(12)]
    ksql.sql("".join(f"INSERT INTO {name} (k, v) VALUES ('{k}', {i});" for i, k in enumerate(keys)))
    got = fetch_records(broker.bootstrap_servers, topic, from_beginning=True, limit=len(keys), timeout_s=30,
                        until_end=False)
    placed = {r["key"]: r["partition"] for r in got}
    assert placed == {k.encode(): default_partition(k.encode(), 4) for k in keys}
    assert len(set(placed.values())) > 1  # the keys spread: the check above can tell partitioners apart


def test_a_sink_wraps_its_single_value_whatever_its_source_does(ksql, broker):
    """json.json's 'anonymous - deserialize' cases: WRAP_SINGLE_VALUE=false is the source's, not the sink's."""
    src, topic = tagged("BARE")
    ksql.sql(f"CREATE STREAM {src} (V INT) WITH (WRAP_SINGLE_VALUE=false, kafka_topic='{topic}', "
             "value_format='JSON', partitions=1);")
    produce(broker.bootstrap_servers, topic, [{"key": None, "value": b"10", "timestamp": BASE}])
    query = ksql.sql(f"CREATE STREAM OUT_{src} AS SELECT * FROM {src};")
    assert query.wait_for_records(1, 180), query.failure
    assert [json.loads(r["value"]) for r in history(broker, f"OUT_{src}", 1)[None]] == [{"V": 10}]


def test_wrap_single_values_setting_reaches_sources_and_sinks(ksql, broker):
    """serdes.json's 'pick up value wrapping from config' cases: the setting is the default of a
    statement whose value is one column, for reading and for writing."""
    ksql.sql("SET 'ksql.persistence.wrap.single.values'='false';")
    src, topic = tagged("ONE")
    ksql.sql(f"CREATE STREAM {src} (K STRING KEY, FOO STRING) WITH (kafka_topic='{topic}', value_format='JSON', "
             "partitions=1);")
    two, two_topic = tagged("TWO")
    ksql.sql(f"CREATE STREAM {two} (K STRING KEY, FOO STRING, FOO2 STRING) WITH (kafka_topic='{two_topic}', "
             "value_format='JSON', partitions=1);")
    produce(broker.bootstrap_servers, topic, [{"key": b"k", "value": b'"bar"', "timestamp": BASE}])
    produce(broker.bootstrap_servers, two_topic, [record(b"k", {"FOO": "bar", "FOO2": "blar"}, BASE)])
    read = ksql.sql(f"CREATE STREAM R_{src} AS SELECT K, FOO, FOO AS FOO2 FROM {src};")
    written = ksql.sql(f"CREATE STREAM W_{two} AS SELECT K, FOO FROM {two};")
    for query in (read, written):
        assert query.wait_for_records(1, 180), query.failure
    assert json.loads(history(broker, f"R_{src}", 1)[b"k"][0]["value"]) == {"FOO": "bar", "FOO2": "bar"}
    assert json.loads(history(broker, f"W_{two}", 1)[b"k"][0]["value"]) == "bar"
