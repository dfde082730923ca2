"""A NULL value (tombstone) on a STREAM, through persistent queries, as ksqlDB's query-validation
tests show it (`null.json`, `project-filter.json`, `partition-by.json`): a projection passes it
on as a tombstone under its key, a WHERE clause drops it, and PARTITION BY keys it by what the
key columns alone compute (NULL for an expression that reads a value column). Read back from the
sink topics record by record."""

from __future__ import annotations

import json
import struct
import time
import uuid

from kafkasql_magic.kafka.peek import fetch_records
from kafkasql_magic.kafka.producer import produce

BASE = 1_700_000_000_000
INT = struct.Struct(">i").pack


def _source(ksql, broker):
    tag = uuid.uuid4().hex[:8].upper()
    name, topic = f"TS_{tag}", f"t-ts-{tag.lower()}"
    ksql.sql(f"CREATE STREAM {name} (ID INT KEY, NAME STRING) WITH (kafka_topic='{topic}', value_format='JSON', "
             "partitions=1);")
    produce(broker.bootstrap_servers, topic, [
        {"key": INT(1), "value": b'{"NAME": "a"}', "timestamp": BASE + 1},
        {"key": INT(2), "value": None, "timestamp": BASE + 2},
        {"key": INT(3), "value": b'{"NAME": null}', "timestamp": BASE + 3},
        {"key": INT(4), "value": b'{"NAME": "b"}', "timestamp": BASE + 4},  # the last: the sink is complete with it
    ])
    return name, tag


def _written(ksql, broker, sink: str) -> list[tuple]:
    """(key, value as JSON or None, timestamp) of every record in `sink`'s topic, once the
    record of the source's last one (time BASE + 4) is there."""
    query = next(q for q in ksql.persistent.queries.values() if q.sink == sink)
    deadline = time.monotonic() + 120
    while True:
        got = fetch_records(broker.bootstrap_servers, query.sink_topic, from_beginning=True, limit=None,
                            timeout_s=5, until_end=True)
        if any(r["timestamp"] == BASE + 4 for r in got):
            break
        assert time.monotonic() < deadline, (query.failure, got)  # a failed query retries: wait on
        time.sleep(0.5)
    return [(r["key"], None if r["value"] is None else json.loads(r["value"]), r["timestamp"])
            for r in sorted(got, key=lambda r: r["offset"])]


def test_a_projection_passes_a_tombstone_on_and_a_where_clause_drops_it(ksql, broker):
    src, tag = _source(ksql, broker)
    ksql.sql(f"CREATE STREAM P_{tag} AS SELECT ID, NAME FROM {src};"
             f"CREATE STREAM W_{tag} AS SELECT * FROM {src} WHERE NAME IS NULL OR NAME = 'b';")
    assert _written(ksql, broker, f"P_{tag}") == [
        (INT(1), {"NAME": "a"}, BASE + 1),
        (INT(2), None, BASE + 2),  # a tombstone in, a tombstone out, under its key
        (INT(3), {"NAME": None}, BASE + 3),
        (INT(4), {"NAME": "b"}, BASE + 4)]
    assert _written(ksql, broker, f"W_{tag}") == [  # NAME IS NULL holds over a NULL row: still dropped
        (INT(3), {"NAME": None}, BASE + 3),
        (INT(4), {"NAME": "b"}, BASE + 4)]


def test_partition_by_keys_a_tombstone_by_the_key_columns_alone(ksql, broker):
    src, tag = _source(ksql, broker)
    ksql.sql(f"CREATE STREAM N_{tag} AS SELECT * FROM {src} PARTITION BY NAME;"
             f"CREATE STREAM K_{tag} AS SELECT ID + 2, NAME FROM {src} PARTITION BY ID + 2;")
    assert _written(ksql, broker, f"N_{tag}") == [
        (b"a", {"ID": 1}, BASE + 1),
        (None, None, BASE + 2),  # NAME of a NULL row: a NULL key
        (None, {"ID": 3}, BASE + 3),
        (b"b", {"ID": 4}, BASE + 4)]
    assert _written(ksql, broker, f"K_{tag}") == [
        (INT(3), {"NAME": "a"}, BASE + 1),
        (INT(4), None, BASE + 2),  # computed from the key alone
        (INT(5), {"NAME": None}, BASE + 3),
        (INT(6), {"NAME": "b"}, BASE + 4)]
