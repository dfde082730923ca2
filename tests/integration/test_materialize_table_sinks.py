"""Materialize's sinks over writable tables and constant relations: each INSERT, UPDATE and
DELETE read back from the sink topic record by record (key, value, headers)."""

from __future__ import annotations

import json
import uuid

import pytest

import kafkasql_magic as ks
from kafkasql_magic.kafka.peek import fetch_records


def tag() -> str:
    return uuid.uuid4().hex[:8]


def read_back(broker, topic, count, timeout=60):
    got = fetch_records(broker.bootstrap_servers, topic, from_beginning=True, limit=count, timeout_s=timeout,
                        until_end=False)
    return sorted(got, key=lambda r: (r["partition"], r["offset"]))


def by_key(records) -> dict:
    """Each KEY's values in the order written (records of different keys may interleave)."""
    found: dict = {}
    for key, value, _ in records:
        found.setdefault(key["a"], []).append(value)
    return found


def decoded(record) -> tuple:
    return (json.loads(record["key"]) if record["key"] is not None else None,
            json.loads(record["value"]) if record["value"] is not None else None, record["headers"] or [])


@pytest.fixture
def mz(broker, spark, tmp_path):
    s = ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark, timeout=90,
                   state_dir=str(tmp_path / "state"), dialect="materialize")
    yield s
    s.stop()


def test_sinks_replay_inserts_updates_and_deletes(mz, broker):
    t = f"t_{tag()}"
    bootstrap = broker.bootstrap_servers
    mz.sql(f"CREATE TABLE {t} (a int, b text); INSERT INTO {t} VALUES (1, 'x'), (2, 'y'), (200, 'big');"
           f"CREATE VIEW v_{t} AS SELECT b, a FROM {t}")
    upsert, debezium = f"up-{tag()}", f"dbz-{tag()}"
    with pytest.raises(ks.KStreamError, match="upsert key could not be validated as unique"):
        mz.sql(f"CREATE SINK s_{t} FROM v_{t} INTO KAFKA BROKER '{bootstrap}' (TOPIC '{upsert}') KEY (a) "
               "FORMAT JSON ENVELOPE UPSERT")
    up = mz.sql(f"CREATE SINK su_{t} FROM v_{t} INTO KAFKA BROKER '{bootstrap}' (TOPIC '{upsert}') "
                "KEY (a) NOT ENFORCED FORMAT JSON ENVELOPE UPSERT")
    dbz = mz.sql(f"CREATE SINK sd_{t} FROM {t} INTO KAFKA BROKER '{bootstrap}' (TOPIC '{debezium}') "
                 "KEY (a) NOT ENFORCED FORMAT JSON ENVELOPE DEBEZIUM")
    assert up.wait_for_records(3, 120), up.failure
    assert dbz.wait_for_records(3, 120), dbz.failure
    mz.sql(f"UPDATE {t} SET b = 'z' WHERE a = 1")
    assert up.wait_for_records(4, 120), up.failure
    mz.sql(f"DELETE FROM {t} WHERE a = 2")
    assert up.wait_for_records(5, 120), up.failure
    mz.sql(f"UPDATE {t} SET a = 3 WHERE a = 1")  # a new KEY: a delete under the old one, then the row
    assert up.wait_for_records(6, 120), up.failure  # rows of the relation (the records: 7)
    assert dbz.wait_for_records(6, 120), dbz.failure

    x1, y2, z1, z3 = {"a": 1, "b": "x"}, {"a": 2, "b": "y"}, {"a": 1, "b": "z"}, {"a": 3, "b": "z"}
    big = {"a": 200, "b": "big"}
    got = [decoded(r) for r in read_back(broker, upsert, 7)]
    assert by_key(got) == {1: [x1, z1, None], 2: [y2, None], 3: [z3], 200: [big]}  # each key's records in order
    assert all(headers == [] for _, _, headers in got)

    got = [decoded(r) for r in read_back(broker, debezium, 7)]
    assert by_key(got) == {
        1: [{"before": None, "after": x1}, {"before": x1, "after": z1}, {"before": z1, "after": None}],
        2: [{"before": None, "after": y2}, {"before": y2, "after": None}],
        3: [{"before": None, "after": z3}],
        200: [{"before": None, "after": big}]}


def test_a_sink_over_a_constant_view_writes_its_rows_once(mz, broker):
    v = f"v_{tag()}"
    out = f"const-{tag()}"
    mz.sql(f"CREATE VIEW {v} AS VALUES (1, 'a'), (2, 'b'); CREATE VIEW one_{v} AS SELECT 7 AS n, 'x' AS s")
    sink = mz.sql(f"CREATE SINK s_{v} FROM {v} INTO KAFKA BROKER '{broker.bootstrap_servers}' (TOPIC '{out}') "
                  "FORMAT JSON ENVELOPE DEBEZIUM")
    one = mz.sql(f"CREATE SINK o_{v} FROM one_{v} INTO KAFKA BROKER '{broker.bootstrap_servers}' "
                 f"(TOPIC 'one-{out}') KEY (n) NOT ENFORCED FORMAT JSON ENVELOPE UPSERT")
    assert sink.wait_for_records(2, 120), sink.failure
    assert one.wait_for_records(1, 120), one.failure
    got = [decoded(r) for r in read_back(broker, out, 2)]
    assert sorted(got, key=repr) == [(None, {"before": None, "after": {"column1": 1, "column2": "a"}}, []),
                                     (None, {"before": None, "after": {"column1": 2, "column2": "b"}}, [])]
    assert [decoded(r) for r in read_back(broker, f"one-{out}", 1)] == [({"n": 7}, {"n": 7, "s": "x"}, [])]


def test_a_row_leaving_a_views_where_is_retracted_by_its_sinks(mz, broker):
    """Materialize: a row no longer passing the view's WHERE leaves the view, so an UPSERT sink
    writes its tombstone and a DEBEZIUM sink its delete."""
    t = f"t_{tag()}"
    bootstrap = broker.bootstrap_servers
    mz.sql(f"CREATE TABLE {t} (a int, b text); INSERT INTO {t} VALUES (1, 'x'), (2, 'y');"
           f"CREATE VIEW v_{t} AS SELECT a, b FROM {t} WHERE b <> 'gone'")
    upsert, debezium = f"up-{tag()}", f"dbz-{tag()}"
    up = mz.sql(f"CREATE SINK su_{t} FROM v_{t} INTO KAFKA BROKER '{bootstrap}' (TOPIC '{upsert}') "
                "KEY (a) NOT ENFORCED FORMAT JSON ENVELOPE UPSERT")
    dbz = mz.sql(f"CREATE SINK sd_{t} FROM v_{t} INTO KAFKA BROKER '{bootstrap}' (TOPIC '{debezium}') "
                 "KEY (a) NOT ENFORCED FORMAT JSON ENVELOPE DEBEZIUM")
    assert up.wait_for_records(2, 120), up.failure
    assert dbz.wait_for_records(2, 120), dbz.failure
    mz.sql(f"UPDATE {t} SET b = 'gone' WHERE a = 1")
    assert up.wait_for_records(3, 120), up.failure
    assert dbz.wait_for_records(3, 120), dbz.failure
    mz.sql(f"UPDATE {t} SET b = 'back' WHERE a = 1")
    assert up.wait_for_records(4, 120), up.failure
    assert dbz.wait_for_records(4, 120), dbz.failure

    x1, y2, back = {"a": 1, "b": "x"}, {"a": 2, "b": "y"}, {"a": 1, "b": "back"}
    got = [decoded(r) for r in read_back(broker, upsert, 4)]
    assert by_key(got) == {1: [x1, None, back], 2: [y2]}
    got = [decoded(r) for r in read_back(broker, debezium, 4)]
    assert by_key(got) == {1: [{"before": None, "after": x1}, {"before": x1, "after": None},
                               {"before": None, "after": back}],
                           2: [{"before": None, "after": y2}]}
