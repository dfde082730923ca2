"""ksqlDB's default grace (24 hours) on a window that names none: an out-of-order record counts
in its window as long as stream time has not passed the window's end plus 24 hours; past that it
is dropped from that window and logged (Kafka Streams'
KStreamWindowAggregate rule: a window accepts records while stream time < end + grace).
Spark's own windowed aggregation would count every one of them."""

import json
import time
import uuid

import pytest

import kafkasql_magic as ks
from kafkasql_magic.kafka.producer import produce

T0 = 1_700_000_040_000  # a whole minute: 10-second windows start at T0 + 10 s * n
DAY = 86_400
RECORDS = [  # (key, seconds after T0); stream time is the largest so far
    ("a", 1), ("a", 12), ("b", 5),
    ("a", 3),         # out of order, stream time 12: counted
    ("a", DAY + 20),  # stream time jumps a day: windows ending at or before T0 + 20 s close
    ("a", 15),        # [10, 20) closed: late (offset 5)
    ("b", 8),         # [0, 10) closed: late (offset 6)
    ("b", 25),        # 23 h 59 m behind stream time, but [20, 30) is open: counted
    ("a", DAY + 5),
]


@pytest.fixture(scope="module")
def events(broker, spark):
    from kafkasql_magic.kafka.admin import create_topic

    topic = f"late-{uuid.uuid4().hex[:12]}"
    create_topic(broker.bootstrap_servers, topic, 1)
    produce(broker.bootstrap_servers, topic, [
        {"key": key, "value": f'{{"n": {i}}}', "timestamp": T0 + seconds * 1000}
        for i, (key, seconds) in enumerate(RECORDS)])
    # four records per micro-batch: stream time crosses batches
    s = ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark, timeout=90, max_records_per_trigger=4)
    s.sql(f"SET 'auto.offset.reset'='earliest'; CREATE STREAM events (k STRING KEY, n INT) "
          f"WITH (kafka_topic='{topic}', value_format='JSON');")
    s.topic = topic
    yield s
    s.stop()


def settled(session, sql: str, expected: dict):
    """The latest count per (key, window start in seconds after T0) once it equals `expected`
    (or the deadline passed), and the query's processing log."""
    handle = session.sql(sql)
    latest = {}
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        rows = handle.rows()
        latest = {(r.K, (r.WS - T0) // 1000): (r.C, (r.WE - r.WS) // 1000) for r in rows.itertuples()}
        if {w: c for w, (c, _) in latest.items()} == expected:
            break
        time.sleep(0.5)
    handle.stop()
    return latest, session.processing_log(query=handle.id)


def test_tumbling_counts_out_of_order_records_within_a_day_and_drops_later_ones(events):
    latest, log = settled(events, "SELECT k, WINDOWSTART AS ws, WINDOWEND AS we, COUNT(*) AS c FROM events "
                                  "WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY k EMIT CHANGES;",
                          expected := {("a", 0): 2, ("a", 10): 1, ("b", 0): 1, ("b", 20): 1,
                                       ("a", DAY + 20): 1, ("a", DAY): 1})
    assert {w: c for w, (c, _) in latest.items()} == expected
    assert {size for _, size in latest.values()} == {10}
    assert list(log.OFFSET) == [5, 6] and set(log.TOPIC) == {events.topic}
    assert all(m.startswith("Skipping record for expired window.") for m in log.MESSAGE)
    assert f"window=[{T0 + 10_000},{T0 + 20_000}) expiration=[{T0 + 20_000}] " \
           f"streamTime=[{T0 + (DAY + 20) * 1000}]" in log.MESSAGE.iloc[0]


def test_hopping_drops_a_late_record_only_from_the_windows_that_closed(events):
    latest, log = settled(events, "SELECT k, WINDOWSTART AS ws, WINDOWEND AS we, COUNT(*) AS c FROM events "
                                  "WINDOW HOPPING (SIZE 20 SECONDS, ADVANCE BY 10 SECONDS) GROUP BY k EMIT CHANGES;",
                          expected := {("a", -10): 2, ("a", 0): 3, ("a", 10): 2, ("b", -10): 1, ("b", 0): 1,
                                       ("b", 10): 1, ("b", 20): 1, ("a", DAY - 10): 1, ("a", DAY): 1,
                                       ("a", DAY + 10): 1, ("a", DAY + 20): 1})
    assert {w: c for w, (c, _) in latest.items()} == expected  # ("a", 15) still counts in [10, 30)
    assert {size for _, size in latest.values()} == {20}
    # one line per window a record missed, as Kafka Streams logs them (offset 6 missed two)
    windows = sorted((o, m.split("window=[")[1].split(")")[0]) for o, m in zip(log.OFFSET, log.MESSAGE))
    assert windows == [(5, f"{T0},{T0 + 20_000}"), (6, f"{T0 - 10_000},{T0 + 10_000}"), (6, f"{T0},{T0 + 20_000}")]


def test_a_persistent_query_keeps_stream_time_and_open_windows_across_a_restart(broker, spark, tmp_path):
    """The state lives beside the query's checkpoint: after the process (here the session)
    ends, the resumed query still knows stream time (a record late for it is dropped) and the
    open windows' counts (a window goes on counting from where it was)."""
    from kafkasql_magic.kafka.admin import create_topic
    from kafkasql_magic.kafka.peek import fetch_records

    tag = uuid.uuid4().hex[:8]
    topic, service, sink = f"restart-{tag}", f"win{tag}", f"WINS_{tag.upper()}"
    create_topic(broker.bootstrap_servers, topic, 1)

    def send(records):
        produce(broker.bootstrap_servers, topic, [{"key": k, "value": "{}", "timestamp": T0 + sec * 1000}
                                                  for k, sec in records])

    def connect():
        return ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark, timeout=90,
                          state_dir=str(tmp_path), service_id=service)

    def counts(done) -> list:
        deadline, got = time.monotonic() + 180, []
        while time.monotonic() < deadline and not done(got):
            got = [(r["key"][:-8].decode(), (int.from_bytes(r["key"][-8:], "big") - T0) // 1000,
                    json.loads(r["value"])["C"]) for r in fetch_records(
                broker.bootstrap_servers, sink, from_beginning=True, limit=None, timeout_s=2, until_end=False)]
        return got

    send([("a", 1), ("a", 2), ("a", DAY + 50)])
    first = connect()
    first.sql(f"SET 'auto.offset.reset'='earliest'; CREATE STREAM src_{tag} (k STRING KEY) "
              f"WITH (kafka_topic='{topic}', value_format='JSON'); "
              f"CREATE TABLE {sink} AS SELECT k, WINDOWSTART AS ws, COUNT(*) AS c FROM src_{tag} "
              f"WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY k;")
    before = counts(lambda got: len(got) >= 2)
    query = next(iter(first.persistent.queries.values()))
    committed = tmp_path / query.id / "commits" / "0"
    deadline = time.monotonic() + 60
    while not committed.exists() and time.monotonic() < deadline:  # else the batch runs again: not this test
        time.sleep(0.2)
    first.stop()  # the query stops; its checkpoint and window state stay
    assert {(k, w): c for k, w, c in before} == {("a", 0): 2, ("a", DAY + 50): 1}

    send([("a", 5),         # late for the stream time before the restart (DAY + 50): dropped
          ("a", DAY + 55),  # the open window [DAY + 50, DAY + 60) goes on from 1
          ("b", 60)])       # a day behind, but its window is within the grace period
    second = connect()
    try:
        after = counts(lambda got: ("b", 60, 1) in got and ("a", DAY + 50, 2) in got)
        query = next(iter(second.persistent.queries.values()))
        log = second.processing_log(query=query.id)
    finally:
        second.stop()
    assert after[len(before):] in ([("a", DAY + 50, 2), ("b", 60, 1)], [("b", 60, 1), ("a", DAY + 50, 2)])
    assert list(log.OFFSET) == [3] and log.MESSAGE.iloc[0].startswith("Skipping record for expired window.")
