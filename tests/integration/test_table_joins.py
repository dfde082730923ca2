"""Table-table joins on a real broker: both tables are changelogs; the result changes (rows and
tombstones) as either side changes, on the primary key and on a foreign key."""

import json
import time
import uuid

import pytest

import kafkasql_magic as ks
from kafkasql_magic.kafka.producer import produce

from changelog_state import settle

T0 = 1_700_000_000_000


def row(key, value, at=0):
    return {"key": key.to_bytes(4, "big"), "value": None if value is None else json.dumps(value),
            "timestamp": T0 + at}


@pytest.fixture
def tables(broker, spark):
    suffix = uuid.uuid4().hex[:8]
    topics = {name: f"{name}_{suffix}" for name in ("users", "scores", "orders")}
    produce(broker.bootstrap_servers, topics["users"],
            [row(1, {"name": "ann"}), row(2, {"name": "bob"}), row(3, {"name": "cy"})], create_partitions=1)
    produce(broker.bootstrap_servers, topics["scores"],
            [row(1, {"score": 10}, 5), row(4, {"score": 40}, 5),
             {"key": (5).to_bytes(4, "big"), "value": "{oops", "timestamp": T0}], create_partitions=1)
    produce(broker.bootstrap_servers, topics["orders"],
            [row(100, {"user_id": 1, "qty": 2}), row(101, {"user_id": 2, "qty": 3}),
             row(102, {"user_id": 9, "qty": 1})], create_partitions=1)
    s = ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark, timeout=90)
    s.sql(f"""SET 'auto.offset.reset'='earliest';
        CREATE TABLE users (id INT PRIMARY KEY, name STRING) WITH (kafka_topic='{topics["users"]}', value_format='JSON');
        CREATE TABLE scores (id INT PRIMARY KEY, score INT) WITH (kafka_topic='{topics["scores"]}', value_format='JSON');
        CREATE TABLE orders (oid INT PRIMARY KEY, user_id INT, qty INT)
          WITH (kafka_topic='{topics["orders"]}', value_format='JSON');""")
    s.topics = topics
    yield s
    s.stop()


def test_full_outer_join_of_two_tables_follows_both_changelogs(tables, broker):
    handle = tables.sql("SELECT ROWKEY, u.id AS uid, s.id AS sid, name, score FROM users u FULL OUTER JOIN scores s "
                        "ON u.id = s.id EMIT CHANGES;")
    assert handle.plan.table_join == "PRIMARY_KEY" and handle.plan.kind == "TABLE"
    assert handle.plan.key_names == ["ROWKEY"]  # ksqlDB's synthetic key: the first non-NULL side's id
    settle_first = time.monotonic() + 90
    while len({r["ROWKEY"] for r in handle.rows().to_dict("records")}) < 4:
        assert time.monotonic() < settle_first and handle.failure is None, handle.rows()
        time.sleep(0.3)
    first = {r["ROWKEY"]: (r["UID"], r["SID"], r["NAME"], r["SCORE"]) for r in handle.rows().to_dict("records")}
    assert first[1] == (1, 1, "ann", 10) and first[2] == (2, None, "bob", None) and first[4] == (None, 4, None, 40)
    # bob gets a score, ann is deleted (her score stays), score 4 is deleted (both sides gone)
    produce(broker.bootstrap_servers, tables.topics["scores"], [row(2, {"score": 20}, 10), row(4, None, 10)])
    produce(broker.bootstrap_servers, tables.topics["users"], [row(1, None, 10)])
    rows = []

    def done(_):
        rows[:] = handle.rows().to_dict("records")
        return any(r["SID"] == 2 and r["SCORE"] == 20 for r in rows) and sum(r["NAME"] is None for r in rows) >= 3

    settle(handle, "ROWKEY", done)
    latest = [(r["ROWKEY"], r["UID"], r["SID"], r["NAME"], r["SCORE"]) for r in rows[len(first):]]
    assert (2, 2, 2, "bob", 20) in latest
    assert (1, None, 1, None, 10) in latest  # ann's row keeps the right side
    assert (4, None, None, None, None) in latest  # both sides gone: a tombstone of key 4


def test_inner_join_emits_a_tombstone_when_a_row_loses_its_match(tables, broker):
    handle = tables.sql("SELECT u.id, name, score FROM users u JOIN scores s ON u.id = s.id EMIT CHANGES;")
    settle_first = time.monotonic() + 90
    while not len(handle.rows()):
        assert time.monotonic() < settle_first and handle.failure is None, handle.rows()
        time.sleep(0.3)
    assert handle.rows().to_dict("records") == [{"U_ID": 1, "NAME": "ann", "SCORE": 10}]
    produce(broker.bootstrap_servers, tables.topics["scores"], [row(1, None, 20), row(3, {"score": 30}, 20)])
    state = settle(handle, "U_ID", lambda s: 3 in s and s[1]["NAME"] is None)
    assert state == {1: {"U_ID": 1, "NAME": None, "SCORE": None}, 3: {"U_ID": 3, "NAME": "cy", "SCORE": 30}}
    log = tables.processing_log(query=handle.id)  # the bad score is logged, named by topic and offset
    assert list(zip(log.TOPIC, log.OFFSET)) == [(tables.topics["scores"], 2)]
    assert log.MESSAGE[0].startswith("Failed to deserialize value")


def test_foreign_key_left_join_follows_the_right_table_and_moved_rows(tables, broker):
    handle = tables.sql("SELECT o.oid, o.user_id, u.name, o.qty FROM orders o LEFT JOIN users u "
                        "ON o.user_id = u.id EMIT CHANGES;")
    assert handle.plan.table_join == "FOREIGN_KEY" and handle.plan.key_names == ["OID"]
    deadline = time.monotonic() + 90
    while len({r["OID"] for r in handle.rows().to_dict("records")}) < 3:
        assert time.monotonic() < deadline and handle.failure is None, handle.rows()
        time.sleep(0.3)
    first = {r["OID"]: r["NAME"] for r in handle.rows().to_dict("records")}
    assert first == {100: "ann", 101: "bob", 102: None}
    # order 100 moves to user 3; then user 2 is renamed twice, user 9 appears and ann is renamed:
    # order 101 follows its user, order 102 finds one, and order 100 no longer follows ann
    produce(broker.bootstrap_servers, tables.topics["orders"], [row(100, {"user_id": 3, "qty": 2}, 30)])
    # the renames come once the move is read: a micro-batch may read one topic's end before the
    # other's, and take a later rename without the move before it (ksqlDB orders topics by record
    # time only as far as records are buffered)
    while {r["OID"]: r["NAME"] for r in handle.rows().to_dict("records")}.get(100) != "cy":
        assert time.monotonic() < deadline + 90 and handle.failure is None, handle.rows()
        time.sleep(0.3)
    produce(broker.bootstrap_servers, tables.topics["users"], [
        row(2, {"name": "bo"}, 30), row(9, {"name": "zed"}, 30), row(1, {"name": "anne"}, 40),
        row(2, {"name": "b2"}, 40)])
    rows = []

    def done(state):
        rows[:] = handle.rows().to_dict("records")
        return state[101]["NAME"] == "b2" and state[102]["NAME"] == "zed" and state[100]["NAME"] == "cy"

    state = settle(handle, "OID", done)
    assert state[100] == {"OID": 100, "USER_ID": 3, "NAME": "cy", "QTY": 2}
    assert "anne" not in {r["NAME"] for r in rows}


def test_ctas_writes_the_join_changelog_and_resumes_with_its_state(broker, spark, tmp_path):
    """A persistent table-table join writes rows and tombstones; restarted from its checkpoint
    (a new session on the same state directory), it still knows the rows joined before."""
    from kafkasql_magic.kafka.peek import fetch_records

    suffix = uuid.uuid4().hex[:8]
    users, scores, out = f"cu_{suffix}", f"cs_{suffix}", f"JOINED_{suffix.upper()}"
    produce(broker.bootstrap_servers, users, [row(1, {"name": "ann"}), row(2, {"name": "bob"})], create_partitions=1)
    produce(broker.bootstrap_servers, scores, [row(1, {"score": 10}, 5), row(2, {"score": 20}, 7)],
            create_partitions=1)

    def session():
        s = ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark, timeout=90,
                       service_id=f"svc{suffix}", state_dir=str(tmp_path / "state"))
        s.sql("SET 'auto.offset.reset'='earliest';")
        return s

    def records(count, timeout=60):
        got = fetch_records(broker.bootstrap_servers, out, from_beginning=True, limit=count, timeout_s=timeout,
                            until_end=False)
        return [(int.from_bytes(r["key"], "big"), None if r["value"] is None else json.loads(r["value"]),
                 r["timestamp"]) for r in sorted(got, key=lambda r: r["offset"])]

    first = session()
    first.sql(f"""CREATE TABLE users_{suffix} (id INT PRIMARY KEY, name STRING)
                    WITH (kafka_topic='{users}', value_format='JSON');
                  CREATE TABLE scores_{suffix} (id INT PRIMARY KEY, score INT)
                    WITH (kafka_topic='{scores}', value_format='JSON');""")
    query = first.sql(f"CREATE TABLE {out} AS SELECT u.id AS id, name, score FROM users_{suffix} u "
                      f"JOIN scores_{suffix} s ON u.id = s.id;")
    assert query.wait_for_records(2, 90), query.failure
    assert sorted(records(2)) == [(1, {"NAME": "ann", "SCORE": 10}, T0 + 5), (2, {"NAME": "bob", "SCORE": 20}, T0 + 7)]
    first.stop()
    second = session()  # the query restarts from its checkpoint, its join state with it
    try:
        produce(broker.bootstrap_servers, scores, [row(1, None, 50)])  # ann loses her match
        deadline = time.monotonic() + 90
        while len(got := records(3, timeout=5)) < 3:
            assert time.monotonic() < deadline, got
            time.sleep(0.5)
        assert got[2] == (1, None, T0 + 50)  # a tombstone: the joined row was remembered
    finally:
        second.stop()


def test_a_persistent_foreign_key_join_resumes_with_each_left_rows_foreign_key(broker, spark, tmp_path):
    """Stopped, its tables changed, restarted: the foreign-key join still knows which user each
    order pointed at (an order that moved no longer follows its old user) and which orders each
    user has (a rename re-emits them all)."""
    from kafkasql_magic.kafka.peek import fetch_records

    suffix = uuid.uuid4().hex[:8]
    users, orders, out = f"fu_{suffix}", f"fo_{suffix}", f"FK_{suffix.upper()}"
    produce(broker.bootstrap_servers, users, [row(1, {"name": "ann"}), row(2, {"name": "bob"})], create_partitions=1)
    produce(broker.bootstrap_servers, orders, [row(100, {"user_id": 1}, 5), row(101, {"user_id": 2}, 6)],
            create_partitions=1)

    def session():
        s = ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark, timeout=90,
                       service_id=f"svc{suffix}", state_dir=str(tmp_path / "state"))
        s.sql("SET 'auto.offset.reset'='earliest';")
        return s

    def records(count, timeout=60):
        got = fetch_records(broker.bootstrap_servers, out, from_beginning=True, limit=count, timeout_s=timeout,
                            until_end=False)
        return [(int.from_bytes(r["key"], "big"), None if r["value"] is None else json.loads(r["value"]),
                 r["timestamp"]) for r in sorted(got, key=lambda r: r["offset"])]

    first = session()
    first.sql(f"""CREATE TABLE fusers_{suffix} (id INT PRIMARY KEY, name STRING)
                    WITH (kafka_topic='{users}', value_format='JSON');
                  CREATE TABLE forders_{suffix} (oid INT PRIMARY KEY, user_id INT)
                    WITH (kafka_topic='{orders}', value_format='JSON');""")
    query = first.sql(f"CREATE TABLE {out} AS SELECT o.oid, o.user_id, u.name FROM forders_{suffix} o "
                      f"LEFT JOIN fusers_{suffix} u ON o.user_id = u.id;")
    assert query.wait_for_records(2, 90), query.failure
    assert sorted(records(2)) == [(100, {"USER_ID": 1, "NAME": "ann"}, T0 + 5),
                                  (101, {"USER_ID": 2, "NAME": "bob"}, T0 + 6)]
    first.stop()
    produce(broker.bootstrap_servers, orders, [row(100, {"user_id": 2}, 30)])  # order 100 moves to bob
    produce(broker.bootstrap_servers, users, [row(1, {"name": "anne"}, 40), row(2, {"name": "b2"}, 50)])
    second = session()  # the query restarts from its checkpoint, its join state with it
    try:
        deadline = time.monotonic() + 120
        while len(got := records(6, timeout=5)) < 5:
            assert time.monotonic() < deadline, got
            time.sleep(0.5)
        time.sleep(3)
        got = records(6, timeout=5)
        moved, renamed = (100, {"USER_ID": 2, "NAME": "bob"}, T0 + 30), (100, {"USER_ID": 2, "NAME": "b2"}, T0 + 50)
        assert sorted(got[2:], key=lambda r: (r[0], r[2])) == [moved, renamed,
                                                               (101, {"USER_ID": 2, "NAME": "b2"}, T0 + 50)]  # anne's: none
        assert [r for r in got[2:] if r[0] == 100] == [moved, renamed]  # an order's records as it changed
    finally:
        second.stop()


def test_a_stream_table_join_feeding_group_by_sees_table_updates_during_the_run(broker, spark):
    suffix = uuid.uuid4().hex[:8]
    prices, sales = f"prices_{suffix}", f"sales_{suffix}"

    def price(item, value, at):
        return {"key": item, "value": None if value is None else json.dumps({"price": value}), "timestamp": T0 + at}

    def sale(n, item, qty, at):
        return {"key": n.to_bytes(4, "big"), "value": json.dumps({"item": item, "qty": qty}), "timestamp": T0 + at}

    produce(broker.bootstrap_servers, prices, [price("tea", 2, 0), price("jam", 5, 0)], create_partitions=1)
    produce(broker.bootstrap_servers, sales, [sale(1, "tea", 1, 10), sale(2, "jam", 2, 10), sale(3, "nut", 1, 10)],
            create_partitions=1)
    s = ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark, timeout=90)
    try:
        s.sql(f"""SET 'auto.offset.reset'='earliest';
            CREATE TABLE prices (item STRING PRIMARY KEY, price INT) WITH (kafka_topic='{prices}', value_format='JSON');
            CREATE STREAM sales (id INT KEY, item STRING, qty INT) WITH (kafka_topic='{sales}', value_format='JSON');""")
        handle = s.sql("SELECT s.item AS item, COUNT(*) AS n, SUM(s.qty * p.price) AS revenue FROM sales s "
                       "LEFT JOIN prices p ON s.item = p.item GROUP BY s.item EMIT CHANGES;")
        assert not handle.plan.per_batch
        deadline = time.monotonic() + 90
        while {r["ITEM"]: r["REVENUE"] for r in handle.rows().to_dict("records")} != {"tea": 2, "jam": 10, "nut": None}:
            assert time.monotonic() < deadline and handle.failure is None, handle.rows()
            time.sleep(0.3)
        # tea's price changes, nut gets one, jam's is deleted: later sales meet the table as it is then
        produce(broker.bootstrap_servers, prices, [price("tea", 3, 20), price("nut", 7, 20), price("jam", None, 20)])
        produce(broker.bootstrap_servers, sales, [sale(4, "tea", 1, 30), sale(5, "nut", 2, 30), sale(6, "jam", 1, 30)])
        state = settle(handle, "ITEM", lambda st: st.get("tea", {}).get("N") == 2 and st["nut"]["N"] == 2
                       and st["jam"]["N"] == 2)
        assert {k: v["REVENUE"] for k, v in state.items()} == {"tea": 2 + 3, "nut": 14, "jam": 10}
    finally:
        s.stop()


def test_a_stream_table_join_feeding_group_by_must_join_on_the_tables_key(tables):
    tables.sql(f"CREATE STREAM clicks (id INT KEY, user_name STRING) WITH (kafka_topic='{tables.topics['users']}', "
               "value_format='JSON');")
    with pytest.raises(ks.KStreamError) as error:
        tables.sql("SELECT c.user_name, COUNT(*) FROM clicks c JOIN users u ON c.user_name = u.name "
                   "GROUP BY c.user_name EMIT CHANGES;")
    assert str(error.value) == ("Invalid join condition: stream-table joins require to join on the table's primary "
                                "key. Got C.USER_NAME = U.NAME.")


def test_a_bigint_foreign_key_past_two_to_the_53_beside_a_null_meets_its_own_row(broker, spark):
    """pandas makes a BIGINT column holding a NULL float64 (53 bits), where 2**53 + 1 is 2**53."""
    suffix, big = uuid.uuid4().hex[:8], 2**53
    users, orders = f"bu_{suffix}", f"bo_{suffix}"
    produce(broker.bootstrap_servers, users, [
        {"key": big.to_bytes(8, "big"), "value": json.dumps({"name": "ann"}), "timestamp": T0},
        {"key": (big + 1).to_bytes(8, "big"), "value": json.dumps({"name": "bob"}), "timestamp": T0}],
        create_partitions=1)
    produce(broker.bootstrap_servers, orders, [row(100, {"user_id": big + 1}, 5), row(101, {"user_id": None}, 5),
                                               row(102, {"user_id": big}, 5)], create_partitions=1)
    s = ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark, timeout=90)
    try:
        s.sql(f"""SET 'auto.offset.reset'='earliest';
            CREATE TABLE users (id BIGINT PRIMARY KEY, name STRING) WITH (kafka_topic='{users}', value_format='JSON');
            CREATE TABLE orders (oid INT PRIMARY KEY, user_id BIGINT) WITH (kafka_topic='{orders}', value_format='JSON');""")
        handle = s.sql("SELECT o.oid, o.user_id, u.name FROM orders o LEFT JOIN users u ON o.user_id = u.id "
                       "EMIT CHANGES;")
        assert handle.plan.table_join == "FOREIGN_KEY"
        state = settle(handle, "OID", lambda state: len(state) == 3 and state[100]["NAME"] is not None
                       and state[102]["NAME"] is not None)
        assert state == {100: {"OID": 100, "USER_ID": big + 1, "NAME": "bob"},
                         101: {"OID": 101, "USER_ID": None, "NAME": None},
                         102: {"OID": 102, "USER_ID": big, "NAME": "ann"}}
    finally:
        s.stop()


def test_a_foreign_key_join_writes_each_left_rows_changes_in_order_when_they_reach_several_users(broker, spark,
                                                                                                  tmp_path):
    """A left row's versions of one micro-batch reach different foreign keys, whose results are
    made in different groups: each left row's results are written in the order of its changes,
    so its last record is its last version's join (the records of 40 orders that each moved to
    another user, read back from the sink topic)."""
    from kafkasql_magic.kafka.peek import fetch_records

    s, tag = moving_orders(broker, spark, tmp_path, users=8, orders=40, moved=40, step=3)
    out = f"FKM_{tag}"
    try:
        query = s.sql(f"CREATE TABLE {out} AS SELECT o.oid, o.user_id, u.name FROM morders o "
                      "JOIN musers u ON o.user_id = u.id;")
        assert query.wait_for_records(80, 120), query.failure
        got = fetch_records(broker.bootstrap_servers, out, from_beginning=True, limit=None, timeout_s=10,
                            until_end=True)
    finally:
        s.stop()
    last = {}
    for r in sorted(got, key=lambda r: (r["partition"], r["offset"])):
        last[int.from_bytes(r["key"], "big")] = json.loads(r["value"])
    assert last == {100 + i: {"USER_ID": (i + 3) % 8, "NAME": f"n{(i + 3) % 8}"} for i in range(40)}


def test_a_group_by_over_joined_tables_counts_each_moved_row_once_and_keeps_emptied_groups(broker, spark, tmp_path):
    """ksqlDB groups a join of tables as a table: a moved order leaves its old user's group, and
    a deleted user's orders leave theirs, whose count goes to 0 (not a tombstone)."""
    from kafkasql_magic.kafka.peek import fetch_records

    s, tag = moving_orders(broker, spark, tmp_path, users=4, orders=12, moved=6, step=1)
    out = f"WN_{tag}"

    def settled(want):
        deadline, last = time.monotonic() + 150, {}
        while last != want and time.monotonic() < deadline and query.failure is None:
            time.sleep(2)
            got = fetch_records(broker.bootstrap_servers, out, from_beginning=True, limit=None, timeout_s=5,
                                until_end=True) if query.records_out else []
            last = {r["key"]: json.loads(r["value"]) if r["value"] is not None else None
                    for r in sorted(got, key=lambda r: (r["partition"], r["offset"]))}
        return last

    try:
        query = s.sql(f"CREATE TABLE {out} AS SELECT u.name, COUNT(*) AS n, SUM(o.oid) AS total FROM morders o "
                      "JOIN musers u ON o.user_id = u.id GROUP BY u.name;")
        # orders 100-105 moved up one user: user 0 has 103 and 108, user 1 100, 105, 109, ...
        finals = {i: ((i + 1) % 4 if i < 6 else i % 4) for i in range(12)}
        want = {f"n{u}".encode(): {"N": sum(f == u for f in finals.values()),
                                   "TOTAL": sum(100 + i for i, f in finals.items() if f == u)} for u in range(4)}
        first = settled(want)
        produce(broker.bootstrap_servers, f"mu_{tag.lower()}", [row(0, None, 7)])  # user 0 goes
        emptied = settled({**want, b"n0": {"N": 0, "TOTAL": 0}})
    finally:
        s.stop()
    assert first == want, (query.failure, first)
    assert emptied == {**want, b"n0": {"N": 0, "TOTAL": 0}}, (query.failure, emptied)


def test_a_group_by_over_tables_joined_on_their_keys_counts_each_change_in_order_with_the_cache_off(broker, spark,
                                                                                                  tmp_path):
    """Record cache off: a group change per change of the join's rows, each row's old version
    taken out just before its new one counts."""
    from kafkasql_magic.kafka.peek import fetch_records

    suffix = uuid.uuid4().hex[:8]
    produce(broker.bootstrap_servers, f"ga_{suffix}", [row(k, {"g": f"g{k % 2}"}, 1) for k in range(6)]
            + [row(0, {"g": "g1"}, 3)], create_partitions=2)  # 0 moves to g1
    produce(broker.bootstrap_servers, f"gb_{suffix}", [row(k, {"w": k * 100}, 2) for k in range(4)]
            + [row(1, None, 4)], create_partitions=2)  # 1's right row goes: a LEFT join keeps 1
    s = ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark, timeout=90, state_dir=str(tmp_path))
    out = f"GS_{suffix}".upper()
    try:
        s.sql(f"""SET 'auto.offset.reset'='earliest'; SET 'cache.max.bytes.buffering'='0';
            CREATE TABLE ga (id INT PRIMARY KEY, g STRING) WITH (kafka_topic='ga_{suffix}', value_format='JSON');
            CREATE TABLE gb (id INT PRIMARY KEY, w INT) WITH (kafka_topic='gb_{suffix}', value_format='JSON');""")
        query = s.sql(f"CREATE TABLE {out} AS SELECT a.g, COUNT(*) AS n, SUM(b.w) AS sw FROM ga a "
                      "LEFT JOIN gb b ON a.id = b.id GROUP BY a.g;")
        want = {b"g0": {"N": 2, "SW": 200}, b"g1": {"N": 4, "SW": 300}}  # g0: 2 and 4; g1: 0, 1, 3 and 5
        deadline, changes = time.monotonic() + 150, []
        while time.monotonic() < deadline and query.failure is None:
            changes = sorted(fetch_records(broker.bootstrap_servers, out, from_beginning=True, limit=None,
                                           timeout_s=5, until_end=True) if query.records_out else [],
                             key=lambda r: (r["partition"], r["offset"]))
            if {r["key"]: json.loads(r["value"]) for r in changes} == want:
                break
            time.sleep(2)
    finally:
        s.stop()
    assert {r["key"]: json.loads(r["value"]) for r in changes} == want, (query.failure, changes)
    counts = {b"g0": [], b"g1": []}
    for r in changes:
        counts[r["key"]].append(json.loads(r["value"])["N"])
    # rows only join g1 (a change of w stays in its group: one change, the count kept); g0 loses
    # row 0 once: a count going down otherwise took a row out before the change that moved it
    assert counts[b"g1"] == sorted(counts[b"g1"]), counts
    drops = [(a, b) for a, b in zip(counts[b"g0"], counts[b"g0"][1:]) if b < a]
    assert drops == [(3, 2)], counts


def moving_orders(broker, spark, tmp_path, users: int, orders: int, moved: int, step: int):
    """A session over two new tables, all their records produced before any query reads them:
    MUSERS (`users` users named n0, n1, ...) and MORDERS (`orders` orders, order 100 + i on user
    i % users, the first `moved` of them then moved on by `step` users); and a tag for names."""
    suffix = uuid.uuid4().hex[:8]
    produce(broker.bootstrap_servers, f"mu_{suffix}", [row(u, {"name": f"n{u}"}) for u in range(users)],
            create_partitions=2)
    produce(broker.bootstrap_servers, f"mo_{suffix}", [row(100 + i, {"user_id": i % users}, 5) for i in range(orders)]
            + [row(100 + i, {"user_id": (i + step) % users}, 6) for i in range(moved)], create_partitions=2)
    s = ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark, timeout=90, state_dir=str(tmp_path))
    s.sql(f"""SET 'auto.offset.reset'='earliest';
        CREATE TABLE musers (id INT PRIMARY KEY, name STRING) WITH (kafka_topic='mu_{suffix}', value_format='JSON');
        CREATE TABLE morders (oid INT PRIMARY KEY, user_id INT) WITH (kafka_topic='mo_{suffix}', value_format='JSON');""")
    return s, suffix.upper()
