"""Subqueries in FROM in the Materialize dialect (issue 20): a derived relation planned as a view
without a name, nested, joined with a source, aggregated over, in snapshots and SUBSCRIBE."""

import uuid

import pytest

import kafkasql_magic as ks
from kafkasql_magic.kafka.producer import produce

MZ = {"dialect": "materialize"}


@pytest.fixture
def orders(session, broker):
    suffix = uuid.uuid4().hex[:8]
    topic, people = f"mzsq_{suffix}", f"mzsqp_{suffix}"
    produce(broker.bootstrap_servers, topic, [
        {"key": k.encode(), "value": f"{k},{n}".encode(), "partition": 0}
        for k, n in [("ann", 3), ("bob", 1), ("ann", 5), ("cy", 2)]], create_partitions=1)
    produce(broker.bootstrap_servers, people, [
        {"key": k.encode(), "value": f"{k},{c}".encode(), "partition": 0}
        for k, c in [("ann", "Oslo"), ("bob", "Rome")]], create_partitions=1)
    session.sql(f"CREATE SOURCE o_{suffix} FROM KAFKA TOPIC '{topic}' FORMAT CSV WITH 2 COLUMNS INCLUDE OFFSET", **MZ)
    session.sql(f"CREATE SOURCE p_{suffix} FROM KAFKA TOPIC '{people}' FORMAT CSV WITH 2 COLUMNS", **MZ)
    return f"o_{suffix}", f"p_{suffix}"


def test_a_subquery_nested_aggregated_and_limited(session, orders):
    o, _ = orders
    rows = session.sql(f"SELECT t.who, t.n * 10 AS tens FROM (SELECT column1 AS who, column2::int AS n "
                       f"FROM {o}) AS t WHERE t.n > 1 ORDER BY tens", **MZ)
    assert rows.values.tolist() == [["cy", 20], ["ann", 30], ["ann", 50]]
    nested = session.sql(f"SELECT who, sum(n) AS total FROM (SELECT who, n FROM (SELECT column1 AS who, "
                         f"column2::int AS n FROM {o}) inner_q WHERE n < 5) GROUP BY who ORDER BY who", **MZ)
    assert nested.to_dict("records") == [{"who": "ann", "total": 3}, {"who": "bob", "total": 1},
                                         {"who": "cy", "total": 2}]
    top = session.sql(f"SELECT * FROM (SELECT \"offset\", column2::int AS n FROM {o} ORDER BY n DESC LIMIT 2) "
                      "AS top ORDER BY \"offset\"", **MZ)
    assert top.values.tolist() == [[0, 3], [2, 5]]


def test_a_subquery_joined_with_a_source_and_in_subscribe(session, orders):
    o, p = orders
    joined = session.sql(f"SELECT s.who, p.column2 AS city FROM (SELECT column1 AS who FROM {o} "
                         f"WHERE column2::int >= 3) s JOIN {p} AS p ON s.who = p.column1 ORDER BY city",
                         **MZ)
    assert joined.values.tolist() == [["ann", "Oslo"], ["ann", "Oslo"]]
    live = session.sql(f"SUBSCRIBE (SELECT who FROM (SELECT column1 AS who, \"offset\" FROM {o}) x "
                       "WHERE \"offset\" >= 2 LIMIT 2)", timeout=60, **MZ)
    assert sorted(live.who.tolist()) == ["ann", "cy"]
    with pytest.raises(ks.StatementError, match="LIMIT inside a subquery in FROM limits snapshot queries"):
        session.sql(f"SUBSCRIBE (SELECT * FROM (SELECT \"offset\" FROM {o} LIMIT 1) x)", **MZ)
    session.sql(f"CREATE VIEW big_{o} AS SELECT who FROM (SELECT column1 AS who, column2::int AS n "
                f"FROM {o}) x WHERE n > 2", **MZ)
    assert sorted(session.sql(f"SELECT * FROM big_{o}", **MZ).who.tolist()) == ["ann", "ann"]
