"""Materialize's writable tables on the real broker: CREATE TABLE, INSERT, UPDATE, DELETE, read
back by SELECT, SUBSCRIBE and sinks, and a restart that finds the rows in the table's topic."""

from __future__ import annotations

import uuid

import pytest

import kafkasql_magic as ks
from kafkasql_magic.kafka.peek import fetch_records

from mz_diffs import plain, rows_until

MZ = {"dialect": "materialize"}


def tag() -> str:
    return uuid.uuid4().hex[:8]


def normal(row) -> tuple:
    """A row with numpy's numbers as Python's."""
    return tuple(v.item() if hasattr(v, "item") else v for v in plain(row))


def snapshot(session, query) -> list[tuple]:
    """The query's rows, in a fixed order (`rows` sorts expected rows the same way)."""
    return rows(normal(r) for r in session.sql(query, **MZ).itertuples(index=False))


def rows(items) -> list[tuple]:
    return sorted(items, key=repr)


def test_insert_update_delete_then_select_and_drop(session, broker):
    t = f"t_{tag()}"
    session.sql(f"CREATE TABLE {t} (a int, b text)", **MZ)
    session.sql(f"INSERT INTO {t} VALUES (1, 'x'), (2, 'y'), (2, 'y'); INSERT INTO {t} (b) VALUES ('only b')", **MZ)
    assert snapshot(session, f"SELECT * FROM {t}") == rows([(1, "x"), (2, "y"), (2, "y"), (None, "only b")])
    session.sql(f"UPDATE {t} SET b = b || '!', a = a * 10 WHERE a = 2", **MZ)
    session.sql(f"DELETE FROM {t} WHERE b = 'only b'", **MZ)
    assert snapshot(session, f"SELECT a, b FROM {t}") == rows([(1, "x"), (20, "y!"), (20, "y!")])
    shown = session.sql(f"SHOW COLUMNS FROM {t}", **MZ)
    assert shown.name.tolist() == ["a", "b"]  # the row id is hidden
    topic = session.catalog.get(t).topic
    records = fetch_records(broker.bootstrap_servers, topic, from_beginning=True, limit=None, timeout_s=5,
                            until_end=True)
    assert len(records) == 7  # 4 inserts, 2 updates under their ids, 1 tombstone
    assert sum(r["value"] is None for r in records) == 1
    assert len({r["key"] for r in records}) == 4
    session.sql(f"DELETE FROM {t}", **MZ)
    assert snapshot(session, f"SELECT * FROM {t}") == []
    session.sql(f"DROP TABLE {t}", **MZ)
    assert t not in session.catalog
    from kafkasql_magic.kafka import admin
    assert not admin.topic_exists(broker.bootstrap_servers, topic)


def test_materialize_messages(session):
    t = f"t_{tag()}"
    session.sql(f"CREATE TABLE {t} (a int, b text)", **MZ)
    cases = [
        (f"INSERT INTO {t} VALUES (1, 2)", 'column "b" is of type text but expression is of type integer'),
        (f"INSERT INTO {t} (c) VALUES (1)", f'column "c" of relation "materialize.public.{t}" does not exist'),
        (f"INSERT INTO {t} VALUES (1, 'a', 3)", "INSERT has more expressions than target columns"),
        (f"INSERT INTO {t} VALUES ('x', 'a')", 'invalid input syntax for type integer: "x"'),
        (f"INSERT INTO nope_{tag()} VALUES (1)", "unknown catalog item 'nope_"),
        (f"UPDATE {t} SET a = 'x'", 'column "a" is of type integer but expression is of type text'),
        (f"UPDATE {t} SET c = 1", f'column "c" of relation "materialize.public.{t}" does not exist'),
        (f"CREATE TABLE {t} (x int)", f"catalog item '{t}' already exists"),
    ]
    for statement, message in cases:
        with pytest.raises(ks.KStreamError) as failure:
            session.sql(statement, **MZ)
        assert message in str(failure.value), statement
    session.sql(f"CREATE TABLE IF NOT EXISTS {t} (x int)", **MZ)  # kept as it was
    assert session.sql(f"SHOW COLUMNS FROM {t}", **MZ).name.tolist() == ["a", "b"]


def test_the_ksql_dialect_keeps_its_own_create_table_and_insert(session):
    with pytest.raises(ks.KStreamError, match="kafka_topic|KAFKA_TOPIC"):
        session.sql(f"CREATE TABLE K_{tag()} (ID INT PRIMARY KEY, V STRING) WITH (value_format='JSON');")


def test_subscribe_shows_an_update_as_a_retraction_and_an_insertion(session):
    t = f"t_{tag()}"
    session.sql(f"CREATE TABLE {t} (a int, b text); INSERT INTO {t} VALUES (1, 'x'), (2, 'y')", **MZ)
    session.sql(f"CREATE VIEW v_{t} AS SELECT b, a FROM {t} WHERE a < 10", **MZ)
    direct = session.sql(f"SUBSCRIBE {t}", **MZ)
    view = session.sql(f"SUBSCRIBE v_{t}", **MZ)
    try:
        assert [r[1:] for r in rows(rows_until(direct, 2))] == rows([(1, 1, "x"), (1, 2, "y")])
        assert len(rows_until(view, 2)) == 2
        session.sql(f"UPDATE {t} SET b = 'z' WHERE a = 1", **MZ)
        session.sql(f"UPDATE {t} SET a = 20 WHERE a = 2", **MZ)  # leaves the view's WHERE
        changes = rows_until(direct, 6)[2:]
        view_changes = rows_until(view, 5)[2:]
    finally:
        direct.stop()
        view.stop()
    first, second = changes[:2], changes[2:]
    assert sorted(r[1:] for r in first) == [(-1, 1, "x"), (1, 1, "z")]  # one UPDATE: -1 then +1
    assert len({r[0] for r in first}) == 1  # at one mz_timestamp
    assert sorted(r[1:] for r in second) == [(-1, 2, "y"), (1, 20, "y")]
    assert sorted(r[1:] for r in view_changes) == [(-1, "x", 1), (-1, "y", 2), (1, "z", 1)]


def test_a_restart_brings_the_table_back_with_its_rows(broker, spark, tmp_path):
    service, state = f"mztab{tag()}", str(tmp_path / "state")

    def connect():
        return ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark, timeout=90, state_dir=state,
                          service_id=service, dialect="materialize")

    first = connect()
    first.sql("CREATE TABLE kept (a int, b text); INSERT INTO kept VALUES (1, 'x'), (2, 'y');"
              "UPDATE kept SET b = 'z' WHERE a = 2; CREATE TABLE dropped (c int); DROP TABLE dropped")
    topic = first.catalog.get("kept").topic
    first.stop()

    second = connect()
    assert second.catalog.get("kept").topic == topic
    assert "dropped" not in second.catalog
    assert snapshot(second, "SELECT * FROM kept") == rows([(1, "x"), (2, "z")])
    second.sql("DELETE FROM kept WHERE a = 1; DROP TABLE kept; CREATE TABLE kept (a int, b text)")
    assert snapshot(second, "SELECT * FROM kept") == []  # a new table starts empty
    second.stop()



def test_constant_relations(session):
    v = f"v_{tag()}"
    session.sql(f"CREATE VIEW {v} AS VALUES (1, 'a'), (2, 'b'), (NULL, 'c')", **MZ)
    assert session.sql(f"SHOW COLUMNS FROM {v}", **MZ).name.tolist() == ["column1", "column2"]
    assert snapshot(session, f"SELECT * FROM {v}") == rows([(1, "a"), (2, "b"), (None, "c")])
    assert snapshot(session, f"SELECT column2 || '!' AS t FROM {v} WHERE column1 > 1") == [("b!",)]
    assert snapshot(session, "SELECT 1 AS a, 'x' AS b, 2 + 3 AS c") == [(1, "x", 5)]
    session.sql(f"CREATE VIEW one_{v} AS SELECT 1 AS a, 'x' AS b", **MZ)
    assert snapshot(session, f"SELECT b, a FROM one_{v}") == [("x", 1)]
    assert v in session.sql("SHOW VIEWS", **MZ).name.tolist()
    listed = set(session.sql("SHOW TABLES", **MZ).name) | set(session.sql("SHOW SOURCES", **MZ).name)
    assert not any(name.startswith("__") for name in listed)  # the hidden tables are not listed
    with pytest.raises(ks.KStreamError, match="VALUES types integer and boolean cannot be matched"):
        session.sql(f"CREATE VIEW bad_{v} AS VALUES (1), (true)", **MZ)
    session.sql(f"DROP VIEW {v}", **MZ)
    assert f"__values_{v}" not in session.catalog
