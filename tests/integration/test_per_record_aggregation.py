"""GROUP BY with ksqlDB's record cache off (`cache.max.bytes.buffering` = 0): one change per input
record, in (partition, offset) order within a group, through Spark's keyed state; the sink topic
read back record by record."""

from __future__ import annotations

import json
import uuid

import pytest

from kafkasql_magic.kafka.peek import fetch_records
from kafkasql_magic.kafka.producer import produce

from checkpoints import committed, restartable

BASE = 1_700_000_000_000
#: (group, value, time offset): one micro-batch, times out of order within a group.
RECORDS = [("a", 1, 10), ("a", 2, 5), ("b", 3, 7), ("a", 4, 20), ("b", 5, 1)]


def _source(ksql, broker, records=RECORDS, first=0):
    tag = uuid.uuid4().hex[:8].upper()
    src, topic = f"S_{tag}", f"t-{tag.lower()}"
    ksql.sql(f"CREATE STREAM {src} (ID INT KEY, K STRING, V INT) "
             f"WITH (kafka_topic='{topic}', value_format='JSON', partitions=1);")
    _produce(broker, topic, records, first)
    return src, topic


def _produce(broker, topic, records, first=0):
    produce(broker.bootstrap_servers, topic, [
        {"value": json.dumps({"K": k, "V": v}).encode(), "timestamp": BASE + t, "headers": [("n", str(first + i).encode())]}
        for i, (k, v, t) in enumerate(records)])


def _read(broker, topic, count):
    records = fetch_records(broker.bootstrap_servers, topic, from_beginning=True, limit=count, timeout_s=30,
                            until_end=False)
    return sorted(records, key=lambda r: (r["partition"], r["offset"]))


def _changes(records):
    return [(r["key"].decode(), json.loads(r["value"]) if r["value"] is not None else None,
             r["timestamp"] - BASE, r["headers"][0][1].decode()) for r in records]


def test_cache_off_writes_one_change_per_record_in_offset_order(ksql, broker):
    src, _ = _source(ksql, broker)
    ksql.sql("SET 'cache.max.bytes.buffering'='0';")
    query = ksql.sql(f"CREATE TABLE C_{src} AS SELECT K, COUNT(*) AS N, SUM(V) AS S, MAX(V) AS M, "
                     f"COLLECT_LIST(V) AS L, LATEST_BY_OFFSET(V) AS LAST FROM {src} GROUP BY K;")
    assert query.wait_for_records(5, 120), query.failure
    # the record time is the latest among the group's records so far; the headers the record's own
    assert _changes(_read(broker, f"C_{src}", 5)) == [
        ("a", {"N": 1, "S": 1, "M": 1, "L": [1], "LAST": 1}, 10, "0"),
        ("a", {"N": 2, "S": 3, "M": 2, "L": [1, 2], "LAST": 2}, 10, "1"),
        ("b", {"N": 1, "S": 3, "M": 3, "L": [3], "LAST": 3}, 7, "2"),
        ("a", {"N": 3, "S": 7, "M": 4, "L": [1, 2, 4], "LAST": 4}, 20, "3"),
        ("b", {"N": 2, "S": 8, "M": 5, "L": [3, 5], "LAST": 5}, 7, "4")]


#: ksqlDB's latest-offset-udaf.json and earliest-offset-udaf.json forms, over 12, NULL, 13.
BY_OFFSET = ("LATEST_BY_OFFSET(V, false) AS L1, LATEST_BY_OFFSET(V, 2) AS L2, LATEST_BY_OFFSET(V, 2, false) AS L3, "
             "EARLIEST_BY_OFFSET(V, false) AS E1, EARLIEST_BY_OFFSET(V, 2, false) AS E3")
BY_OFFSET_CHANGES = [{"L1": 12, "L2": [12], "L3": [12], "E1": 12, "E3": [12]},
                     {"L1": None, "L2": [12], "L3": [12, None], "E1": 12, "E3": [12, None]},
                     {"L1": 13, "L2": [12, 13], "L3": [None, 13], "E1": 12, "E3": [12, None]}]


def test_cache_off_by_offset_with_n_and_ignore_nulls_as_ksqldb(ksql, broker):
    src, _ = _source(ksql, broker, [("a", 12, 1), ("a", None, 2), ("a", 13, 3)])
    ksql.sql("SET 'cache.max.bytes.buffering'='0';")
    query = ksql.sql(f"CREATE TABLE O_{src} AS SELECT K, {BY_OFFSET} FROM {src} GROUP BY K;")
    assert query.wait_for_records(3, 120), query.failure
    assert [value for _, value, _, _ in _changes(_read(broker, f"O_{src}", 3))] == BY_OFFSET_CHANGES


def test_by_offset_with_n_and_ignore_nulls_per_micro_batch(session, broker):
    """With the record cache on, a micro-batch's records come to one change per group (Spark's
    aggregation over the batch): the same values as the last change above."""
    src, _ = _source(session, broker, [("a", 12, 1), ("a", None, 2), ("a", 13, 3)])
    rows = session.sql(f"SELECT K, {BY_OFFSET} FROM {src} GROUP BY K EMIT CHANGES LIMIT 1;")
    got = rows.iloc[-1].to_dict()
    assert {k: (list(v) if hasattr(v, "__len__") and not isinstance(v, str) else (None if v != v else v))
            for k, v in got.items() if k != "K"} == BY_OFFSET_CHANGES[-1]


def test_cache_off_having_writes_a_tombstone_only_where_the_row_before_passed_it(ksql, broker):
    # ksqlDB's having.json and group-by.json ("udafs only in having"): a change failing HAVING is a
    # tombstone after a row that passed it; after nothing, or after a failing row, nothing is written
    src, _ = _source(ksql, broker, RECORDS + [("a", 6, 30)])
    ksql.sql("SET 'ksql.streams.cache.max.bytes.buffering'='0';")
    query = ksql.sql(f"CREATE TABLE H_{src} AS SELECT K, COUNT(*) AS N FROM {src} GROUP BY K HAVING COUNT(*) = 2;")
    assert query.wait_for_records(3, 120), query.failure
    records = fetch_records(broker.bootstrap_servers, f"H_{src}", from_beginning=True, limit=None, timeout_s=10)
    assert [(k, v, t) for k, v, t, _ in _changes(sorted(records, key=lambda r: r["offset"]))] == [
        ("a", {"N": 2}, 10), ("a", None, 20), ("b", {"N": 2}, 7)]


def test_cache_off_windowed_having_writes_a_tombstone_only_where_the_window_passed_it(ksql, broker):
    # ksqlDB's having.json ("table having"): a window whose first change fails HAVING writes nothing
    src, _ = _source(ksql, broker, RECORDS + [("a", 6, 30)])
    ksql.sql("SET 'cache.max.bytes.buffering'='0';")
    query = ksql.sql(f"CREATE TABLE W_{src} AS SELECT K, SUM(V) AS S FROM {src} WINDOW TUMBLING (SIZE 30 SECONDS) "
                     "GROUP BY K HAVING SUM(V) BETWEEN 3 AND 6;")
    assert query.wait_for_records(4, 120), query.failure
    records = fetch_records(broker.bootstrap_servers, f"W_{src}", from_beginning=True, limit=None, timeout_s=10)
    assert [(r["key"][:-8].decode(), None if r["value"] is None else json.loads(r["value"]))
            for r in sorted(records, key=lambda r: r["offset"])] == [
        ("a", {"S": 3}), ("b", {"S": 3}), ("a", None), ("b", None)]


def test_cache_off_push_query_emits_each_change(session, broker):
    src, _ = _source(session, broker)
    session.sql("SET 'cache.max.bytes.buffering'='0';")
    rows = session.sql(f"SELECT K, COUNT(*) AS N, AVG(V) AS A FROM {src} GROUP BY K EMIT CHANGES LIMIT 5;")
    by_group = {k: [(n, a) for kk, n, a in rows.itertuples(index=False, name=None) if kk == k] for k in "ab"}
    assert by_group == {"a": [(1, 1.0), (2, 1.5), (3, 7 / 3)], "b": [(1, 3.0), (2, 4.0)]}


def test_cache_off_state_survives_a_restart_from_the_checkpoint(broker, spark, registry, tmp_path):

    connect = restartable(broker, spark, tmp_path, registry)

    first = connect()
    try:
        first.sql("SET 'auto.offset.reset'='earliest';")
        first.sql("SET 'cache.max.bytes.buffering'='0';")
        src, topic = _source(first, broker)
        query = first.sql(f"CREATE TABLE R_{src} AS SELECT K, COUNT(*) AS N FROM {src} GROUP BY K;")
        assert query.wait_for_records(5, 120), query.failure
        committed(query)  # else the batch in flight runs again
    finally:
        first.stop()
    _produce(broker, topic, [("a", 6, 30), ("b", 7, 31)], first=5)
    second = connect()  # restores the query from the command topic and resumes it from its checkpoint
    try:
        query = next(iter(second.persistent.queries.values()))
        assert query.wait_for_records(2, 120), query.failure
    finally:
        second.stop()
    assert [(k, v) for k, v, _, _ in _changes(_read(broker, f"R_{src}", 7))][5:] == [("a", {"N": 4}), ("b", {"N": 3})]


@pytest.mark.parametrize("window", ["", "WINDOW TUMBLING (SIZE 1 HOUR)"])
def test_cache_off_groups_by_a_struct_with_null_fields_each_on_its_own(ksql, broker, window):
    # ksqlDB's group-by.json "multiple expressions - KAFKA to struct key format": each struct
    # (NULL fields too) is a group of its own, counted in its own state
    src, _ = _source(ksql, broker, [("a", 2, 0), ("b", 4, 1), ("a", None, 2), (None, 1, 3), ("a", 2, 4),
                                    ("b", 4, 5), ("b", 1, 6)])
    ksql.sql("SET 'cache.max.bytes.buffering'='0';")
    query = ksql.sql(f"CREATE TABLE G_{src} WITH (KEY_FORMAT='JSON') AS SELECT STRUCT(f1:=K, f2:=V) AS KS, "
                     f"AS_VALUE(STRUCT(f1:=K, f2:=V)) AS KV, COUNT(*) AS TOTAL FROM {src} {window} "
                     "GROUP BY STRUCT(f1:=K, f2:=V);")
    assert query.wait_for_records(7, 120), query.failure
    window_bytes = 8 if window else 0  # a TUMBLING window's start after the key
    assert [(json.loads(r["key"][:len(r["key"]) - window_bytes]), json.loads(r["value"])["TOTAL"])
            for r in _read(broker, f"G_{src}", 7)] == [
        ({"F1": "a", "F2": 2}, 1), ({"F1": "b", "F2": 4}, 1), ({"F1": "a", "F2": None}, 1),
        ({"F1": None, "F2": 1}, 1), ({"F1": "a", "F2": 2}, 2), ({"F1": "b", "F2": 4}, 2), ({"F1": "b", "F2": 1}, 1)]


@pytest.mark.parametrize("window", ["", "WINDOW TUMBLING (SIZE 1 HOUR) "])
def test_cache_off_aggregates_time_values(ksql, broker, window):
    """A TIME in a group's keyed state (latest-offset-udaf.json "latest by offset with an array
    added"): Spark's state store has no TIME, so the state holds its microseconds of the day."""
    tag = uuid.uuid4().hex[:8].upper()
    src, topic = f"TM_{tag}", f"tm-{tag.lower()}"
    ksql.sql(f"CREATE STREAM {src} (ID INT KEY, K STRING, T TIME) WITH (kafka_topic='{topic}', value_format='JSON', "
             "partitions=1);")
    produce(broker.bootstrap_servers, topic, [{"value": json.dumps({"K": "a", "T": t}).encode(), "timestamp": BASE + i}
                                              for i, t in enumerate([123, 45_000, 7])])
    ksql.sql("SET 'cache.max.bytes.buffering'='0';")
    query = ksql.sql(f"CREATE TABLE O_{src} AS SELECT K, LATEST_BY_OFFSET(T) AS L, MIN(T) AS M, COLLECT_LIST(T) AS C "
                     f"FROM {src} {window}GROUP BY K;")
    assert query.wait_for_records(3, 120), query.failure
    assert [json.loads(r["value"]) for r in _read(broker, f"O_{src}", 3)] == [
        {"L": 123, "M": 123, "C": [123]}, {"L": 45_000, "M": 123, "C": [123, 45_000]},
        {"L": 7, "M": 7, "C": [123, 45_000, 7]}]


def _times_of_day(ksql, broker, cache: str) -> str:
    """A stream of three TIME values (123 ms, 45 s, 123 ms into the day), with the record cache set."""
    tag = uuid.uuid4().hex[:8].upper()
    src, topic = f"TK_{tag}", f"tk-{tag.lower()}"
    ksql.sql(f"CREATE STREAM {src} (ID INT KEY, T TIME) WITH (kafka_topic='{topic}', value_format='JSON', "
             "partitions=1);")
    produce(broker.bootstrap_servers, topic, [{"value": json.dumps({"T": t}).encode(), "timestamp": BASE + i}
                                              for i, t in enumerate([123, 45_000, 123])])
    ksql.sql(f"SET 'cache.max.bytes.buffering'='{cache}';")
    return src


def _keys_and_counts(broker, query, sink: str, changes: int, window_bytes: int) -> list[tuple]:
    assert query.wait_for_records(changes, 120), query.failure
    return [(json.loads(r["key"][:len(r["key"]) - window_bytes]), r["value"] and json.loads(r["value"])["N"])
            for r in _read(broker, sink, changes)]


@pytest.mark.parametrize("window", ["", "WINDOW TUMBLING (SIZE 1 HOUR) "])
@pytest.mark.parametrize("cache", ["0", "10000000"])
def test_group_by_a_time_column(ksql, broker, window, cache):
    """A TIME group key in Spark's keyed state, whose state store has no TIME: each time of day a
    group of its own, written as its milliseconds of the day."""
    src = _times_of_day(ksql, broker, cache)
    query = ksql.sql(f"CREATE TABLE C_{src} WITH (KEY_FORMAT='JSON') AS SELECT T, COUNT(*) AS N FROM {src} "
                     f"{window}GROUP BY T;")
    got = _keys_and_counts(broker, query, f"C_{src}", 3 if cache == "0" else 2, 8 if window else 0)
    if cache == "0":  # one change per record, in offset order
        assert got == [(123, 1), (45_000, 1), (123, 2)]
    else:  # one change per group and micro-batch, the groups in no set order
        assert sorted(got) == [(123, 2), (45_000, 1)]


@pytest.mark.parametrize("window", ["", "WINDOW SESSION (1 HOUR) "])
def test_group_by_a_struct_holding_a_time(ksql, broker, window):
    src = _times_of_day(ksql, broker, "0")
    query = ksql.sql(f"CREATE TABLE C_{src} WITH (KEY_FORMAT='JSON') AS SELECT STRUCT(A:=T) AS K, COUNT(*) AS N "
                     f"FROM {src} {window}GROUP BY STRUCT(A:=T);")
    # a session growing is its old bounds' tombstone and its new row; its start and end follow the key
    got = _keys_and_counts(broker, query, f"C_{src}", 4 if window else 3, 16 if window else 0)
    assert [g for g in got if g[1] is not None] == [({"A": 123}, 1), ({"A": 45_000}, 1), ({"A": 123}, 2)]


def test_cache_off_groups_by_an_array_and_by_a_struct_holding_one(ksql, broker):
    # PySpark's worker cannot read an array in the state's grouping key: the key goes in as JSON
    tag = uuid.uuid4().hex[:8].upper()
    src, topic = f"S_{tag}", f"t-{tag.lower()}"
    ksql.sql(f"CREATE STREAM {src} (ID INT KEY, K STRING, V INT) WITH (kafka_topic='{topic}', format='JSON', "
             "partitions=1);")
    _produce(broker, topic, [("a", 1, 1), ("b", 1, 2), ("a", 1, 3)])
    ksql.sql("SET 'cache.max.bytes.buffering'='0';")
    arrays = ksql.sql(f"CREATE TABLE A_{src} AS SELECT ARRAY[K, 'x'] AS ROWKEY, COUNT(*) AS N FROM {src} "
                      "GROUP BY ARRAY[K, 'x'];")
    structs = ksql.sql(f"CREATE TABLE B_{src} AS SELECT STRUCT(L := ARRAY[K]) AS ROWKEY, COUNT(*) AS N FROM {src} "
                       "GROUP BY STRUCT(L := ARRAY[K]);")
    assert arrays.wait_for_records(3, 120), arrays.failure
    assert structs.wait_for_records(3, 120), structs.failure
    assert [(json.loads(r["key"]), json.loads(r["value"])["N"]) for r in _read(broker, f"A_{src}", 3)] == [
        (["a", "x"], 1), (["b", "x"], 1), (["a", "x"], 2)]
    assert [(json.loads(r["key"]), json.loads(r["value"])["N"]) for r in _read(broker, f"B_{src}", 3)] == [
        ({"L": ["a"]}, 1), ({"L": ["b"]}, 1), ({"L": ["a"]}, 2)]
