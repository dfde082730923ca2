"""SESSION windows with ksqlDB's semantics on a real broker: a record within the inactivity gap
extends a session, one within the gap of two sessions merges them, the old sessions are
retracted (NULL values in the push result, tombstones in a CTAS changelog) and the new one
emitted; a record more than the grace period behind stream time is dropped and logged."""

import json
import time
import uuid

import pandas as pd
import pytest

import kafkasql_magic as ks
from kafkasql_magic.kafka.producer import produce

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
    from kafkasql_magic.kafka.peek import fetch_records

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
