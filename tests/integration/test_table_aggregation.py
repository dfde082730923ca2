"""Aggregating a TABLE retracts (ksqlDB's KGroupedTable adder and subtractor), and a NULL
GROUP BY key drops the record into the processing log, on a real broker."""

import json
import time
import uuid

import pytest

import kafkasql_magic as ks
from kafkasql_magic.kafka.producer import produce

from changelog_state import settle

T0 = 1_700_000_000_000


def person(pid, region, score):
    return {"key": pid.to_bytes(4, "big"), "timestamp": T0 + pid,
            "value": json.dumps({"region": region, "score": score})}


def tombstone(pid):
    return {"key": pid.to_bytes(4, "big"), "value": None, "timestamp": T0}


@pytest.fixture
def people(broker, spark):
    topic = f"people_{uuid.uuid4().hex[:8]}"
    produce(broker.bootstrap_servers, topic, [person(1, "eu", 10), person(2, "eu", 5), person(3, "us", 7)],
            create_partitions=1)
    s = ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark, timeout=90)
    s.sql(f"""SET 'auto.offset.reset'='earliest';
        CREATE TABLE people (id INT PRIMARY KEY, region STRING, score INT)
          WITH (kafka_topic='{topic}', value_format='JSON');""")
    s.topic = topic
    yield s
    s.stop()


def test_a_changed_moved_or_deleted_row_is_retracted_from_its_group(people, broker):
    handle = people.sql("SELECT region, COUNT(*) AS n, SUM(score) AS total, COLLECT_LIST(id) AS ids "
                        "FROM people GROUP BY region EMIT CHANGES;")
    assert handle.plan.retracts

    def first(state):
        return {k: v["N"] for k, v in state.items()} == {"eu": 2, "us": 1}

    deadline = time.monotonic() + 90
    while not first({r["REGION"]: r for r in handle.rows().to_dict("records")}):
        assert time.monotonic() < deadline and handle.failure is None, handle.rows()
        time.sleep(0.3)
    # person 1 moves to us, person 2 is deleted (eu is left empty), person 3 changes score,
    # person 4 has no region (dropped and logged)
    produce(broker.bootstrap_servers, people.topic,
            [person(1, "us", 20), tombstone(2), person(3, "us", 8), person(4, None, 1)])
    state = settle(handle, "REGION", lambda s: s.get("us", {}).get("N") == 2 and s.get("eu", {}).get("N") == 0)
    us = state["us"]
    assert (us["TOTAL"], sorted(us["IDS"])) == (28, [1, 3])
    # eu is kept, with the aggregates of no rows (ksqlDB's subtractor takes each row back)
    assert state["eu"] == {"REGION": "eu", "N": 0, "TOTAL": 0, "IDS": []}
    assert None not in state  # no NULL group
    log = people.processing_log(query=handle.id)
    assert list(log[["PARTITION", "OFFSET"]].itertuples(index=False, name=None)) == [(0, 6)]
    assert log.MESSAGE[0] == ("Group-by column with index 0 resolved to null. "
                              "The source row will be excluded from the table.")


def test_min_and_max_over_a_table_are_refused_as_in_ksqldb(people):
    """ksqlDB's MIN and MAX cannot take a row back (no `undo`): group-by.json "non-table udaf on table"."""
    with pytest.raises(ks.KStreamError, match="The aggregation functions MIN and MAX cannot be applied to a table "
                                              "source, only to a stream source."):
        people.sql("SELECT region, MIN(score), MAX(score) FROM people GROUP BY region EMIT CHANGES;")


def test_a_row_the_where_clause_stops_matching_leaves_its_group(people, broker):
    handle = people.sql("SELECT region, COUNT(*) AS n FROM people WHERE score > 6 GROUP BY region EMIT CHANGES;")
    deadline = time.monotonic() + 90
    while {r["REGION"]: r["N"] for r in handle.rows().to_dict("records")} != {"eu": 1, "us": 1}:
        assert time.monotonic() < deadline and handle.failure is None, handle.rows()
        time.sleep(0.3)
    produce(broker.bootstrap_servers, people.topic, [person(1, "eu", 2), person(2, "us", 9)])
    state = settle(handle, "REGION", lambda s: s.get("us", {}).get("N") == 2 and s.get("eu", {}).get("N") == 0)
    assert state["eu"]["N"] == 0


def test_a_pull_query_over_a_table_counts_each_row_once(people, broker):
    produce(broker.bootstrap_servers, people.topic, [person(1, "us", 20), tombstone(2)])
    handle = people.sql("SELECT region, COUNT(*) AS n FROM people GROUP BY region EMIT CHANGES;")
    state = settle(handle, "REGION", lambda s: {k: v["N"] for k, v in s.items()} == {"us": 2})
    assert state["us"]["N"] == 2


def test_a_persistent_table_aggregation_retracts_rows_it_saw_before_a_restart(broker, spark, tmp_path):
    """The table's rows live beside the query's checkpoint: after the process (here the session)
    ends, the resumed query still knows which group each row counted in, so a row that moves or
    goes is retracted from the group it left (else that group would keep counting it)."""
    from kafkasql_magic.kafka.peek import fetch_records

    tag = uuid.uuid4().hex[:8]
    topic, out = f"people_{tag}", f"REGIONS_{tag.upper()}"
    produce(broker.bootstrap_servers, topic, [person(1, "eu", 10), person(2, "eu", 5), person(3, "us", 7)],
            create_partitions=1)

    def connect():
        s = ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark, timeout=90,
                       service_id=f"agg{tag}", state_dir=str(tmp_path))
        s.sql("SET 'auto.offset.reset'='earliest';")
        return s

    def changelog(done):
        deadline, got = time.monotonic() + 120, []
        while time.monotonic() < deadline and not done(got):
            got = [(r["key"].decode(), None if r["value"] is None else json.loads(r["value"]))
                   for r in sorted(fetch_records(broker.bootstrap_servers, out, from_beginning=True, limit=None,
                                                 timeout_s=2, until_end=False), key=lambda r: r["offset"])]
        return got

    def latest(got):
        return {k: v for k, v in got}

    first = connect()
    first.sql(f"CREATE TABLE people_{tag} (id INT PRIMARY KEY, region STRING, score INT) "
              f"WITH (kafka_topic='{topic}', value_format='JSON');"
              f"CREATE TABLE {out} AS SELECT region, COUNT(*) AS n, SUM(score) AS total "
              f"FROM people_{tag} GROUP BY region;")
    before = changelog(lambda got: latest(got) == {"eu": {"N": 2, "TOTAL": 15}, "us": {"N": 1, "TOTAL": 7}})
    query = next(iter(first.persistent.queries.values()))
    deadline = time.monotonic() + 60
    while not any((tmp_path / query.id / "commits").glob("*")) and time.monotonic() < deadline:
        time.sleep(0.2)
    first.stop()  # the query stops; its checkpoint and the table's rows stay
    assert latest(before) == {"eu": {"N": 2, "TOTAL": 15}, "us": {"N": 1, "TOTAL": 7}}

    # person 1 moves to us, person 2 is deleted (eu is left empty), person 3 changes score
    produce(broker.bootstrap_servers, topic, [person(1, "us", 20), tombstone(2), person(3, "us", 8)])
    second = connect()
    try:
        after = changelog(lambda got: len(got) > len(before) and latest(got).get("eu") == {"N": 0, "TOTAL": 0}
                          and latest(got).get("us") == {"N": 2, "TOTAL": 28})
    finally:
        second.stop()
    assert after[:len(before)] == before
    changes = after[len(before):]
    # eu is retracted as each of its rows leaves (1 moved, then 2 deleted): a count of 0 at the
    # end, never a count that includes a row seen before the restart
    eu = [v for k, v in changes if k == "eu"]
    assert eu and eu[-1] == {"N": 0, "TOTAL": 0} and all(v in ({"N": 0, "TOTAL": 0}, {"N": 1, "TOTAL": 5}) for v in eu)
    us = [v for k, v in changes if k == "us"]
    assert us[-1] == {"N": 2, "TOTAL": 28}
    assert all(v in ({"N": 2, "TOTAL": 27}, {"N": 2, "TOTAL": 28}) for v in us)  # 3 counted once, 1 once



def test_a_persistent_table_aggregation_writes_an_emptied_groups_new_value(broker, spark, tmp_path):
    """ksqlDB (Kafka Streams' subtractor) keeps a group its rows left, with its new value (a count
    of 0, a sum of 0: `count.json` "should count back to zero", `group-by.json` "field with re-key
    (table->table)") over which HAVING decides, and writes a tombstone where HAVING stops holding
    (`group-by.json` "with having expression (table->table)"). Each change is produced once the
    last one's records are written, so that each micro-batch holds one change."""
    from kafkasql_magic.kafka.peek import fetch_records

    tag = uuid.uuid4().hex[:8].upper()
    topic = f"people_{tag.lower()}"
    produce(broker.bootstrap_servers, topic, [person(1, "eu", 10), person(2, "eu", 5), person(3, "us", 7)],
            create_partitions=1)
    s = ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark, timeout=90, state_dir=str(tmp_path))
    try:
        s.sql(f"""SET 'auto.offset.reset'='earliest';
            CREATE TABLE p_{tag} (id INT PRIMARY KEY, region STRING, score INT)
              WITH (kafka_topic='{topic}', value_format='JSON');
            CREATE TABLE r_{tag} AS SELECT region, COUNT(*) AS n, SUM(score) AS total FROM p_{tag}
              GROUP BY region HAVING SUM(score) < 25;""")
        query = next(iter(s.persistent.queries.values()))

        def written(count: int) -> list[tuple]:
            """(key, value or None, timestamp) of the sink's records, once there are `count`."""
            query.wait_for_records(count, 120)
            got = fetch_records(broker.bootstrap_servers, query.sink_topic, from_beginning=True, limit=None,
                                timeout_s=10, until_end=True)
            assert len(got) == count, (query.failure, got)
            return [(r["key"], None if r["value"] is None else json.loads(r["value"]), r["timestamp"])
                    for r in sorted(got, key=lambda r: r["offset"])]

        assert sorted(written(2)) == [(b"eu", {"N": 2, "TOTAL": 15}, T0 + 2), (b"us", {"N": 1, "TOTAL": 7}, T0 + 3)]
        produce(broker.bootstrap_servers, topic, [person(1, "us", 20) | {"timestamp": T0 + 50}])  # eu keeps one row
        assert sorted(written(4)[2:], key=lambda r: r[0]) == [
            (b"eu", {"N": 1, "TOTAL": 5}, T0 + 50),
            (b"us", None, T0 + 50)]  # a sum of 27: HAVING stopped holding, a tombstone
        produce(broker.bootstrap_servers, topic, [tombstone(2) | {"timestamp": T0 + 60}])  # eu's last row goes
        assert written(5)[4:] == [(b"eu", {"N": 0, "TOTAL": 0}, T0 + 60)]  # kept, counted back to 0; HAVING holds
    finally:
        s.stop()


def test_with_the_record_cache_off_each_group_change_is_written_in_order_across_a_restart(broker, spark, tmp_path):
    """ksqlDB with `cache.max.bytes.buffering` 0 (its tests' setting): a row that moves from eu to us
    writes eu's new value then us's; a row changed within its group is one change of it (Kafka
    Streams' subtractor then adder, KIP-904); the record time is the latest of the group's changes
    so far. The groups' accumulators and each row's version live in the query's keyed state: after
    a restart nothing is lost and nothing counted twice."""
    from kafkasql_magic.kafka.peek import fetch_records

    tag = uuid.uuid4().hex[:8]
    topic, out = f"people_{tag}", f"REGIONS_{tag.upper()}"
    produce(broker.bootstrap_servers, topic, [person(1, "eu", 10), person(2, "eu", 5), person(3, "us", 7)],
            create_partitions=1)

    def connect():
        s = ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark, timeout=90,
                       service_id=f"chg{tag}", state_dir=str(tmp_path))
        s.sql("SET 'auto.offset.reset'='earliest'; SET 'cache.max.bytes.buffering'='0';")
        return s

    def written(count: int) -> list[tuple]:
        """(key, value, time after T0) of the sink's records, once there are `count` (or 120 s passed)."""
        deadline = time.monotonic() + 120
        got = fetch_records(broker.bootstrap_servers, out, from_beginning=True, limit=None, timeout_s=2, until_end=False)
        while time.monotonic() < deadline and len(got) < count:
            got = fetch_records(broker.bootstrap_servers, out, from_beginning=True, limit=None, timeout_s=2,
                                until_end=False)
        return [(r["key"].decode(), json.loads(r["value"]), r["timestamp"] - T0)
                for r in sorted(got, key=lambda r: r["offset"])]

    first = connect()
    first.sql(f"CREATE TABLE people_{tag} (id INT PRIMARY KEY, region STRING, score INT) "
              f"WITH (kafka_topic='{topic}', value_format='JSON');"
              f"CREATE TABLE {out} AS SELECT region, COUNT(*) AS n, SUM(score) AS total "
              f"FROM people_{tag} GROUP BY region;")
    before = [("eu", {"N": 1, "TOTAL": 10}, 1), ("eu", {"N": 2, "TOTAL": 15}, 2), ("us", {"N": 1, "TOTAL": 7}, 3)]
    assert written(3) == before
    query = next(iter(first.persistent.queries.values()))
    deadline = time.monotonic() + 60
    while not any((tmp_path / query.id / "commits").glob("*")) and time.monotonic() < deadline:
        time.sleep(0.2)
    first.stop()

    produce(broker.bootstrap_servers, topic, [person(1, "us", 20) | {"timestamp": T0 + 50},
                                              person(3, "us", 8) | {"timestamp": T0 + 51},
                                              tombstone(2) | {"timestamp": T0 + 52}])
    second = connect()
    try:
        after = written(7)
        time.sleep(3)  # nothing more comes
        assert written(0) == after
    finally:
        second.stop()
    assert after == before + [("eu", {"N": 1, "TOTAL": 5}, 50), ("us", {"N": 2, "TOTAL": 27}, 50),
                              ("us", {"N": 2, "TOTAL": 28}, 51), ("eu", {"N": 0, "TOTAL": 0}, 52)]


def test_collect_list_of_a_time_over_a_table_takes_a_changed_row_back(broker, spark):
    topic = f"shifts_{uuid.uuid4().hex[:8]}"

    def shift(pid, team, start):
        return {"key": pid.to_bytes(4, "big"), "timestamp": T0 + pid,
                "value": json.dumps({"team": team, "start": start})}

    produce(broker.bootstrap_servers, topic, [shift(1, "a", "08:00:00"), shift(2, "a", "09:30:00")],
            create_partitions=1)
    s = ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark, timeout=90)
    try:
        s.sql(f"""SET 'auto.offset.reset'='earliest';
            CREATE TABLE shifts (id INT PRIMARY KEY, team STRING, start TIME)
              WITH (kafka_topic='{topic}', value_format='JSON');""")
        handle = s.sql("SELECT team, COLLECT_LIST(start) AS starts FROM shifts GROUP BY team EMIT CHANGES;")
        settle(handle, "TEAM", lambda st: len(st.get("a", {}).get("STARTS") or []) == 2)
        handle = s.sql("SELECT team, COLLECT_LIST(start) AS starts FROM shifts GROUP BY team EMIT CHANGES;")
        produce(broker.bootstrap_servers, topic, [shift(1, "b", "07:15:00")])  # moves from a to b
        state = settle(handle, "TEAM", lambda st: len(st.get("a", {}).get("STARTS") or []) == 1
                       and len(st.get("b", {}).get("STARTS") or []) == 1)
        assert [str(t) for t in state["a"]["STARTS"]] == ["09:30:00"]
        assert [str(t) for t in state["b"]["STARTS"]] == ["07:15:00"]
    finally:
        s.stop()
