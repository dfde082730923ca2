"""SESSION windows with ksqlDB's semantics on a real broker, in Spark's keyed state: a record
within the inactivity gap extends a session, one within the gap of two sessions merges them, the
old sessions are retracted (NULL values in the push result, tombstones in a CTAS changelog) and
the new one emitted; a record whose session would end more than gap + grace behind stream time
is dropped and logged; EMIT FINAL writes each session once closed; a persistent query restarted
resumes its sessions from its checkpoint."""

import json
import time
import uuid

import pandas as pd
import pytest

import kafkasql_magic as ks
from kafkasql_magic.kafka.peek import fetch_records
from kafkasql_magic.kafka.producer import produce

from checkpoints import committed, restartable

T0 = 1_700_000_040_000
DAY = 86_400
RECORDS = [  # (key, seconds after T0); two records per micro-batch
    ("a", 0), ("a", 5),        # session a [0, 5]
    ("a", 22), ("b", 1),       # a [22, 22] (17 s after 5: beyond the 10-second gap), b [1, 1]
    ("a", 14), ("a", DAY),     # 14 is within the gap of both: a [0, 22], replacing [0, 5] and [22, 22]
    ("c", 50),                 # a day behind stream time, beyond the 1-hour grace: late (offset 6)
]
WINDOW = "WINDOW SESSION (10 SECONDS, GRACE PERIOD 1 HOUR)"
FINAL = {("a", 0, 22): 4, ("b", 1, 1): 1, ("a", DAY, DAY): 1}
RETRACTED = {("a", 0, 5), ("a", 22, 22)}


@pytest.fixture(scope="module")
def visits(broker, spark):
    from kafkasql_magic.kafka.admin import create_topic

    topic = f"visits-{uuid.uuid4().hex[:12]}"
    create_topic(broker.bootstrap_servers, topic, 1)
    produce(broker.bootstrap_servers, topic, [
        {"key": key, "value": f'{{"n": {i}}}', "timestamp": T0 + seconds * 1000}
        for i, (key, seconds) in enumerate(RECORDS)])
    s = ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark, timeout=90, max_records_per_trigger=2)
    s.sql(f"SET 'auto.offset.reset'='earliest'; CREATE STREAM visits (k STRING KEY, n INT) "
          f"WITH (kafka_topic='{topic}', value_format='JSON');")
    s.topic = topic
    yield s
    s.stop()


def table_of(changes) -> dict:
    """(key, start, end in seconds after T0) -> count, after every change (None retracts)."""
    table = {}
    for key, start, end, count in changes:
        window = (key, (start - T0) // 1000, (end - T0) // 1000)
        if count is None:
            table.pop(window, None)
        else:
            table[window] = count
    return table


def test_push_query_merges_sessions_and_retracts_the_replaced_ones(visits):
    handle = visits.sql(f"SELECT k, WINDOWSTART AS ws, WINDOWEND AS we, COUNT(*) AS c, COLLECT_LIST(n) AS ns "
                        f"FROM visits {WINDOW} GROUP BY k EMIT CHANGES;")
    deadline = time.monotonic() + 180
    changes = []
    while time.monotonic() < deadline:
        rows = handle.rows()
        changes = [(r.K, r.WS, r.WE, None if pd.isna(r.C) else int(r.C)) for r in rows.itertuples()]
        if table_of(changes) == FINAL and len(visits.processing_log(query=handle.id)):
            break
        time.sleep(0.5)
    handle.stop()
    assert table_of(changes) == FINAL
    retracted = {(k, (s - T0) // 1000, (e - T0) // 1000) for k, s, e, c in changes if c is None}
    assert retracted == RETRACTED
    merged = rows[(rows.K == "a") & (rows.WS == T0) & (rows.WE == T0 + 22_000)].iloc[-1]
    assert sorted(merged.NS) == [0, 1, 2, 4]
    log = visits.processing_log(query=handle.id)
    assert list(log.OFFSET) == [6] and log.MESSAGE.iloc[0].startswith("Skipping record for expired window.")


def test_ctas_writes_tombstones_for_replaced_sessions_with_ksqldb_session_keys(visits, broker):
    sink = f"SESSIONS_{uuid.uuid4().hex[:8].upper()}"
    query = visits.sql(f"CREATE TABLE {sink} AS SELECT k, WINDOWSTART AS ws, WINDOWEND AS we, COUNT(*) AS c "
                       f"FROM visits {WINDOW} GROUP BY k;")
    try:
        deadline, changes = time.monotonic() + 180, []
        while time.monotonic() < deadline and table_of(changes) != FINAL:
            records = fetch_records(broker.bootstrap_servers, sink, from_beginning=True, limit=None, timeout_s=2,
                                    until_end=False)
            # Kafka Streams' session key: the inner key, the end, then the start (8 bytes each)
            changes = [(r["key"][:-16].decode(), int.from_bytes(r["key"][-8:], "big"),
                        int.from_bytes(r["key"][-16:-8], "big"),
                        None if r["value"] is None else json.loads(r["value"])["C"]) for r in records]
    finally:
        visits.sql(f"TERMINATE {query.id};")
    assert table_of(changes) == FINAL
    assert {(k, (s - T0) // 1000, (e - T0) // 1000) for k, s, e, c in changes if c is None} == RETRACTED


def _produce(broker, topic, records, base=T0):
    produce(broker.bootstrap_servers, topic, [
        {"key": key, "value": json.dumps({"V": v}), "timestamp": base + at} for key, v, at in records])


def _sessions(broker, topic, count, base=T0):
    """(inner key, start, end in ms after `base`, value or None, record time after `base`) of each
    record in offset order: Kafka Streams' session key is the inner key, the end, then the start."""
    records = fetch_records(broker.bootstrap_servers, topic, from_beginning=True, limit=count, timeout_s=30,
                            until_end=True)
    return [(r["key"][:-16].decode(), int.from_bytes(r["key"][-8:], "big") - base,
             int.from_bytes(r["key"][-16:-8], "big") - base, None if r["value"] is None else json.loads(r["value"]),
             r["timestamp"] - base) for r in sorted(records, key=lambda r: (r["partition"], r["offset"]))]


def test_cache_off_writes_each_records_tombstones_then_its_session_as_ksqldb_does(ksql, broker):
    """ksqlDB's "out of order - no grace period" (session-windows.json) plus a key whose bridging
    record merges two sessions that came in the other order: LATEST_BY_OFFSET keeps the value that
    came last, COLLECT_LIST the merged sessions' values in end order, then the record's."""
    tag = uuid.uuid4().hex[:8].upper()
    src, topic, sink = f"O_{tag}", f"o-{tag.lower()}", f"OS_{tag}"
    ksql.sql(f"CREATE STREAM {src} (K STRING KEY, V BIGINT) WITH (kafka_topic='{topic}', value_format='JSON', "
             "partitions=1);")
    _produce(broker, topic, [("0", 0, 0), ("0", 1, 70010), ("0", 5, 10009), ("0", 6, 10010),
                             ("1", 100, 10009), ("1", 101, 10010), ("1", 200, 86412022), ("1", 200, 60000),
                             ("2", 7, 60000), ("2", 8, 0), ("2", None, 30000)])
    ksql.sql("SET 'cache.max.bytes.buffering'='0';")
    query = ksql.sql(f"CREATE TABLE {sink} AS SELECT K, MAX(V) AS M, LATEST_BY_OFFSET(V) AS L, COLLECT_LIST(V) AS C "
                     f"FROM {src} WINDOW SESSION (30 SECONDS) GROUP BY K;")
    assert query.wait_for_records(16, 120), query.failure

    def row(m, latest=None, collected=None):
        return {"M": m, "L": m if latest is None else latest, "C": collected or [m]}
    assert _sessions(broker, sink, 17) == [
        ("0", 0, 0, row(0), 0), ("0", 70010, 70010, row(1), 70010),
        ("0", 0, 0, None, 0), ("0", 0, 10009, row(5, 5, [0, 5]), 10009),
        ("0", 0, 10009, None, 10009), ("0", 0, 10010, row(6, 6, [0, 5, 6]), 10010),
        ("1", 10009, 10009, row(100), 10009),
        ("1", 10009, 10009, None, 10009), ("1", 10009, 10010, row(101, 101, [100, 101]), 10010),
        ("1", 86412022, 86412022, row(200), 86412022), ("1", 60000, 60000, row(200), 60000),
        ("2", 60000, 60000, row(7), 60000), ("2", 0, 0, row(8), 0),
        ("2", 0, 0, None, 0), ("2", 60000, 60000, None, 60000), ("2", 0, 60000, row(8, 8, [8, 7, None]), 60000)]


def test_emit_final_writes_each_session_once_it_closes(ksql, broker):
    """ksqlDB's "should support final results for session windows" (suppress.json): 17 would merge
    with [0, 14] into a session ending before stream time 30 minus gap and grace: late."""
    tag = uuid.uuid4().hex[:8].upper()
    src, topic, sink = f"F_{tag}", f"f-{tag.lower()}", f"FS_{tag}"
    ksql.sql(f"CREATE STREAM {src} (K STRING KEY, V BIGINT) WITH (kafka_topic='{topic}', value_format='JSON', "
             "partitions=1);")
    _produce(broker, topic, [("k1", 1, at) for at in (0, 4, 8, 12, 14, 30, 29, 17, 42)])
    query = ksql.sql(f"CREATE TABLE {sink} AS SELECT K, COUNT(*) AS N FROM {src} "
                     "WINDOW SESSION (5 MILLISECONDS, GRACE PERIOD 6 MILLISECONDS) GROUP BY K EMIT FINAL;")
    assert query.wait_for_records(2, 120), query.failure
    time.sleep(3)  # [42, 42] stays open: nothing more comes
    assert _sessions(broker, sink, 3) == [("k1", 0, 14, {"N": 5}, 14), ("k1", 29, 30, {"N": 2}, 30)]
    log = ksql.processing_log(query=query.id)
    assert list(log.MESSAGE) == [
        f"Skipping record for expired window. topic=[{topic}] partition=[0] offset=[7] timestamp=[{T0 + 17}] "
        f"window=[{T0 + 17},{T0 + 17}] expiration=[{T0 + 19}] streamTime=[{T0 + 30}]"]


def test_a_session_query_resumes_its_sessions_after_a_restart(broker, spark, registry, tmp_path):
    """The sessions live in the query's checkpoint: a record after the restart bridging two
    sessions from before it merges them, and both are retracted."""
    connect = restartable(broker, spark, tmp_path, registry)

    tag = uuid.uuid4().hex[:8].upper()
    src, topic, sink = f"R_{tag}", f"r-{tag.lower()}", f"RS_{tag}"
    first = connect()
    try:
        first.sql("SET 'auto.offset.reset'='earliest';")
        first.sql(f"CREATE STREAM {src} (K STRING KEY, V BIGINT) WITH (kafka_topic='{topic}', value_format='JSON', "
                  "partitions=1);")
        _produce(broker, topic, [("a", 1, 0), ("a", 2, 5_000), ("a", 3, 22_000)])
        query = first.sql(f"CREATE TABLE {sink} AS SELECT K, COUNT(*) AS N, SUM(V) AS S FROM {src} {WINDOW} "
                          "GROUP BY K;")
        assert query.wait_for_records(2, 120), query.failure
        committed(query)  # else the batch in flight runs again
    finally:
        first.stop()
    before = len(_sessions(broker, sink, 10))
    _produce(broker, topic, [("a", 4, 14_000)])  # within the gap of [0, 5] and of [22, 22]
    second = connect()  # restores the query from the command topic and resumes it from its checkpoint
    try:
        query = next(iter(second.persistent.queries.values()))
        assert query.wait_for_records(3, 120), query.failure
    finally:
        second.stop()
    after = _sessions(broker, sink, before + 3)[before:]
    assert after == [("a", 0, 5_000, None, 5_000), ("a", 22_000, 22_000, None, 22_000),
                     ("a", 0, 22_000, {"N": 4, "S": 10}, 22_000)]
