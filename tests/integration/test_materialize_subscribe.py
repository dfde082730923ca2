"""Materialize's SUBSCRIBE output for every query shape, on the real broker: `mz_timestamp`,
`mz_diff`, then the columns; the snapshot first, consolidated at one `mz_timestamp`, then each
change (an append-only record +1; a changelog's update -1 the old row and +1 the new, a delete
-1; an aggregation's group: its old row -1, its new row +1). The diffs add up to what a
snapshot SELECT of the same query returns."""

import time
import uuid
from collections import Counter

import pytest

from kafkasql_magic.kafka.producer import produce

from mz_diffs import consolidated, plain, records, rows_until

MZ = {"dialect": "materialize"}


def _snapshot(session, query) -> Counter:
    return Counter(plain(r) for r in session.sql(query, **MZ).itertuples(index=False))


@pytest.fixture
def names(session, broker):
    return uuid.uuid4().hex[:8], broker.bootstrap_servers


def _wait_read(handle, count: int, timeout: float = 60) -> None:
    """Until the query read `count` records (its snapshot is in before more are produced)."""
    deadline = time.monotonic() + timeout
    while handle.records_read < count and time.monotonic() < deadline and handle.is_active:
        time.sleep(0.2)
    assert handle.records_read >= count, handle.failure


def test_an_append_only_source_snapshot_then_each_record(session, names):
    suffix, bootstrap = names
    topic = f"mzsa_{suffix}"
    produce(bootstrap, topic, records([("a", "a,1", 1000), ("b", "b,2", 1001), ("a", "a,1", 1002),
                                        ("c", "c,3", 1003)]), create_partitions=1)
    session.sql(f"CREATE SOURCE a_{suffix} FROM KAFKA TOPIC '{topic}' FORMAT CSV WITH 2 COLUMNS", **MZ)
    query = f"SELECT column1 AS k, column2 AS v FROM a_{suffix} WHERE column2 <> '3'"
    handle = session.sql(f"SUBSCRIBE ({query})", **MZ)
    quiet = session.sql(f"SUBSCRIBE ({query}) WITH (SNAPSHOT = false)", **MZ)
    try:
        assert list(handle.rows().columns) == ["mz_timestamp", "mz_diff", "k", "v"]
        snapshot = rows_until(handle, 2)
        # the snapshot: one mz_timestamp (its newest change's), equal rows consolidated
        assert sorted(snapshot) == [(1002, 1, "b", "2"), (1002, 2, "a", "1")]
        _wait_read(quiet, 4)
        produce(bootstrap, topic, records([("d", "d,4", 2000), ("c", "c,3", 2001), ("a", "a,1", 2002)]))
        rows = rows_until(handle, 4)
        changes = rows_until(quiet, 2)
    finally:
        handle.stop()
        quiet.stop()
    assert rows[2:] == [(2000, 1, "d", "4"), (2002, 1, "a", "1")]  # each record at its own time
    assert changes == rows[2:]  # SNAPSHOT = false: the changes only
    assert consolidated(rows) == _snapshot(session, query)


def test_an_upsert_source_through_a_subquery_retracts_old_rows(session, names):
    suffix, bootstrap = names
    topic = f"mzsu_{suffix}"
    produce(bootstrap, topic, records([("k1", "a", 1000), ("k2", "b", 1001), ("k1", "c", 1002), ("k3", "e", 1003),
                                        ("k3", None, 1004)]), create_partitions=1)
    session.sql(f"CREATE SOURCE u_{suffix} FROM KAFKA TOPIC '{topic}' KEY FORMAT TEXT VALUE FORMAT TEXT "
                "INCLUDE KEY ENVELOPE UPSERT", **MZ)
    # the subquery selects the key (its rows are replaced by key); the outer query does not need to
    query = f"SELECT text AS t FROM (SELECT key, text FROM u_{suffix} WHERE text <> 'x') AS sub"
    handle = session.sql(f"SUBSCRIBE ({query})", **MZ)
    upserts = session.sql(f"SUBSCRIBE (SELECT text, key FROM u_{suffix}) ENVELOPE UPSERT (KEY (key))", **MZ)
    try:
        assert list(handle.rows().columns) == ["mz_timestamp", "mz_diff", "t"]
        assert list(upserts.rows().columns) == ["mz_timestamp", "mz_state", "key", "text"]
        assert handle.model.key_columns == ()  # the widget shows every diff as a row
        snapshot = rows_until(handle, 2)
        assert sorted(r[1:] for r in snapshot) == [(1, "b"), (1, "c")]  # the current rows only
        assert len({r[0] for r in snapshot}) == 1 and snapshot[0][0] >= 1002
        _wait_read(upserts, 5)
        produce(bootstrap, topic, records([("k2", "d", 2000), ("k1", None, 2001), ("k2", "x", 2002),
                                            ("k4", "f", 2003)]))
        rows = rows_until(handle, 7)
        keyed = rows_until(upserts, 6)
    finally:
        handle.stop()
        upserts.stop()
    assert sorted(r[1:] for r in keyed[:2]) == [("upsert", "k1", "c"), ("upsert", "k2", "b")]
    assert keyed[2:] == [(2000, "upsert", "k2", "d"), (2001, "delete", "k1", None), (2002, "upsert", "k2", "x"),
                         (2003, "upsert", "k4", "f")]
    assert rows[2:] == [(2000, -1, "b"), (2000, 1, "d"),  # an update: the old row out, the new one in
                        (2001, -1, "c"),  # a delete
                        (2002, -1, "d"),  # a row the WHERE clause rejects leaves
                        (2003, 1, "f")]
    assert consolidated(rows) == _snapshot(session, query)


def test_aggregations_retract_a_groups_old_row(session, names):
    suffix, bootstrap = names
    topic = f"mzsg_{suffix}"
    produce(bootstrap, topic, records([("a", "a,1", 1000), ("b", "b,2", 1001), ("b", "b,3", 1002)]),
            create_partitions=1)
    session.sql(f"CREATE SOURCE g_{suffix} FROM KAFKA TOPIC '{topic}' FORMAT CSV WITH 2 COLUMNS", **MZ)
    grouped = (f"SELECT column1 AS k, count(*) AS n, sum(column2::int) AS total FROM g_{suffix} "
               "GROUP BY column1 HAVING count(*) < 3")
    session.sql(f"CREATE VIEW gv_{suffix} AS {grouped}", **MZ)
    overall = f"SELECT count(*) AS n, max(column2::int) AS top FROM g_{suffix}"
    handle = session.sql(f"SUBSCRIBE gv_{suffix}", **MZ)  # a view that aggregates: its groups' changes
    total = session.sql(f"SUBSCRIBE ({overall})", **MZ)  # a global aggregate: one group
    try:
        assert list(handle.rows().columns) == ["mz_timestamp", "mz_diff", "k", "n", "total"]
        snapshot = rows_until(handle, 2)
        assert sorted(r[1:] for r in snapshot) == [(1, "a", 1, 1), (1, "b", 2, 5)]
        assert rows_until(total, 1)[0][1:] == (1, 3, 3)
        produce(bootstrap, topic, records([("a", "a,4", 2000), ("b", "b,1", 2001), ("c", "c,1", 2002)]))
        rows = rows_until(handle, 6)
        overall_rows = rows_until(total, 3)
    finally:
        handle.stop()
        total.stop()
    changes = rows[2:]
    assert len({r[0] for r in changes}) <= 3 and all(r[0] >= 2000 for r in changes)
    assert Counter(r[1:] for r in changes) == Counter([
        (-1, "a", 1, 1), (1, "a", 2, 5),  # a's old row out, its new row in
        (-1, "b", 2, 5),  # b reaches 3 records: HAVING drops it, its row is retracted
        (1, "c", 1, 1)])
    assert Counter(r[1:] for r in overall_rows[1:]) == Counter([(-1, 3, 3), (1, 6, 4)])
    assert consolidated(rows) == _snapshot(session, f"SELECT * FROM gv_{suffix}")
    assert consolidated(overall_rows) == _snapshot(session, overall)


def test_an_aggregation_over_an_upsert_source(session, names):
    suffix, bootstrap = names
    topic = f"mzst_{suffix}"
    produce(bootstrap, topic, records([("k1", "red", 1000), ("k2", "red", 1001), ("k3", "blue", 1002)]),
            create_partitions=1)
    session.sql(f"CREATE SOURCE t_{suffix} FROM KAFKA TOPIC '{topic}' KEY FORMAT TEXT VALUE FORMAT TEXT "
                "INCLUDE KEY ENVELOPE UPSERT", **MZ)
    query = f"SELECT text AS colour, count(*) AS n FROM t_{suffix} GROUP BY text"
    handle = session.sql(f"SUBSCRIBE ({query})", **MZ)
    paired = session.sql(f"SUBSCRIBE ({query}) ENVELOPE DEBEZIUM (KEY (colour))", **MZ)
    try:
        assert list(paired.rows().columns) == ["mz_timestamp", "mz_state", "colour", "before_n", "after_n"]
        snapshot = rows_until(handle, 2)
        assert sorted(r[1:] for r in snapshot) == [(1, "blue", 1), (1, "red", 2)]
        assert sorted(r[1:] for r in rows_until(paired, 2)) == [("insert", "blue", None, 1), ("insert", "red", None, 2)]
        produce(bootstrap, topic, records([("k3", "red", 2000)]))  # blue's last row moves to red
        rows = rows_until(handle, 5)
        pairs = rows_until(paired, 4)
    finally:
        handle.stop()
        paired.stop()
    assert sorted(pairs[2:]) == [(2000, "delete", "blue", 1, None), (2000, "upsert", "red", 2, 3)]
    assert Counter(r[1:] for r in rows[2:]) == Counter([(-1, "blue", 1), (-1, "red", 2), (1, "red", 3)])
    assert {r[0] for r in rows[2:]} == {2000}
    assert consolidated(rows) == _snapshot(session, query)


def test_a_snapshot_over_bounded_micro_batches_is_still_one_time(session, names):
    suffix, bootstrap = names
    topic = f"mzsb_{suffix}"
    produce(bootstrap, topic, records([("k1", "a", 1000), ("k2", "b", 1001), ("k1", "c", 1002), ("k3", "e", 1003),
                                        ("k3", None, 1004), ("k4", "g", 1005), ("k2", "h", 1006)]),
            create_partitions=1)
    session.sql(f"CREATE SOURCE b_{suffix} FROM KAFKA TOPIC '{topic}' KEY FORMAT TEXT VALUE FORMAT TEXT "
                "INCLUDE KEY ENVELOPE UPSERT", **MZ)
    per_trigger = session.max_records_per_trigger
    session.max_records_per_trigger = 2  # the snapshot's 7 records over 4 micro-batches
    try:
        handle = session.sql(f"SUBSCRIBE (SELECT key, text FROM b_{suffix})", **MZ)
    finally:
        session.max_records_per_trigger = per_trigger
    try:
        snapshot = rows_until(handle, 3)
        _wait_read(handle, 7)
        produce(bootstrap, topic, records([("k1", "d", 2000), ("k4", None, 2001)]))
        rows = rows_until(handle, 6)
        read = [p["numInputRows"] for p in handle._query.recentProgress if p["numInputRows"]]
    finally:
        handle.stop()
    assert max(read) <= 2 and sum(read) == 9  # each micro-batch bounded, the snapshot's first one too
    # the current rows, at one mz_timestamp: the newest change's, across the micro-batches
    assert sorted(snapshot) == [(1006, 1, "k1", "c"), (1006, 1, "k2", "h"), (1006, 1, "k4", "g")]
    # each key's last row from keyed state, retracted by its change
    assert rows[3:] == [(2000, -1, "k1", "c"), (2000, 1, "k1", "d"), (2001, -1, "k4", "g")]
