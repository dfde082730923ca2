"""TUMBLING and HOPPING windows in Spark's keyed state (engine/window): stream time, each group's
open windows and their timers live in the query's checkpoint, so a persistent windowed query
stopped and restarted resumes with them; the sink topic read back."""

from __future__ import annotations

import json
import time
import uuid

from kafkasql_magic.kafka.peek import fetch_records
from kafkasql_magic.kafka.producer import produce

from checkpoints import committed, restartable

BASE = 1_700_000_040_000  # a whole minute: 10-second windows start at BASE + 10 s * n
WINDOW = "WINDOW TUMBLING (SIZE 10 SECONDS, GRACE PERIOD 5 SECONDS)"


def _produce(broker, topic, records):
    produce(broker.bootstrap_servers, topic, [
        {"value": json.dumps({"K": k, "V": v}).encode(), "timestamp": BASE + seconds * 1000}
        for k, v, seconds in records])


def _windows(broker, topic, count):
    """(inner key, window start in seconds after BASE, value) of each record, in offset order."""
    records = fetch_records(broker.bootstrap_servers, topic, from_beginning=True, limit=count, timeout_s=30,
                            until_end=True)
    return [(r["key"][:-8].decode(), (int.from_bytes(r["key"][-8:], "big") - BASE) // 1000, json.loads(r["value"]))
            for r in sorted(records, key=lambda r: (r["partition"], r["offset"]))]


def test_a_windowed_table_resumes_its_windows_and_stream_time_after_a_restart(broker, spark, registry, tmp_path):

    connect = restartable(broker, spark, tmp_path, registry)

    tag = uuid.uuid4().hex[:8].upper()
    src, topic, sink = f"W_{tag}", f"w-{tag.lower()}", f"WC_{tag}"
    first = connect()
    try:
        first.sql("SET 'auto.offset.reset'='earliest';")
        first.sql(f"CREATE STREAM {src} (ID INT KEY, K STRING, V INT) "
                  f"WITH (kafka_topic='{topic}', value_format='JSON', partitions=1);")
        _produce(broker, topic, [("a", 1, 1), ("a", 2, 30)])  # stream time 30 s: [0, 10) closed
        query = first.sql(f"CREATE TABLE {sink} AS SELECT K, COUNT(*) AS N, SUM(V) AS S FROM {src} {WINDOW} "
                          f"GROUP BY K;")
        assert query.wait_for_records(2, 120), query.failure
        committed(query)  # else the batch in flight runs again
    finally:
        first.stop()
    _produce(broker, topic, [("a", 4, 2), ("a", 8, 31)])  # late for [0, 10); [30, 40) still open
    second = connect()  # restores the query from the command topic and resumes it from its checkpoint
    try:
        query = next(iter(second.persistent.queries.values()))
        assert query.wait_for_records(1, 120), query.failure
        time.sleep(3)  # a late record would have been counted by now
        log = second.processing_log(query=query.id)
    finally:
        second.stop()
    assert _windows(broker, sink, 4) == [("a", 0, {"N": 1, "S": 1}), ("a", 30, {"N": 1, "S": 2}),
                                         ("a", 30, {"N": 2, "S": 10})]
    assert [m.split(" topic=")[0] for m in log.MESSAGE] == ["Skipping record for expired window."]
    assert f"streamTime=[{BASE + 30_000}]" in log.MESSAGE.iloc[0]


def test_cache_off_writes_one_change_per_record_and_window(ksql, broker):
    """ksqlDB's record cache off: each record writes the new row of every window it falls in
    (a HOPPING record: each of its windows, oldest first), not one row per window and batch."""
    tag = uuid.uuid4().hex[:8].upper()
    src, topic, sink = f"H_{tag}", f"h-{tag.lower()}", f"HC_{tag}"
    ksql.sql(f"CREATE STREAM {src} (ID INT KEY, K STRING, V INT) "
             f"WITH (kafka_topic='{topic}', value_format='JSON', partitions=1);")
    _produce(broker, topic, [("a", 1, 1), ("a", 2, 6), ("b", 3, 7)])  # a@1 s: windows [-5, 5) and [0, 10)
    ksql.sql("SET 'cache.max.bytes.buffering'='0';")
    query = ksql.sql(f"CREATE TABLE {sink} AS SELECT K, COUNT(*) AS N, SUM(V) AS S FROM {src} "
                     f"WINDOW HOPPING (SIZE 10 SECONDS, ADVANCE BY 5 SECONDS) GROUP BY K;")
    assert query.wait_for_records(6, 120), query.failure
    written = _windows(broker, sink, 7)
    by_window = {}
    for key, start, value in written:
        by_window.setdefault((key, start), []).append((value["N"], value["S"]))
    assert len(written) == 6
    assert by_window == {("a", -5): [(1, 1)], ("a", 0): [(1, 1), (2, 3)], ("a", 5): [(1, 2)],
                         ("b", 0): [(1, 3)], ("b", 5): [(1, 3)]}


def test_a_windowed_aggregation_after_a_stream_table_join(session, broker):
    """The table as keyed state (LookupJoin) before the windows' two keyed steps, in one query."""
    tag = uuid.uuid4().hex[:8].upper()
    orders, items = f"o-{tag.lower()}", f"i-{tag.lower()}"
    session.sql(f"CREATE STREAM O_{tag} (ID INT KEY, ITEM STRING) WITH (kafka_topic='{orders}', value_format='JSON', "
                f"partitions=1); CREATE TABLE I_{tag} (ITEM STRING PRIMARY KEY, PRICE INT) "
                f"WITH (kafka_topic='{items}', value_format='JSON', partitions=1);")
    produce(broker.bootstrap_servers, items, [{"key": b"x", "value": b'{"PRICE": 3}', "timestamp": BASE}])
    produce(broker.bootstrap_servers, orders, [
        {"value": json.dumps({"ITEM": "x"}).encode(), "timestamp": BASE + seconds * 1000} for seconds in (1, 2, 12)])
    rows = session.sql(f"SELECT o.item, WINDOWSTART AS ws, COUNT(*) AS n, SUM(i.price) AS s FROM O_{tag} o "
                       f"JOIN I_{tag} i ON o.item = i.item WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY o.item "
                       f"EMIT CHANGES LIMIT 2;")
    assert {((r.WS - BASE) // 1000, r.N, r.S) for r in rows.itertuples()} == {(0, 2, 6), (10, 1, 3)}


def test_records_of_the_year_9999_and_of_1970_are_counted_in_their_windows(ksql, broker):
    """Stream time rides on a watermark column centuries ahead of the record time; a record near
    the largest timestamp must still be windowed, not fail the query."""
    tag = uuid.uuid4().hex[:8].upper()
    src, topic, sink = f"WY_{tag}", f"wy-{tag.lower()}", f"WYC_{tag}"
    last = 253402300790000  # 9999-12-31T23:59:50Z, a window's start
    ksql.sql(f"CREATE STREAM {src} (K STRING, V BIGINT) WITH (kafka_topic='{topic}', value_format='JSON', "
             "partitions=1);")
    produce(broker.bootstrap_servers, topic, [
        {"value": json.dumps({"K": "a", "V": 2**53 + 1}).encode(), "timestamp": 1000},
        {"value": json.dumps({"K": "a", "V": None}).encode(), "timestamp": 2000},
        {"value": json.dumps({"K": "a", "V": 5}).encode(), "timestamp": last + 1000}])
    query = ksql.sql(f"CREATE TABLE {sink} AS SELECT K, COUNT(*) AS N, MAX(V) AS M FROM {src} "
                     f"WINDOW TUMBLING (SIZE 10 SECONDS, GRACE PERIOD 1 SECOND) GROUP BY K;")
    assert query.wait_for_records(2, 120), query.failure
    records = fetch_records(broker.bootstrap_servers, sink, from_beginning=True, limit=2, timeout_s=30,
                            until_end=True)
    got = sorted((int.from_bytes(r["key"][-8:], "big"), json.loads(r["value"])) for r in records)
    assert got == [(0, {"N": 2, "M": 2**53 + 1}), (last, {"N": 1, "M": 5})]


def test_a_nan_argument_is_a_value_not_a_null(ksql, broker):
    """SQRT(-1) is NaN (ksqlDB's Java doubles), which COUNT counts: pandas, through which each
    record passes on its way to the windows, holds NaN as NULL."""
    tag = uuid.uuid4().hex[:8].upper()
    src, topic, sink = f"WN_{tag}", f"wn-{tag.lower()}", f"WNC_{tag}"
    ksql.sql(f"CREATE STREAM {src} (K STRING, V DOUBLE) WITH (kafka_topic='{topic}', value_format='JSON', "
             "partitions=1);")
    _produce(broker, topic, [("a", -1.0, 1), ("a", 4.0, 2), ("a", None, 3)])
    query = ksql.sql(f"CREATE TABLE {sink} AS SELECT K, COUNT(SQRT(V)) AS C, COUNT(*) AS N FROM {src} {WINDOW} "
                     "GROUP BY K;")
    assert query.wait_for_records(1, 120), query.failure
    assert _windows(broker, sink, 1)[-1] == ("a", 0, {"C": 2, "N": 3})
