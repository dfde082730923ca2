"""Joins of three tables on their primary key on a real broker: one stateful step holds every
table's latest row per key; a change to any table emits the key's new row or a tombstone."""

import json
import time
import uuid

import pytest

import kafkasql_magic as ks
from kafkasql_magic.kafka.producer import produce

from changelog_state import settle, shown
from test_table_joins import T0, row


@pytest.fixture
def three(broker, spark):
    suffix = uuid.uuid4().hex[:8]
    topics = {name: f"{name}_{suffix}" for name in ("users", "scores", "levels")}
    produce(broker.bootstrap_servers, topics["users"],
            [row(1, {"name": "ann"}), row(2, {"name": "bob"}), row(3, {"name": "cy"})], create_partitions=1)
    produce(broker.bootstrap_servers, topics["scores"], [row(1, {"score": 10}, 5), row(2, {"score": 20}, 5)],
            create_partitions=1)
    produce(broker.bootstrap_servers, topics["levels"],
            [row(1, {"level": "gold"}, 7), row(3, {"level": "bronze"}, 7)], create_partitions=1)
    s = ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark, timeout=90)
    s.sql(f"""SET 'auto.offset.reset'='earliest';
        CREATE TABLE users (id INT PRIMARY KEY, name STRING)
          WITH (kafka_topic='{topics["users"]}', value_format='JSON');
        CREATE TABLE scores (id INT PRIMARY KEY, score INT)
          WITH (kafka_topic='{topics["scores"]}', value_format='JSON');
        CREATE TABLE levels (id INT PRIMARY KEY, level STRING)
          WITH (kafka_topic='{topics["levels"]}', value_format='JSON');""")
    s.topics = topics
    yield s
    s.stop()


def test_inner_then_left_join_of_three_tables_follows_every_changelog(three, broker):
    handle = three.sql("SELECT u.id, name, score, level FROM users u JOIN scores s ON u.id = s.id "
                       "LEFT JOIN levels l ON u.id = l.id WHERE s.score < 100 EMIT CHANGES;")
    assert (handle.plan.table_join, handle.plan.key_names) == ("PRIMARY_KEY", ["U_ID"])
    deadline = time.monotonic() + 90
    while len({r["U_ID"] for r in handle.rows().to_dict("records")}) < 2:
        assert time.monotonic() < deadline and handle.failure is None, handle.rows()
        time.sleep(0.3)
    first = {r["U_ID"]: (r["NAME"], r["SCORE"], r["LEVEL"]) for r in handle.rows().to_dict("records")}
    assert first == {1: ("ann", 10, "gold"), 2: ("bob", 20, None)}  # cy has no score: no row
    # bob gets a level, cy a score; ann loses her level; then bob loses his score (a tombstone) and
    # ann's score leaves the WHERE clause (a tombstone too)
    produce(broker.bootstrap_servers, three.topics["levels"], [row(2, {"level": "silver"}, 10), row(1, None, 11)])
    produce(broker.bootstrap_servers, three.topics["scores"], [row(3, {"score": 30}, 12), row(2, None, 13),
                                                              row(1, {"score": 500}, 14)])
    rows = []

    def done(state):
        rows[:] = handle.rows().to_dict("records")
        return 3 in state and state[2]["NAME"] is None and state[1]["NAME"] is None

    state = settle(handle, "U_ID", done)
    assert state == {1: {"U_ID": 1, "NAME": None, "SCORE": None, "LEVEL": None},
                     2: {"U_ID": 2, "NAME": None, "SCORE": None, "LEVEL": None},
                     3: {"U_ID": 3, "NAME": "cy", "SCORE": 30, "LEVEL": "bronze"}}
    later = [(r["U_ID"], r["NAME"], r["SCORE"], r["LEVEL"]) for r in rows[len(first):]]
    assert (2, "bob", 20, "silver") in later and (1, "ann", 10, None) in later  # each change on its way


def test_ctas_of_a_join_ending_in_full_join_writes_rows_and_tombstones_and_resumes(broker, spark, tmp_path):
    """`t1 JOIN t2 FULL JOIN t3` keyed by ksqlDB's synthetic ROWKEY (renamed ID): a key only t3 has is a
    row with t1's and t2's columns NULL; restarted from its checkpoint the query still knows every table."""
    from kafkasql_magic.kafka.peek import fetch_records

    suffix = uuid.uuid4().hex[:8]
    users, scores, levels, out = f"nu_{suffix}", f"ns_{suffix}", f"nl_{suffix}", f"NWAY_{suffix.upper()}"
    produce(broker.bootstrap_servers, users, [row(1, {"name": "ann"}), row(2, {"name": "bob"})], create_partitions=1)
    produce(broker.bootstrap_servers, scores, [row(1, {"score": 10}, 5)], create_partitions=1)
    produce(broker.bootstrap_servers, levels, [row(1, {"level": "gold"}, 7), row(4, {"level": "plat"}, 3)],
            create_partitions=1)

    def session():
        s = ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark, timeout=90,
                       service_id=f"svc{suffix}", state_dir=str(tmp_path / "state"))
        s.sql("SET 'auto.offset.reset'='earliest';")
        return s

    def latest(count):
        deadline, got = time.monotonic() + 90, []
        while len(got) < count:
            assert time.monotonic() < deadline, got
            got = fetch_records(broker.bootstrap_servers, out, from_beginning=True, limit=count, timeout_s=5,
                                until_end=False)
        records = [(int.from_bytes(r["key"], "big"), None if r["value"] is None else json.loads(r["value"]),
                    r["timestamp"]) for r in sorted(got, key=lambda r: r["offset"])]
        return records, {key: (value, at) for key, value, at in records}

    first = session()
    first.sql(f"""CREATE TABLE u_{suffix} (id INT PRIMARY KEY, name STRING)
                    WITH (kafka_topic='{users}', value_format='JSON');
                  CREATE TABLE s_{suffix} (id INT PRIMARY KEY, score INT)
                    WITH (kafka_topic='{scores}', value_format='JSON');
                  CREATE TABLE l_{suffix} (id INT PRIMARY KEY, level STRING)
                    WITH (kafka_topic='{levels}', value_format='JSON');""")
    query = first.sql(f"CREATE TABLE {out} AS SELECT ROWKEY AS id, name, score, level FROM u_{suffix} u "
                      f"JOIN s_{suffix} s ON u.id = s.id FULL JOIN l_{suffix} l ON u.id = l.id;")
    assert query.wait_for_records(3, 90), query.failure
    records, state = latest(3)
    # key 1: ann meets her score at T0+5, then her level at T0+7; key 4 has only a level; bob has no score
    assert [r for r in records if r[0] == 1] == [(1, {"NAME": "ann", "SCORE": 10, "LEVEL": None}, T0 + 5),
                                                 (1, {"NAME": "ann", "SCORE": 10, "LEVEL": "gold"}, T0 + 7)]
    assert state == {1: ({"NAME": "ann", "SCORE": 10, "LEVEL": "gold"}, T0 + 7),
                     4: ({"NAME": None, "SCORE": None, "LEVEL": "plat"}, T0 + 3)}
    first.stop()
    second = session()  # the query restarts from its checkpoint, every table's rows with it
    try:
        produce(broker.bootstrap_servers, scores, [row(1, None, 50)])  # ann's inner join goes, her level stays
        produce(broker.bootstrap_servers, levels, [row(4, None, 60)])  # key 4's only row goes
        records, state = latest(5)
        assert state[1] == ({"NAME": None, "SCORE": None, "LEVEL": "gold"}, T0 + 50)
        assert state[4] == (None, T0 + 60)  # a tombstone: the remembered level was its only row
    finally:
        second.stop()


def test_a_foreign_key_join_then_a_left_join_on_the_left_tables_key(three, broker):
    """`orders JOIN users ON o.user_id = u.id LEFT JOIN ships ON o.oid = sh.oid`, as ksqlDB allows a
    foreign-key join at the start of an n-way join: rows keyed by the order, following the user its
    foreign key names and the shipment of its own key."""
    suffix = uuid.uuid4().hex[:8]
    orders, ships = f"no_{suffix}", f"nsh_{suffix}"
    produce(broker.bootstrap_servers, orders, [row(100, {"user_id": 1, "qty": 2}, 20),
                                               row(101, {"user_id": 9, "qty": 1}, 20)], create_partitions=1)
    produce(broker.bootstrap_servers, ships, [row(100, {"carrier": "post"}, 25), row(101, {"carrier": "van"}, 25)],
            create_partitions=1)
    three.sql(f"""CREATE TABLE orders (oid INT PRIMARY KEY, user_id INT, qty INT)
                    WITH (kafka_topic='{orders}', value_format='JSON');
                  CREATE TABLE ships (oid INT PRIMARY KEY, carrier STRING)
                    WITH (kafka_topic='{ships}', value_format='JSON');""")
    handle = three.sql("SELECT o.oid, name, qty, carrier FROM orders o JOIN users u ON o.user_id = u.id "
                       "LEFT JOIN ships sh ON o.oid = sh.oid EMIT CHANGES;")
    assert (handle.plan.table_join, handle.plan.key_names) == ("FOREIGN_KEY", ["O_OID"])
    shown(handle, lambda r: r["CARRIER"] == "post")
    # order 101 finds its user 9; ann is renamed; order 100's shipment goes (the LEFT join keeps the order)
    produce(broker.bootstrap_servers, three.topics["users"],
            [row(9, {"name": "zed"}, 30), row(1, {"name": "anne"}, 31)])
    produce(broker.bootstrap_servers, ships, [row(100, None, 32)])
    state = settle(handle, "O_OID", lambda st: 101 in st and st[100]["NAME"] == "anne" and st[100]["CARRIER"] is None)
    assert state == {100: {"O_OID": 100, "NAME": "anne", "QTY": 2, "CARRIER": None},
                     101: {"O_OID": 101, "NAME": "zed", "QTY": 1, "CARRIER": "van"}}
    # a RIGHT join after it: a shipment without an order is a row keyed by the shipment's key
    produce(broker.bootstrap_servers, ships, [row(102, {"carrier": "ship"}, 40)])
    handle = three.sql("SELECT o.oid, name, carrier FROM orders o JOIN users u ON o.user_id = u.id "
                       "RIGHT JOIN ships sh ON o.oid = sh.oid EMIT CHANGES;")
    state = settle(handle, "O_OID", lambda st: {100, 101, 102} <= set(st) and st[100]["CARRIER"] is None)
    assert state == {100: {"O_OID": 100, "NAME": None, "CARRIER": None},  # its shipment went: a tombstone
                     101: {"O_OID": 101, "NAME": "zed", "CARRIER": "van"},
                     102: {"O_OID": 102, "NAME": None, "CARRIER": "ship"}}


def test_a_group_by_over_a_chain_after_a_foreign_key_join_counts_each_order_under_its_users_name(three, broker):
    """The chain's rows (keyed by the order) are the table the GROUP BY counts: an order that finds
    its user joins that name's group, and a renamed user's orders leave the old name's group."""
    suffix = uuid.uuid4().hex[:8]
    orders, ships = f"go_{suffix}", f"gsh_{suffix}"
    produce(broker.bootstrap_servers, orders, [row(100, {"user_id": 1}, 20), row(101, {"user_id": 9}, 20),
                                               row(102, {"user_id": 2}, 20)], create_partitions=1)
    produce(broker.bootstrap_servers, ships, [row(100, {"carrier": "post"}, 25)], create_partitions=1)
    three.sql(f"""CREATE TABLE gorders (oid INT PRIMARY KEY, user_id INT)
                    WITH (kafka_topic='{orders}', value_format='JSON');
                  CREATE TABLE gships (oid INT PRIMARY KEY, carrier STRING)
                    WITH (kafka_topic='{ships}', value_format='JSON');""")
    handle = three.sql("SELECT u.name, COUNT(*) AS n, COUNT(sh.carrier) AS shipped FROM gorders o "
                       "JOIN users u ON o.user_id = u.id LEFT JOIN gships sh ON o.oid = sh.oid "
                       "GROUP BY u.name EMIT CHANGES;")
    shown(handle, lambda r: r["NAME"] == "bob")
    # order 101 finds its user 9; ann is renamed; order 102 is shipped
    produce(broker.bootstrap_servers, three.topics["users"],
            [row(9, {"name": "zed"}, 30), row(1, {"name": "anne"}, 31)])
    produce(broker.bootstrap_servers, ships, [row(102, {"carrier": "van"}, 32)])
    state = settle(handle, "NAME", lambda st: {"anne", "zed"} <= set(st) and st["bob"]["SHIPPED"] == 1)
    assert {name: (r["N"], r["SHIPPED"]) for name, r in state.items()} == {
        "ann": (0, 0), "anne": (1, 1), "bob": (1, 1), "zed": (1, 0)}
