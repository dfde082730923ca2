"""Pull queries on tables: a key lookup reads only the key's partition, IN its keys' partitions,
ranges read everything and filter; windowed tables take WINDOWSTART/WINDOWEND bounds."""

from __future__ import annotations

import json
import struct
import uuid

import pytest

from kafkasql_magic.errors import StatementError
from kafkasql_magic.kafka.partitioner import default_partition
from kafkasql_magic.kafka.peek import fetch_records
from kafkasql_magic.kafka.producer import produce
from kafkasql_magic.sql import parse_statement
from kafkasql_magic.engine.api import prepare

PARTITIONS = 4


def names(prefix="t"):
    tag = uuid.uuid4().hex[:8]
    return f"{prefix.upper()}_{tag.upper()}", f"{prefix}-{tag}"


def key(i: int) -> bytes:
    return struct.pack(">i", i)


def read_of(ksql, text):
    """What a pull query reads, and how many raw records that read yields on Spark."""
    prepared = prepare(ksql, parse_statement(text))
    return prepared.read, ksql.raw_frame(prepared.read).count()


@pytest.fixture
def table(ksql, broker):
    """A table over a 4-partition changelog (keys 0..11 placed by the default partitioner,
    keys 3 and 5 updated, key 4 deleted): (name, records per partition)."""
    name, topic = names()
    ksql.sql(f"CREATE TABLE {name} (ID INT PRIMARY KEY, V STRING) "
             f"WITH (kafka_topic='{topic}', value_format='JSON', partitions={PARTITIONS});")
    records = [{"key": key(i), "value": json.dumps({"V": f"v{i}"}).encode()} for i in range(12)]
    records += [{"key": key(3), "value": b'{"V": "v3b"}'}, {"key": key(5), "value": b'{"V": "v5b"}'},
                {"key": key(4), "value": None}]
    produce(broker.bootstrap_servers, topic, records)
    per_partition = [0] * PARTITIONS
    for r in records:
        per_partition[default_partition(r["key"], PARTITIONS)] += 1
    return name, per_partition


def test_a_key_lookup_reads_only_the_keys_partition(ksql, table):
    name, per_partition = table
    part = default_partition(key(3), PARTITIONS)
    assert ksql.sql(f"SELECT * FROM {name} WHERE ID = 3;").to_dict("records") == [{"ID": 3, "V": "v3b"}]
    read, count = read_of(ksql, f"SELECT * FROM {name} WHERE ID = 3;")
    assert read.partitions == (part,) and read.options()["partitions"] == str(part)
    assert count == per_partition[part] < sum(per_partition)  # the raw records of that one partition
    assert ksql.sql(f"SELECT * FROM {name} WHERE ID = 4;").empty  # deleted
    explained = dict(ksql.sql(f"EXPLAIN SELECT * FROM {name} WHERE ID = 3;").values.tolist())
    assert explained["Reads"].startswith(f"partition {part} only, where Kafka's default partitioner puts the keys")


def test_in_reads_the_keys_partitions_and_ranges_filter_a_full_read(ksql, table):
    name, per_partition = table
    a, b = next((a, b) for a in range(12) for b in range(12)
                if a not in (4, b) and b != 4 and default_partition(key(a), PARTITIONS) != default_partition(key(b), PARTITIONS))
    got = ksql.sql(f"SELECT ID, V FROM {name} WHERE ID IN ({a}, {b}, 4);")
    assert sorted(got.ID) == sorted([a, b])
    read, count = read_of(ksql, f"SELECT * FROM {name} WHERE ID IN ({a}, {b});")
    parts = sorted({default_partition(key(a), PARTITIONS), default_partition(key(b), PARTITIONS)})
    assert read.partitions == tuple(parts) and count == sum(per_partition[p] for p in parts)
    ranged = ksql.sql(f"SELECT * FROM {name} WHERE ID > 2 AND ID <= 6;")
    assert sorted(ranged.to_dict("records"), key=lambda r: r["ID"]) == [
        {"ID": 3, "V": "v3b"}, {"ID": 5, "V": "v5b"}, {"ID": 6, "V": "v6"}]
    assert sorted(ksql.sql(f"SELECT ID FROM {name} WHERE ID BETWEEN 9 AND 20;").ID) == [9, 10, 11]
    read, count = read_of(ksql, f"SELECT * FROM {name} WHERE ID BETWEEN 9 AND 20;")
    assert read.partitions is None and count == sum(per_partition)


def test_a_ctas_table_lookup_reads_one_partition(ksql, broker):
    src, topic = names("s")
    out = f"C_{src}"
    ksql.sql(f"CREATE STREAM {src} (ID INT KEY, V INT) WITH (kafka_topic='{topic}', value_format='JSON', "
             f"partitions={PARTITIONS});")
    produce(broker.bootstrap_servers, topic, [{"key": key(i % 6), "value": json.dumps({"V": i}).encode()}
                                              for i in range(18)])
    query = ksql.sql(f"CREATE TABLE {out} AS SELECT ID, COUNT(*) AS N, SUM(V) AS TOTAL FROM {src} GROUP BY ID;")
    assert query.wait_for_records(6, 90), query.failure
    got = ksql.sql(f"SELECT * FROM {out} WHERE ID = 2;").to_dict("records")
    assert got == [{"ID": 2, "N": 3, "TOTAL": 2 + 8 + 14}]
    read, _ = read_of(ksql, f"SELECT * FROM {out} WHERE ID = 2;")
    assert read.partitions == (default_partition(key(2), PARTITIONS),)


def test_a_windowed_ctas_table_takes_window_bounds(ksql, broker):
    src, topic = names("w")
    out = f"W_{src}"
    base = 1_700_000_000_000
    start = base - base % 10_000
    ksql.sql(f"CREATE STREAM {src} (ID INT KEY, V STRING) WITH (kafka_topic='{topic}', value_format='JSON', "
             "partitions=2);")
    produce(broker.bootstrap_servers, topic, [
        {"key": key(k), "value": b'{"V": "x"}', "timestamp": base + t} for k, t in ((7, 0), (7, 1000), (7, 12000), (8, 500))])
    query = ksql.sql(f"CREATE TABLE {out} AS SELECT ID, WINDOWSTART AS WS, COUNT(*) AS N FROM {src} "
                     "WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY ID;")
    assert query.wait_for_records(3, 90), query.failure
    exact = ksql.sql(f"SELECT * FROM {out} WHERE ID = 7 AND WINDOWSTART = {start};")
    assert exact.to_dict("records") == [{"ID": 7, "WINDOWSTART": start, "WINDOWEND": start + 10_000, "WS": start, "N": 2}]
    later = ksql.sql(f"SELECT ID, WINDOWSTART, WINDOWEND, N, ROWTIME FROM {out} WHERE ID = 7 AND WINDOWSTART > {start};")
    assert later.to_dict("records") == [{"ID": 7, "WINDOWSTART": start + 10_000, "WINDOWEND": start + 20_000, "N": 1,
                                         "ROWTIME": base + 12000}]
    ranged = ksql.sql(f"SELECT ID, N FROM {out} WHERE WINDOWSTART >= {start} AND WINDOWEND <= {start + 10_000};")
    assert sorted(map(tuple, ranged.values.tolist())) == [(7, 2), (8, 1)]
    read, _ = read_of(ksql, f"SELECT * FROM {out} WHERE ID = 7;")
    assert read.partitions == (default_partition(key(7), 2),)  # the inner key's partition
    with pytest.raises(StatementError, match="^Duplicate WINDOWSTART bounds on: GREATER_THAN"):
        ksql.sql(f"SELECT * FROM {out} WHERE ID = 7 AND WINDOWSTART > 1 AND WINDOWSTART >= 2;")


def test_a_windowed_ctas_places_records_by_inner_key_and_a_lookup_reads_that_partition(ksql, broker):
    """Kafka Streams' windowed partitioner: murmur2 of the inner key only, so every window of a
    key is in one partition, and a key lookup on the windowed table reads that partition alone."""
    src, topic = names("p")
    out = f"P_{src}"
    base = 1_700_000_000_000 - 1_700_000_000_000 % 10_000
    ksql.sql(f"CREATE STREAM {src} (ID INT KEY, V STRING) WITH (kafka_topic='{topic}', value_format='JSON', "
             f"partitions={PARTITIONS});")
    produce(broker.bootstrap_servers, topic, [{"key": key(k), "value": b'{"V": "x"}', "timestamp": base + t}
                                              for k in range(8) for t in (0, 12_000)])
    query = ksql.sql(f"CREATE TABLE {out} AS SELECT ID, WINDOWSTART AS WS, COUNT(*) AS N FROM {src} "
                     "WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY ID;")
    assert query.wait_for_records(16, 90), query.failure
    written = fetch_records(broker.bootstrap_servers, out, from_beginning=True, limit=query.records_out,
                            timeout_s=30, until_end=False)
    assert len(written) == query.records_out >= 16
    assert {(r["key"][:-8], r["partition"]) for r in written} == {
        (key(k), default_partition(key(k), PARTITIONS)) for k in range(8)}  # each key's windows in its partition
    assert any(default_partition(r["key"], PARTITIONS) != r["partition"] for r in written)  # not the whole key's
    got = ksql.sql(f"SELECT ID, WINDOWSTART, N FROM {out} WHERE ID = 3;")
    assert sorted(map(tuple, got.values.tolist())) == [(3, base, 1), (3, base + 10_000, 1)]
    part = default_partition(key(3), PARTITIONS)
    read, count = read_of(ksql, f"SELECT * FROM {out} WHERE ID = 3;")
    assert read.partitions == (part,)
    assert count == sum(r["partition"] == part for r in written) < len(written)


def test_a_pull_query_leaves_out_windows_older_than_the_retention(ksql, broker):
    """ksqlDB's window store keeps, per partition, the windows whose start is after its stream
    time (the newest window start written) minus RETENTION: older ones are not returned."""
    src, topic = names("r")
    out = f"R_{src}"
    base = 1_700_000_000_000 - 1_700_000_000_000 % 10_000
    ksql.sql(f"CREATE STREAM {src} (ID INT KEY, V STRING) WITH (kafka_topic='{topic}', value_format='JSON', "
             "partitions=1);")
    produce(broker.bootstrap_servers, topic, [
        {"key": key(k), "value": b'{"V": "x"}', "timestamp": base + t}
        for k, t in ((7, 0), (8, 500), (7, 12_000), (9, 30_000), (9, 40_000), (7, 65_000))])
    query = ksql.sql(f"CREATE TABLE {out} AS SELECT ID, WINDOWSTART AS WS, COUNT(*) AS N FROM {src} "
                     "WINDOW TUMBLING (SIZE 10 SECONDS, RETENTION 30 SECONDS, GRACE PERIOD 0 SECONDS) GROUP BY ID;")
    assert query.wait_for_records(6, 90), query.failure
    # stream time is the window of 65 s (start 60 s): windows starting at 30 s or before are gone
    every = ksql.sql(f"SELECT ID, WINDOWSTART, N FROM {out};")
    assert sorted(map(tuple, every.values.tolist())) == [(7, base + 60_000, 1), (9, base + 40_000, 1)]
    one = ksql.sql(f"SELECT ID, WINDOWSTART, WINDOWEND, N FROM {out} WHERE ID = 9;")
    assert one.to_dict("records") == [{"ID": 9, "WINDOWSTART": base + 40_000, "WINDOWEND": base + 50_000, "N": 1}]
    assert ksql.sql(f"SELECT * FROM {out} WHERE ID = 8;").empty  # its only window expired
    assert ksql.catalog.get(out).properties["KAFKASQL_WINDOW_RETENTION"] == "30000"
