"""Materialize's joins in SUBSCRIBE: whole collections joined as multisets, the result's changes
emitted as `mz_timestamp`, `mz_diff`, then the columns (an insert +1, a retraction -1), over
append-only sources, subqueries and changelogs (ENVELOPE UPSERT tables), with outer joins'
NULL-extended rows retracted when their first match arrives."""

import time
import uuid
from collections import Counter

import pytest

from kafkasql_magic.kafka.producer import produce

from checkpoints import committed
from mz_diffs import consolidated, records, rows_until

MZ = {"dialect": "materialize"}


@pytest.fixture
def names(session, broker):
    suffix = uuid.uuid4().hex[:8]
    return suffix, broker.bootstrap_servers


def test_full_join_of_append_only_sources_retracts_null_extended_rows(session, names):
    suffix, bootstrap = names
    left, right = f"mzjl_{suffix}", f"mzjr_{suffix}"
    produce(bootstrap, left, records([("a", "a,1", 1000), ("b", "b,2", 1001), (None, ",3", 1002),
                                       ("a", "a,4", 1003), ("d", "d,9", 1004)]), create_partitions=1)
    produce(bootstrap, right, [], create_partitions=1)
    session.sql(f"CREATE SOURCE l_{suffix} FROM KAFKA TOPIC '{left}' FORMAT CSV WITH 2 COLUMNS", **MZ)
    session.sql(f"CREATE SOURCE r_{suffix} FROM KAFKA TOPIC '{right}' FORMAT CSV WITH 2 COLUMNS", **MZ)
    query = (f"SELECT l.k, l.v, r.column2 AS rv FROM (SELECT column1 AS k, column2 AS v FROM l_{suffix} "
             f"WHERE column2 <> '9') AS l "
             f"FULL JOIN r_{suffix} AS r ON l.k = r.column1")
    session.sql(f"CREATE VIEW j_{suffix} AS {query}", **MZ)
    handle = session.sql(f"SUBSCRIBE j_{suffix}", **MZ)  # a view that joins: its diffs
    try:
        assert list(handle.rows().columns) == ["mz_timestamp", "mz_diff", "k", "v", "rv"]
        first = rows_until(handle, 4)
        # every left row unmatched: NULL-extended, NULL join key included (d: the subquery's WHERE rejects it),
        # the snapshot at one mz_timestamp (its newest change's)
        assert sorted(first, key=str) == sorted([(1003, 1, "a", "1", None), (1003, 1, "b", "2", None),
                                                 (1003, 1, None, "3", None), (1003, 1, "a", "4", None)], key=str)
        # the right side arrives: a's first match retracts its NULL-extended rows; a duplicate right
        # row joins again (a multiset); c and the NULL key match nothing (NULL never equals NULL)
        produce(bootstrap, right, records([("a", "a,x", 2000), ("a", "a,x", 2001), ("c", "c,z", 2002),
                                            (None, ",w", 2003)]))
        rows = rows_until(handle, 4 + 8)
    finally:
        handle.stop()
    assert Counter(rows[4:]) == Counter([
        (2000, -1, "a", "1", None), (2000, -1, "a", "4", None), (2000, 1, "a", "1", "x"), (2000, 1, "a", "4", "x"),
        (2001, 1, "a", "1", "x"), (2001, 1, "a", "4", "x"), (2002, 1, None, None, "z"), (2003, 1, None, None, "w")])
    retraction = rows.index((2000, -1, "a", "1", None))
    assert retraction < rows.index((2000, 1, "a", "1", "x"))  # the retraction comes first
    # what the diffs add up to is the snapshot of the same join
    snapshot = session.sql(f"SELECT * FROM j_{suffix}", **MZ)
    assert list(snapshot.columns) == ["k", "v", "rv"]
    assert consolidated(rows) == Counter(tuple(None if v != v else v for v in r)
                                          for r in snapshot.itertuples(index=False))


def test_a_changelog_table_through_a_view_retracts_its_old_rows(session, names):
    suffix, bootstrap = names
    orders, prices = f"mzjo_{suffix}", f"mzjp_{suffix}"
    produce(bootstrap, orders, [], create_partitions=1)
    produce(bootstrap, prices, records([("apple", "1", 1000), ("pear", "2", 1001)]), create_partitions=1)
    session.sql(f"CREATE SOURCE o_{suffix} FROM KAFKA TOPIC '{orders}' FORMAT CSV WITH 2 COLUMNS", **MZ)
    session.sql(f"CREATE CONNECTION k_{suffix} TO KAFKA (BROKER '{bootstrap}', SECURITY PROTOCOL PLAINTEXT)", **MZ)
    session.sql(f"CREATE SOURCE ps_{suffix} FROM KAFKA CONNECTION k_{suffix} (TOPIC '{prices}')", **MZ)
    session.sql(f"CREATE TABLE p_{suffix} FROM SOURCE ps_{suffix} KEY FORMAT TEXT VALUE FORMAT TEXT INCLUDE KEY "
                "ENVELOPE UPSERT", **MZ)
    session.sql(f"CREATE VIEW cheap_{suffix} AS SELECT key, text FROM p_{suffix} WHERE text <> '9'", **MZ)
    # the table first (Materialize joins in any order), preserved by the LEFT join
    query = (f"SELECT p.key AS item, p.text AS price, o.column2 AS qty FROM cheap_{suffix} AS p "
             f"LEFT JOIN o_{suffix} AS o ON p.key = o.column1")
    handle = session.sql(f"SUBSCRIBE ({query})", **MZ)
    try:
        first = rows_until(handle, 2)
        assert sorted(first) == [(1001, 1, "apple", "1", None), (1001, 1, "pear", "2", None)]  # the snapshot
        produce(bootstrap, orders, records([("apple", "apple,5", 2000), ("apple", "apple,5", 2001)]))
        produce(bootstrap, prices, records([("apple", "3", 2002), ("pear", None, 2003), ("apple", "9", 2004),
                                             ("fig", "4", 2005)]))
        rows = rows_until(handle, 2 + 8)
    finally:
        handle.stop()
    # an update retracts the old row's joined rows (both duplicates: -2) and inserts the new
    # ones; a delete retracts the row, and so does an update the view's WHERE clause rejects
    assert rows[2:] == [(2000, -1, "apple", "1", None), (2000, 1, "apple", "1", "5"), (2001, 1, "apple", "1", "5"),
                        (2002, -2, "apple", "1", "5"), (2002, 2, "apple", "3", "5"), (2003, -1, "pear", "2", None),
                        (2004, -2, "apple", "3", "5"), (2005, 1, "fig", "4", None)]
    snapshot = session.sql(query, **MZ)
    assert consolidated(rows) == Counter(tuple(None if v != v else v for v in r)
                                          for r in snapshot.itertuples(index=False)) == Counter({("fig", "4", None): 1})


def test_an_upsert_source_inner_joined_follows_its_updates_and_deletes(session, names):
    suffix, bootstrap = names
    visits, cities = f"mzjv_{suffix}", f"mzjc_{suffix}"
    produce(bootstrap, cities, records([("ann", "Oslo", 1000)]), create_partitions=1)
    produce(bootstrap, visits, records([("ann", "ann,1", 1001), ("ann", "ann,skip", 1002), ("bob", "bob,2", 1003)]),
            create_partitions=1)
    session.sql(f"CREATE SOURCE v_{suffix} FROM KAFKA TOPIC '{visits}' FORMAT CSV WITH 2 COLUMNS", **MZ)
    session.sql(f"CREATE SOURCE c_{suffix} FROM KAFKA TOPIC '{cities}' KEY FORMAT TEXT VALUE FORMAT TEXT "
                "INCLUDE KEY AS who ENVELOPE UPSERT", **MZ)
    query = (f"SELECT v.column1 AS who, v.column2 AS n, c.text AS city FROM v_{suffix} v JOIN c_{suffix} c "
             "ON v.column1 = c.who WHERE v.column2 <> 'skip'")
    handle = session.sql(f"SUBSCRIBE ({query})", **MZ)
    try:
        assert [row[1:] for row in rows_until(handle, 1)] == [(1, "ann", "1", "Oslo")]
        produce(bootstrap, cities, records([("bob", "Rome", 2000), ("ann", "Bergen", 2001), ("ann", None, 2002)]))
        rows = rows_until(handle, 1 + 4)
    finally:
        handle.stop()
    assert rows[1:] == [(2000, 1, "bob", "2", "Rome"), (2001, -1, "ann", "1", "Oslo"), (2001, 1, "ann", "1", "Bergen"),
                        (2002, -1, "ann", "1", "Bergen")]
    assert consolidated(rows) == Counter(map(tuple, session.sql(query, **MZ).values.tolist())) == Counter(
        {("bob", "2", "Rome"): 1})


def test_a_changelog_joined_on_a_value_column_moves_its_row_between_join_keys(session, names):
    suffix, bootstrap = names
    orders, homes = f"mzjo_{suffix}", f"mzjh_{suffix}"
    produce(bootstrap, orders, records([("o1", "o1,oslo", 1000), ("o2", "o2,rome", 1001)]), create_partitions=1)
    produce(bootstrap, homes, records([("ann", "oslo", 1002), ("bob", "rome", 1003)]), create_partitions=1)
    session.sql(f"CREATE SOURCE o_{suffix} FROM KAFKA TOPIC '{orders}' FORMAT CSV WITH 2 COLUMNS", **MZ)
    session.sql(f"CREATE SOURCE h_{suffix} FROM KAFKA TOPIC '{homes}' KEY FORMAT TEXT VALUE FORMAT TEXT "
                "INCLUDE KEY ENVELOPE UPSERT", **MZ)
    # joined on the changelog's value: its row per record key, then the rows per join key (two keyed steps)
    query = f"SELECT o.column1 AS o, h.key AS who FROM o_{suffix} AS o LEFT JOIN h_{suffix} AS h ON o.column2 = h.text"
    handle = session.sql(f"SUBSCRIBE ({query})", **MZ)
    try:
        assert sorted(rows_until(handle, 2)) == [(1003, 1, "o1", "ann"), (1003, 1, "o2", "bob")]
        produce(bootstrap, homes, records([("ann", "rome", 2000), ("bob", None, 2001)]))
        rows = rows_until(handle, 2 + 4)
    finally:
        handle.stop()
    # ann moves from oslo to rome: retracted under oslo (o1 left unmatched), inserted under rome
    assert Counter(rows[2:4 + 1]) == Counter([(2000, -1, "o1", "ann"), (2000, 1, "o1", None), (2000, 1, "o2", "ann")])
    assert rows[5:] == [(2001, -1, "o2", "bob")]
    assert consolidated(rows) == Counter({("o1", None): 1, ("o2", "ann"): 1})


def test_an_upsert_sink_of_a_view_that_joins_writes_what_each_key_holds(ksql, broker):
    import json

    from kafkasql_magic.kafka.peek import fetch_records

    suffix, bootstrap = uuid.uuid4().hex[:8], broker.bootstrap_servers
    orders, prices = f"mzso_{suffix}", f"mzsp_{suffix}"
    produce(bootstrap, prices, records([("apple", "1", 900)]), create_partitions=1)
    produce(bootstrap, orders, records([("apple", "apple,5", 1000), ("pear", "pear,2", 1001)]), create_partitions=1)
    ksql.sql(f"""CREATE SOURCE so_{suffix} FROM KAFKA TOPIC '{orders}' FORMAT CSV WITH 2 COLUMNS;
                 CREATE SOURCE sp_{suffix} FROM KAFKA TOPIC '{prices}' KEY FORMAT TEXT VALUE FORMAT TEXT
                   INCLUDE KEY AS item ENVELOPE UPSERT;
                 CREATE MATERIALIZED VIEW priced_{suffix} AS SELECT o.column1 AS item, o.column2 AS qty,
                   p.text AS price FROM so_{suffix} o JOIN sp_{suffix} p ON o.column1 = p.item""", **MZ)
    sink = ksql.sql(f"CREATE SINK su_{suffix} FROM priced_{suffix} INTO KAFKA BROKER '{bootstrap}' "
                    f"(TOPIC 'su-{suffix}') KEY (item) NOT ENFORCED FORMAT JSON ENVELOPE UPSERT", **MZ)
    try:  # the sink counts the changes it reads
        assert sink.wait_for_records(1, 120), sink.failure  # apple joined
        produce(bootstrap, prices, records([("pear", "3", 2000), ("apple", "4", 2001)]))
        assert sink.wait_for_records(4, 120), sink.failure  # pear joins; apple: a retraction and an insert
        produce(bootstrap, prices, records([("apple", None, 2002)]))
        assert sink.wait_for_records(5, 120), sink.failure  # apple's price goes: its joined row is retracted
    finally:
        ksql.sql(f"DROP SINK su_{suffix}", **MZ)
    got = fetch_records(bootstrap, f"su-{suffix}", from_beginning=True, limit=4, timeout_s=30, until_end=False)
    upserts = [(json.loads(r["key"]), None if r["value"] is None else json.loads(r["value"]))
               for r in sorted(got, key=lambda r: r["offset"])]
    # what each key holds after each batch: an update is one record, a key whose row went a tombstone
    assert upserts[0] == ({"item": "apple"}, {"item": "apple", "qty": "5", "price": "1"})
    assert sorted(upserts[1:3], key=str) == sorted([({"item": "pear"}, {"item": "pear", "qty": "2", "price": "3"}),
                                                   ({"item": "apple"}, {"item": "apple", "qty": "5", "price": "4"})],
                                                  key=str)
    assert upserts[3:] == [({"item": "apple"}, None)]


def test_a_debezium_sink_with_a_key_pairs_a_join_update_whose_changelog_row_moves_join_key(ksql, broker):
    """A changelog joined on a value column (one Spark group: the row leaves its old join key).
    With KEY (...), Materialize pairs a key's retraction and insertion at one time into one
    update record; a delete is `{"before": row, "after": null}` with no tombstone after it."""
    import json

    from kafkasql_magic.kafka.peek import fetch_records

    suffix, bootstrap = uuid.uuid4().hex[:8], broker.bootstrap_servers
    visits, people, out = f"mzdv_{suffix}", f"mzdp_{suffix}", f"mzdk-{suffix}"
    produce(bootstrap, people, records([("ann", "Oslo", 1000)]), create_partitions=1)
    produce(bootstrap, visits, records([(None, "Oslo,1", 1001), (None, "Rome,2", 1002)]), create_partitions=1)
    sink = ksql.sql(f"""CREATE SOURCE dv_{suffix} FROM KAFKA TOPIC '{visits}' FORMAT CSV WITH 2 COLUMNS;
        CREATE SOURCE dp_{suffix} FROM KAFKA TOPIC '{people}' KEY FORMAT TEXT VALUE FORMAT TEXT
          INCLUDE KEY AS who ENVELOPE UPSERT;
        CREATE VIEW dj_{suffix} AS SELECT p.who, v.column1 AS city, v.column2 AS n
          FROM dv_{suffix} v JOIN dp_{suffix} p ON v.column1 = p.text;
        CREATE SINK dk_{suffix} FROM dj_{suffix} INTO KAFKA BROKER '{bootstrap}' (TOPIC '{out}') KEY (who)
          FORMAT JSON ENVELOPE DEBEZIUM""", **MZ)
    try:  # the sink counts the diffs it reads
        assert sink.wait_for_records(1, 120), sink.failure  # ann in Oslo joins visit 1
        produce(bootstrap, people, records([("ann", "Rome", 2000), ("ann", None, 2001)]))
        assert sink.wait_for_records(4, 120), sink.failure  # moved: -1 Oslo, +1 Rome; deleted: -1 Rome
        time.sleep(2)
        got = fetch_records(bootstrap, out, from_beginning=True, limit=None, timeout_s=3, until_end=False)
    finally:
        ksql.sql(f"DROP SINK dk_{suffix}", **MZ)
    written = [(json.loads(r["key"]), None if r["value"] is None else json.loads(r["value"]))
               for r in sorted(got, key=lambda r: r["offset"])]
    oslo, rome = {"who": "ann", "city": "Oslo", "n": "1"}, {"who": "ann", "city": "Rome", "n": "2"}
    assert written == [({"who": "ann"}, {"before": None, "after": oslo}),
                       ({"who": "ann"}, {"before": oslo, "after": rome}),  # one update record, both images
                       ({"who": "ann"}, {"before": rome, "after": None})]  # and no tombstone after the delete


def test_a_debezium_sink_of_a_join_resumes_with_its_join_state_after_a_restart(broker, spark, tmp_path):
    """Both inputs' rows are Spark state in the sink's checkpoint: a new session (as after a
    kernel restart) retracts the joined row an update replaces, though it never read that row.
    ENVELOPE DEBEZIUM without KEY pairs nothing (Materialize keys such a sink by the whole row):
    an insert is a record with `after`, a retraction one with `before`."""
    import json

    import kafkasql_magic as ks
    from kafkasql_magic.kafka.peek import fetch_records

    suffix, bootstrap = uuid.uuid4().hex[:8], broker.bootstrap_servers
    orders, prices, out = f"mzro_{suffix}", f"mzrp_{suffix}", f"mzrs-{suffix}"

    def connect():
        return ks.connect(bootstrap_servers=bootstrap, spark=spark, timeout=90, state_dir=str(tmp_path / "state"),
                          service_id=f"mzj{suffix}")

    produce(bootstrap, orders, records([("apple", "apple,5", 1000)]), create_partitions=1)
    produce(bootstrap, prices, records([("apple", "1", 1001)]), create_partitions=1)
    first = connect()
    query = first.sql(f"""CREATE SOURCE ro FROM KAFKA TOPIC '{orders}' FORMAT CSV WITH 2 COLUMNS;
        CREATE SOURCE rp FROM KAFKA TOPIC '{prices}' KEY FORMAT TEXT VALUE FORMAT TEXT INCLUDE KEY AS item ENVELOPE UPSERT;
        CREATE VIEW rj AS SELECT o.column2 AS qty, p.text AS price FROM ro o FULL JOIN rp p ON o.column1 = p.item;
        CREATE SINK rs FROM rj INTO KAFKA BROKER '{bootstrap}' (TOPIC '{out}') FORMAT JSON ENVELOPE DEBEZIUM""",
                      **MZ)
    assert query.wait_for_records(3, 120), query.failure  # the order NULL-extended, then matched
    committed(query)
    first.stop()

    produce(bootstrap, prices, records([("apple", "2", 2000)]))
    second = connect()
    try:
        resumed = second.persistent.queries[query.id]
        assert resumed.wait_for_records(2, 120), resumed.failure
        got = fetch_records(bootstrap, out, from_beginning=True, limit=5, timeout_s=30, until_end=False)
    finally:
        second.sql("DROP SINK rs", **MZ)
        second.stop()
    values = [json.loads(r["value"]) for r in sorted(got, key=lambda r: r["offset"])]
    row = lambda price: {"qty": "5", "price": price}  # noqa: E731
    assert sorted(values[:3], key=str) == sorted([{"before": None, "after": row(None)},
                                                  {"before": row(None), "after": None},
                                                  {"before": None, "after": row("1")}], key=str)
    assert sorted(values[3:], key=str) == sorted([{"before": row("1"), "after": None},
                                                  {"before": None, "after": row("2")}], key=str)
