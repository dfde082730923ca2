"""A windowed CREATE TABLE AS writes its window into the record key whether or not it selects
WINDOWSTART / WINDOWEND, as ksqlDB serializes windowed keys: the inner key, then the 8-byte window
start (TUMBLING, HOPPING), or the 8-byte end then start (SESSION)."""

from __future__ import annotations

import json
import struct
import time
import uuid

from kafkasql_magic.kafka.peek import fetch_records
from kafkasql_magic.kafka.producer import produce

BASE = 1_700_000_000_000
KEY = struct.pack(">i", 7)


def _source(ksql, broker):
    tag = uuid.uuid4().hex[:8].upper()
    src, topic = f"S_{tag}", f"t-{tag.lower()}"
    ksql.sql(f"CREATE STREAM {src} (ID INT KEY, V STRING) WITH (kafka_topic='{topic}', value_format='JSON', partitions=1);")
    produce(broker.bootstrap_servers, topic, [
        {"key": KEY, "value": b'{"V": "x"}', "timestamp": BASE + offset} for offset in (0, 1000, 12000)])
    return src


def _table(ksql, broker, statement: str, sink: str, expected: dict) -> dict:
    """The sink topic read back as a table (key bytes -> value; a tombstone deletes its key)."""
    query = ksql.sql(statement)
    table, deadline = {}, time.monotonic() + 120
    try:
        while table != expected and time.monotonic() < deadline:
            assert query.failure is None, query.failure
            table = {}
            for r in fetch_records(broker.bootstrap_servers, sink, from_beginning=True, limit=None, timeout_s=2,
                                   until_end=False):
                if r["value"] is None:
                    table.pop(r["key"], None)
                else:
                    table[r["key"]] = json.loads(r["value"])
    finally:
        ksql.sql(f"TERMINATE {query.id};")
    return table


def test_tumbling_table_not_selecting_windowstart_keys_records_by_window_start(ksql, broker):
    src = _source(ksql, broker)
    out = f"W_{src}"
    start = BASE - BASE % 10_000
    expected = {KEY + struct.pack(">q", start): {"N": 2}, KEY + struct.pack(">q", start + 10_000): {"N": 1}}
    assert _table(ksql, broker, f"CREATE TABLE {out} AS SELECT ID, COUNT(*) AS N FROM {src} "
                                "WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY ID;", out, expected) == expected
    rows = ksql.sql(f"SELECT * FROM {out};")  # the bounds come back from the key, as ksqlDB's pseudocolumns
    assert sorted(rows.to_dict("records"), key=lambda r: r["WINDOWSTART"]) == [
        {"ID": 7, "WINDOWSTART": start, "WINDOWEND": start + 10_000, "N": 2},
        {"ID": 7, "WINDOWSTART": start + 10_000, "WINDOWEND": start + 20_000, "N": 1}]


def test_session_table_not_selecting_its_bounds_keys_records_by_end_then_start(ksql, broker):
    src = _source(ksql, broker)
    out = f"SES_{src}"

    def window(start, end):
        return KEY + struct.pack(">q", BASE + end) + struct.pack(">q", BASE + start)

    expected = {window(0, 1000): {"N": 2}, window(12000, 12000): {"N": 1}}
    assert _table(ksql, broker, f"CREATE TABLE {out} AS SELECT ID, COUNT(*) AS N FROM {src} "
                                "WINDOW SESSION (5 SECONDS) GROUP BY ID;", out, expected) == expected


def test_hopping_windows_start_at_the_epoch_at_the_earliest(ksql, broker):
    """hopping-windows.json: a record at 1 s in windows of 30 s advancing by 10 s is in the window
    starting at 0 only (Kafka Streams makes no window that starts before the epoch)."""
    tag = uuid.uuid4().hex[:8].upper()
    src, topic, out = f"H_{tag}", f"t-h-{tag.lower()}", f"HOP_{tag}"
    ksql.sql(f"CREATE STREAM {src} (ID INT KEY, V STRING) WITH (kafka_topic='{topic}', value_format='JSON', partitions=1);")
    produce(broker.bootstrap_servers, topic, [{"key": KEY, "value": b'{"V": "x"}', "timestamp": 1000}])
    expected = {KEY + struct.pack(">q", 0): {"N": 1}}
    assert _table(ksql, broker, f"CREATE TABLE {out} AS SELECT ID, COUNT(*) AS N FROM {src} "
                                "WINDOW HOPPING (SIZE 30 SECONDS, ADVANCE BY 10 SECONDS) GROUP BY ID;", out,
                  expected) == expected


def test_a_stream_over_a_windowed_source_keeps_each_records_window_in_its_key(ksql, broker):
    # tumbling-windows.json "import tumbling stream" and hopping-windows.json "import hopping stream":
    # CREATE STREAM ... AS SELECT * over a source WITH (WINDOW_TYPE=...) writes the window back into the key
    tag = uuid.uuid4().hex[:8].upper()
    src, topic = f"WS_{tag}", f"t-ws-{tag.lower()}"
    ksql.sql(f"CREATE STREAM {src} (K BIGINT KEY, ID BIGINT, VALUE BIGINT) WITH (kafka_topic='{topic}', "
             "value_format='DELIMITED', WINDOW_TYPE='HoPping', WINDOW_SIZE='30 seconds', partitions=1);")
    window = struct.pack(">q", 0)
    produce(broker.bootstrap_servers, topic, [
        {"key": struct.pack(">q", 0) + window, "value": b"1,0", "timestamp": 1},
        {"key": struct.pack(">q", 0) + window, "value": b"2,0", "timestamp": 10000}])
    query = ksql.sql(f"CREATE STREAM S2_{tag} AS SELECT * FROM {src};")
    assert query.wait_for_records(2, 120), query.failure
    got = fetch_records(broker.bootstrap_servers, f"S2_{tag}", from_beginning=True, limit=None, timeout_s=10)
    assert [(r["key"], r["value"], r["timestamp"]) for r in got] == [
        (struct.pack(">q", 0) + window, b"1,0", 1), (struct.pack(">q", 0) + window, b"2,0", 10000)]
