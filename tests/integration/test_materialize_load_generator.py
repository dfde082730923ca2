"""Materialize's LOAD GENERATOR COUNTER on the real Spark session: a source of no topic whose
values fall due one per tick, read by snapshots, views, SUBSCRIBE and CREATE SINK."""

from __future__ import annotations

import json
import textwrap
import time
import uuid
from collections import Counter

import pytest

import kafkasql_magic as ks
from kafkasql_magic.kafka.peek import fetch_records

from mz_diffs import consolidated, rows_until

MZ = {"dialect": "materialize"}


CLUSTER_SCRIPT = textwrap.dedent("""
    import json, struct, time
    from kafkasql_magic.loadgen.counter import Counter
    options = {**Counter(tick_us=1_000, epoch_us=time.time_ns() // 1_000 - 10_000_000, up_to=500).options(),
               "topic": "c"}
    def values(rows):
        return sorted(struct.unpack(">q", r.value)[0] for r in rows)
    read = values(spark.read.format("kafkasql_loadgen").options(**options).load().collect())
    query = (spark.readStream.format("kafkasql_loadgen").options(**options, startingOffsets="earliest",
                                                                 maxRecordsPerTrigger="120").load()
             .writeStream.format("memory").queryName("counted").trigger(availableNow=True).start())
    query.awaitTermination(180)
    streamed = values(spark.table("counted").collect())
    print("RESULT " + json.dumps({"read": read, "streamed": streamed, "batches": len(query.recentProgress)}))
""")


def tag() -> str:
    return uuid.uuid4().hex[:8]


def counter_source(session, *, tick: str, up_to: int) -> str:
    name = f"counter_{tag()}"
    session.sql(f"CREATE SOURCE {name} FROM LOAD GENERATOR COUNTER (TICK INTERVAL '{tick}', UP TO {up_to})", **MZ)
    return name


def test_a_snapshot_holds_the_values_due_and_a_view_reads_them(session):
    name = counter_source(session, tick="20ms", up_to=5)
    time.sleep(0.3)  # all five are due
    assert session.sql(f"SHOW COLUMNS FROM {name}", **MZ)[["name", "type"]].values.tolist() == [["counter", "int8"]]
    assert session.sql(f"SELECT * FROM {name} ORDER BY counter", **MZ)["counter"].tolist() == [1, 2, 3, 4, 5]
    session.sql(f"CREATE VIEW odd_{name} AS SELECT counter * 10 AS tens FROM {name} WHERE counter % 2 = 1", **MZ)
    assert sorted(session.sql(f"SELECT * FROM odd_{name}", **MZ)["tens"].tolist()) == [10, 30, 50]
    total = session.sql(f"SELECT count(*) AS n, sum(counter) AS s FROM {name}", **MZ)
    assert total[["n", "s"]].values.tolist() == [[5, 15]]
    explained = session.sql(f"EXPLAIN SELECT * FROM {name};").set_index("Property")["Value"]  # ksql's EXPLAIN
    assert "load generator COUNTER" in explained["Operators"]


def test_a_snapshot_before_the_values_fall_due_holds_the_first_only(session):
    name = counter_source(session, tick="1h", up_to=3)
    assert session.sql(f"SELECT counter FROM {name}", **MZ)["counter"].tolist() == [1]


def test_subscribe_shows_the_values_due_then_each_one_at_its_tick(session):
    """The snapshot (the values due when the query's first micro-batch runs, at one
    mz_timestamp: its newest value's), then each value at the time it fell due: epoch +
    (n - 1) * tick."""
    name = counter_source(session, tick="3s", up_to=1000)
    handle = session.sql(f"SUBSCRIBE {name}", **MZ)
    try:
        first = len(rows_until(handle, 1, timeout=120))
        rows = rows_until(handle, first + 2, timeout=60)
    finally:
        handle.stop()
    assert list(handle.rows().columns) == ["mz_timestamp", "mz_diff", "counter"]
    assert consolidated(rows) == Counter({(n,): 1 for n in range(1, len(rows) + 1)})
    assert all(diff == 1 for _, diff, _ in rows)
    newest = {}  # mz_timestamp -> the largest value shown at it
    for t, _, n in rows:
        newest[t] = max(newest.get(t, 0), n)
    assert len(newest) >= 3  # the snapshot, then values one by one
    assert len({t - (n - 1) * 3000 for t, n in newest.items()}) == 1  # each at its tick from one epoch


def test_a_sink_writes_each_value_once_as_it_falls_due(session, broker):
    name = counter_source(session, tick="100ms", up_to=8)
    out = f"counter-{tag()}"
    query = session.sql(f"CREATE SINK snk_{out[8:]} FROM {name} INTO KAFKA BROKER '{broker.bootstrap_servers}' "
                        f"(TOPIC '{out}') FORMAT JSON ENVELOPE DEBEZIUM", **MZ)
    try:
        assert query.wait_for_records(8, 120), query.failure
        got = fetch_records(broker.bootstrap_servers, out, from_beginning=True, limit=20, timeout_s=5,
                            until_end=True)
    finally:
        session.sql(f"DROP SINK snk_{out[8:]}", **MZ)
    values = [json.loads(r["value"]) for r in got]
    assert sorted(v["after"]["counter"] for v in values) == list(range(1, 9))
    assert all(v["before"] is None for v in values)


@pytest.mark.parametrize("text, message", [
    ("CREATE SOURCE a FROM LOAD GENERATOR AUCTION", "LOAD GENERATOR AUCTION is not supported here"),
    ("CREATE SOURCE a FROM LOAD GENERATOR COUNTER (TICK INTERVAL 'soon')",
     'invalid input syntax for type interval: "soon"'),
])
def test_what_create_refuses(session, text, message):
    with pytest.raises(ks.StatementError, match=message):
        session.sql(text, **MZ)


@pytest.mark.cluster
def test_the_counter_is_made_on_executor_jvms(executor_cluster):
    """The driver plans ranges; executors make their rows from the range alone (batch and stream)."""
    out = executor_cluster(CLUSTER_SCRIPT, timeout=300)
    lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, f"no result (rc={out.returncode})\n{out.stderr[-3000:]}"
    result = json.loads(lines[-1][len("RESULT "):])
    assert result["read"] == list(range(1, 501)) and result["streamed"] == list(range(1, 501))
    assert result["batches"] >= 5  # maxRecordsPerTrigger = 120: admission control
