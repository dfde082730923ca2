"""GRACE PERIOD and EMIT FINAL on a real broker: stream time carried across micro-batches,
a record within the grace period counted, a late one dropped and logged, each closed window
emitted once by EMIT FINAL."""

import json
import time
import uuid

import pytest

import kafkasql_magic as ks
from kafkasql_magic.kafka.producer import produce

T0 = 1_700_000_040_000  # a whole minute, so 10-second windows start at T0 + 10 s * n
RECORDS = [  # (key, seconds after T0); stream time is the largest so far
    ("a", 1), ("a", 3), ("b", 12), ("a", 14),
    ("a", 4),   # stream time 14 < window [0, 10) end + grace (15): counted
    ("b", 21),
    ("a", 5),   # stream time 21 >= 15: late, dropped and logged (offset 6)
    ("a", 16), ("c", 40),  # 40 closes [10, 20) and [20, 30)
]
LATE_OFFSET = 6
WINDOW = "WINDOW TUMBLING (SIZE 10 SECONDS, RETENTION 1 HOUR, GRACE PERIOD 5 SECONDS)"


@pytest.fixture(scope="module")
def clicks(broker, spark):
    from kafkasql_magic.kafka.admin import create_topic

    topic = f"clicks-{uuid.uuid4().hex[:12]}"
    create_topic(broker.bootstrap_servers, topic, 1)
    produce(broker.bootstrap_servers, topic, [
        {"key": key, "value": f'{{"n": {i}}}', "timestamp": T0 + seconds * 1000}
        for i, (key, seconds) in enumerate(RECORDS)])
    # five records per micro-batch: stream time and open windows must carry from batch to batch
    s = ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark, timeout=90, max_records_per_trigger=5)
    s.sql(f"SET 'auto.offset.reset'='earliest'; CREATE STREAM clicks (k STRING KEY, n INT) "
          f"WITH (kafka_topic='{topic}', value_format='JSON');")
    s.topic = topic
    yield s
    s.stop()


def windows(rows) -> dict:
    """The latest count per (key, window start in seconds after T0)."""
    return {(r.K, (r.WS - T0) // 1000): r.C for r in rows.itertuples()}


def test_emit_changes_counts_within_grace_and_logs_the_late_record(clicks):
    handle = clicks.sql(f"SELECT k, WINDOWSTART AS ws, WINDOWEND AS we, COUNT(*) AS c, COLLECT_LIST(n) AS ns "
                        f"FROM clicks {WINDOW} GROUP BY k EMIT CHANGES;")
    expected = {("a", 0): 3, ("a", 10): 2, ("b", 10): 1, ("b", 20): 1, ("c", 40): 1}
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and windows(handle.rows()) != expected:
        time.sleep(0.5)
    rows = handle.rows()
    handle.stop()
    assert windows(rows) == expected
    assert set(rows.WE - rows.WS) == {10_000}
    latest_a0 = rows[(rows.K == "a") & (rows.WS == T0)].iloc[-1]
    assert sorted(latest_a0.NS) == [0, 1, 4]  # record 6 (n=6) never joined its closed window
    log = clicks.processing_log(query=handle.id)
    assert list(log[["TOPIC", "PARTITION", "OFFSET"]].itertuples(index=False, name=None)) == [
        (clicks.topic, 0, LATE_OFFSET)]
    message = log.MESSAGE.iloc[0]
    assert message.startswith("Skipping record for expired window.")
    assert f"window=[{T0},{T0 + 10_000})" in message and f"streamTime=[{T0 + 21_000}]" in message
    assert f"expiration=[{T0 + 16_000}]" in message


def test_emit_final_emits_each_closed_window_once(clicks):
    rows = clicks.sql(f"SELECT k, WINDOWSTART AS ws, COUNT(*) AS c FROM clicks {WINDOW} GROUP BY k "
                      f"EMIT FINAL LIMIT 4;")
    assert sorted(windows(rows).items()) == [(("a", 0), 3), (("a", 10), 2), (("b", 10), 1), (("b", 20), 1)]
    assert len(rows) == 4  # one row per window; [40, 50) is still open


def test_emit_final_without_a_window_is_refused_in_ksqldb_words(clicks):
    with pytest.raises(ks.KStreamError, match="EMIT FINAL is only supported for windowed aggregations."):
        clicks.sql("SELECT k, COUNT(*) FROM clicks GROUP BY k EMIT FINAL;")


def test_a_persistent_emit_final_query_writes_one_record_per_closed_window(clicks, broker):
    from kafkasql_magic.kafka.peek import fetch_records

    sink = f"FINAL_{uuid.uuid4().hex[:8].upper()}"
    query = clicks.sql(f"CREATE TABLE {sink} AS SELECT k, WINDOWSTART AS ws, COUNT(*) AS c FROM clicks {WINDOW} "
                       f"GROUP BY k EMIT FINAL;")
    try:
        assert query.wait_for_records(4, 180), query.failure
        records = fetch_records(broker.bootstrap_servers, sink, from_beginning=True, limit=5, timeout_s=10,
                                until_end=True)
    finally:
        clicks.sql(f"TERMINATE {query.id};")
    counts = sorted((r["key"][:-8], int.from_bytes(r["key"][-8:], "big") - T0, json.loads(r["value"])["C"])
                    for r in records)
    assert counts == [(b"a", 0, 3), (b"a", 10_000, 2), (b"b", 10_000, 1), (b"b", 20_000, 1)]
