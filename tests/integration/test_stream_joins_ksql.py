"""Stream-stream joins of persistent queries record by record, against ksqlDB's query-validation
tests (`joins.json`): one record per matching pair, out-of-order records inside the window and a
record at time 0. The sink topic is read back with confluent-kafka."""

from __future__ import annotations

import json
import struct
import time
import uuid

from kafkasql_magic.kafka.peek import fetch_records
from kafkasql_magic.kafka.producer import produce

from checkpoints import read_to_end

KEY = struct.Struct(">q")  # BIGINT keys, as ksqlDB's tests declare them


def streams(ksql, broker, columns: tuple[str, str]) -> tuple[str, str, str]:
    """Two streams `L_<tag>` and `R_<tag>` (key `ID BIGINT`, then `columns`, JSON, one partition
    each, topics named as the streams) and a fresh sink name."""
    tag = uuid.uuid4().hex[:8].upper()
    for side, values in zip("LR", columns):
        ksql.sql(f"CREATE STREAM {side}_{tag} (ID BIGINT KEY, {values}) WITH (kafka_topic='{side}_{tag}', "
                 "value_format='JSON', partitions=1);")
    return f"L_{tag}", f"R_{tag}", f"J_{tag}"


def send(broker, topic: str, records: list[tuple]) -> None:
    """(key, value, time) records to `topic`, in order (time 0 included: see kafka/zero_time.py)."""
    produce(broker.bootstrap_servers, topic, [{"key": KEY.pack(k), "value": json.dumps(v).encode(), "timestamp": ts}
                                              for k, v, ts in records])


def caught_up(query, timeout: float = 90) -> None:
    """Waits for a micro-batch without input after the last one that read records, so that the
    next batch's records meet the watermark those records moved: Spark drops a join's late rows
    by the watermark of the batch before (it runs a batch without input when a watermark moves)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        progress = query._query.recentProgress
        last = max((p["batchId"] for p in progress if p["numInputRows"]), default=None)
        if last is not None and any(p["batchId"] > last and not p["numInputRows"] for p in progress):
            return
        time.sleep(0.5)


def written(broker, query, sink: str, count: int) -> list[tuple]:
    """The sink's records as (key, value, time) once `count` were written and the query has read
    both streams to their ends (the streams are named as their topics)."""
    assert query.wait_for_records(count, 120), query.failure
    read_to_end(query, broker.bootstrap_servers, set(query.sources))
    got = fetch_records(broker.bootstrap_servers, sink, from_beginning=True, limit=None, timeout_s=30)
    return [(KEY.unpack(r["key"])[0], json.loads(r["value"]), r["timestamp"]) for r in got]


def test_each_matching_pair_is_a_record(ksql, broker):
    # joins.json "stream stream inner join with out of order messages": the late message (6 s,
    # after 30 s was seen) meets both right records of its key, each pair a record
    l, r, out = streams(ksql, broker, ("NAME STRING, VALUE BIGINT", "F1 STRING, F2 BIGINT"))
    send(broker, l, [(0, {"NAME": "zero", "VALUE": 0}, 0), (10, {"NAME": "100", "VALUE": 5}, 11000),
                     (0, {"NAME": "foo", "VALUE": 100}, 13000), (90, {"NAME": "ninety", "VALUE": 90}, 17000),
                     (0, {"NAME": "bar", "VALUE": 99}, 30000), (0, {"NAME": "late-message", "VALUE": 10000}, 6000)])
    send(broker, r, [(0, {"F1": "blah", "F2": 50}, 9999), (0, {"F1": "a", "F2": 10}, 15000),
                     (100, {"F1": "newblah", "F2": 150}, 16000)])
    query = ksql.sql(f"CREATE STREAM {out} AS SELECT t.id, name, value, f1, f2 FROM {l} t JOIN {r} tt "
                     f"WITHIN 10 SECONDS ON t.id = tt.id;")
    order = lambda row: (row[2], row[1]["NAME"])  # noqa: E731 (Spark writes one batch in no set order)
    assert sorted(written(broker, query, out, 5), key=order) == sorted([
        (0, {"NAME": "zero", "VALUE": 0, "F1": "blah", "F2": 50}, 9999),
        (0, {"NAME": "foo", "VALUE": 100, "F1": "blah", "F2": 50}, 13000),
        (0, {"NAME": "foo", "VALUE": 100, "F1": "a", "F2": 10}, 15000),
        (0, {"NAME": "late-message", "VALUE": 10000, "F1": "blah", "F2": 50}, 9999),
        (0, {"NAME": "late-message", "VALUE": 10000, "F1": "a", "F2": 10}, 15000)], key=order)


def test_a_record_at_time_zero_joins(ksql, broker):
    # joins.json "left join - with synthetic join column in projection": without a GRACE PERIOD
    # the left record comes out NULL-padded at once, at time 0, then joined
    l, r, out = streams(ksql, broker, ("V0 INT, V1 INT", "V0 INT, V1 INT"))
    send(broker, l, [(1, {"V0": 2, "V1": 3}, 0)])
    send(broker, r, [(1, {"V0": 4, "V1": 5}, 100)])
    query = ksql.sql(f"CREATE STREAM {out} AS SELECT ROWKEY AS ID, L.ID, R.ID, L.V0, R.V1 FROM {l} L LEFT JOIN {r} R "
                     "WITHIN 1 SECOND ON ABS(L.id) = ABS(R.id);")
    assert written(broker, query, out, 2) == [(1, {"L_ID": 1, "R_ID": None, "L_V0": 2, "R_V1": None}, 0),
                                              (1, {"L_ID": 1, "R_ID": 1, "L_V0": 2, "R_V1": 5}, 100)]


def test_records_near_the_year_9999_join(ksql, broker):
    # stream time rides on a watermark column centuries ahead of the record time: a record near
    # the largest timestamp is joined, not a failed query; a side's DOUBLE travels through the
    # side's pandas step as its text (engine/pandas_step) and comes back a DOUBLE
    last = 253402300790000  # 9999-12-31T23:59:50Z
    l, r, out = streams(ksql, broker, ("V INT, D DOUBLE", "W INT"))
    send(broker, l, [(1, {"V": 1, "D": 0.1 + 0.2}, last)])
    send(broker, r, [(1, {"W": 2}, last + 1000)])
    query = ksql.sql(f"CREATE STREAM {out} AS SELECT L.ID, V, W, D FROM {l} L JOIN {r} R WITHIN 5 SECONDS "
                     "ON L.ID = R.ID;")
    assert written(broker, query, out, 1) == [(1, {"V": 1, "W": 2, "D": 0.1 + 0.2}, last + 1000)]


def test_an_out_of_order_record_inside_the_window_joins(ksql, broker):
    # ksqlDB keeps each side's records for the window plus the grace period: a right record 7 s
    # older than the newest one, still inside the left record's 10 s window, joins it although
    # the grace period is 0 (stream time 12 s when it comes in a later micro-batch)
    l, r, out = streams(ksql, broker, ("V STRING", "W STRING"))
    send(broker, l, [(0, {"V": "a"}, 10_000)])
    send(broker, r, [(0, {"W": "x"}, 12_000)])
    query = ksql.sql(f"CREATE STREAM {out} AS SELECT l.id, v, w FROM {l} l LEFT JOIN {r} r "
                     "WITHIN 10 SECONDS GRACE PERIOD 0 SECONDS ON l.id = r.id;")
    assert query.wait_for_records(1, 120), query.failure
    caught_up(query)
    send(broker, r, [(0, {"W": "y"}, 5_000)])
    assert written(broker, query, out, 2) == [(0, {"V": "a", "W": "x"}, 12_000), (0, {"V": "a", "W": "y"}, 10_000)]


def two_batches(ksql, broker, kind: str, first: list, second: list, count: int) -> list[tuple]:
    """A `kind` join WITHIN 1 MINUTE GRACE PERIOD 1 MINUTE over `first` ((side, records) pairs),
    then, in a later micro-batch, `second`: the records written, by key."""
    l, r, out = streams(ksql, broker, ("L1 STRING", "L2 STRING"))
    topic = {"L": l, "R": r}
    for side, records in first:
        send(broker, topic[side], records)
    query = ksql.sql(f"CREATE STREAM {out} AS SELECT t.id, l1, l2 FROM {l} t {kind} JOIN {r} tt "
                     "WITHIN 1 MINUTE GRACE PERIOD 1 MINUTE ON t.id = tt.id;")
    assert query.wait_for_records(1, 120), query.failure
    caught_up(query)
    for side, records in second:
        send(broker, topic[side], records)
    return sorted(written(broker, query, out, count), key=lambda row: row[0])


FIRST = [("L", [(0, {"L1": "A"}, 0), (1, {"L1": "B"}, 330_000)]), ("R", [(0, {"L2": "a"}, 60_000)])]
LATE = [("L", [(2, {"L1": "C"}, 90_000), (3, {"L1": "D"}, 60_000), (4, {"L1": "E"}, 330_000)]),
        ("R", [(2, {"L2": "c"}, 90_000), (3, {"L2": "d"}, 60_000), (4, {"L2": "e"}, 330_000)])]


def test_records_later_than_the_window_and_grace_do_not_join(ksql, broker):
    # keys 2 and 3 come 240 s or more behind both inputs' stream time (330 s): more than the
    # window (1 minute each way) plus the grace (1 minute); key 4 shows the later batch was read
    first = FIRST[:1] + [("R", [(0, {"L2": "a"}, 60_000), (1, {"L2": "b"}, 330_000)])]
    assert two_batches(ksql, broker, "INNER", first, LATE, 3) == [
        (0, {"L1": "A", "L2": "a"}, 60_000), (1, {"L1": "B", "L2": "b"}, 330_000),
        (4, {"L1": "E", "L2": "e"}, 330_000)]


def test_ksqldb_inner_join_with_out_of_order_and_custom_grace_period(ksql, broker):
    # joins.json "stream stream inner join with out of order and custom grace period" in two
    # micro-batches: only the left input has reached 330 s when keys 2 and 3 come. Each side's
    # records are late behind that side's own stream time: the left ones of keys 2 and 3 are
    # dropped (240 s and 270 s behind 330 s, more than 3 minutes), so the right ones meet nothing
    assert two_batches(ksql, broker, "INNER", FIRST, LATE, 2) == [
        (0, {"L1": "A", "L2": "a"}, 60_000), (4, {"L1": "E", "L2": "e"}, 330_000)]


def test_qualified_rowtimes_beside_star(ksql, broker):
    # joins.json "on struct field": `SELECT *, S1.ROWTIME, S2.ROWTIME` writes each side's record
    # time as S1_ROWTIME / S2_ROWTIME beside the prefixed columns; the key is the join expression
    tag = uuid.uuid4().hex[:8].upper()
    left, right, sink = f"S1_{tag}", f"S2_{tag}", f"J_{tag}"
    ksql.sql(f"CREATE STREAM {left} (ID INT KEY, A BIGINT, B STRUCT<C INT>) WITH (kafka_topic='{left}', "
             "value_format='JSON', partitions=1);")
    ksql.sql(f"CREATE STREAM {right} (ID INT KEY, X BIGINT, Y STRUCT<Z INT>) WITH (kafka_topic='{right}', "
             "value_format='JSON', partitions=1);")
    produce(broker.bootstrap_servers, left, [{"key": struct.pack(">i", 1), "value": b'{"A": 1, "B": {"C": 10}}',
                                              "timestamp": 20}])
    produce(broker.bootstrap_servers, right, [{"key": struct.pack(">i", 2), "value": b'{"X": 4, "Y": {"Z": 10}}',
                                               "timestamp": 100}])
    query = ksql.sql(f"CREATE STREAM {sink} AS SELECT *, {left}.ROWTIME, {right}.ROWTIME FROM {left} "
                     f"JOIN {right} WITHIN 1 MINUTE ON {left}.B->C = {right}.Y->Z;")
    assert query.wait_for_records(1, 120), query.failure
    got = fetch_records(broker.bootstrap_servers, sink, from_beginning=True, limit=None, timeout_s=30)
    assert [(struct.unpack(">i", r["key"])[0], json.loads(r["value"]), r["timestamp"]) for r in got] == [
        (10, {f"{left}_ROWTIME": 20, f"{left}_ID": 1, f"{left}_A": 1, f"{left}_B": {"C": 10},
              f"{right}_ROWTIME": 100, f"{right}_ID": 2, f"{right}_X": 4, f"{right}_Y": {"Z": 10}}, 100)]


def test_a_left_join_without_grace_emits_the_unmatched_record_at_once_then_its_matches(ksql, broker):
    # joins.json "stream stream left join" (ksqlDB's semantics before GRACE PERIOD): a left
    # record without a match comes out NULL-padded at once, at its own time, and the joined rows
    # as the right records come, at the later time; a right record without a match not at all
    l, r, out = streams(ksql, broker, ("NAME STRING, VALUE BIGINT", "F1 STRING, F2 BIGINT"))
    send(broker, l, [(0, {"NAME": "zero", "VALUE": 0}, 0), (10, {"NAME": "100", "VALUE": 5}, 11000),
                     (0, {"NAME": "foo", "VALUE": 100}, 13000), (90, {"NAME": "ninety", "VALUE": 90}, 17000),
                     (0, {"NAME": "bar", "VALUE": 99}, 30000)])
    send(broker, r, [(0, {"F1": "blah", "F2": 50}, 10000), (0, {"F1": "a", "F2": 10}, 15000),
                     (100, {"F1": "newblah", "F2": 150}, 16000)])
    query = ksql.sql(f"CREATE STREAM {out} AS SELECT t.id, name, value, f1, f2 FROM {l} t LEFT JOIN {r} tt "
                     "WITHIN 11 SECONDS ON t.id = tt.id;")
    got = written(broker, query, out, 7)
    by_key = {key: [(value, ts) for k, value, ts in got if k == key] for key in (0, 10, 90)}
    assert sorted(k for k, _, _ in got) == [0, 0, 0, 0, 0, 10, 90]
    assert by_key == {  # each key's records in the order written
        0: [({"NAME": "zero", "VALUE": 0, "F1": None, "F2": None}, 0),
            ({"NAME": "zero", "VALUE": 0, "F1": "blah", "F2": 50}, 10000),
            ({"NAME": "foo", "VALUE": 100, "F1": "blah", "F2": 50}, 13000),
            ({"NAME": "foo", "VALUE": 100, "F1": "a", "F2": 10}, 15000),
            ({"NAME": "bar", "VALUE": 99, "F1": None, "F2": None}, 30000)],
        10: [({"NAME": "100", "VALUE": 5, "F1": None, "F2": None}, 11000)],
        90: [({"NAME": "ninety", "VALUE": 90, "F1": None, "F2": None}, 17000)]}


def test_select_star_over_a_join_with_partition_by_writes_each_sides_pseudocolumns(ksql, broker):
    # partition-by.json "only key column - select star - with join on keys": the repartitioned
    # join schema holds each side's values, ROWTIME, ROWPARTITION, ROWOFFSET and keys
    l, r, out = streams(ksql, broker, ("NAME STRING, VALUE BIGINT", "F1 STRING, F2 BIGINT"))
    send(broker, l, [(0, {"NAME": "zero", "VALUE": 1}, 11)])
    send(broker, r, [(0, {"F1": "a", "F2": -1}, 12)])
    query = ksql.sql(f"CREATE STREAM {out} AS SELECT * FROM {l} JOIN {r} WITHIN 10 SECONDS "
                     f"ON {l}.ID = {r}.ID PARTITION BY {l}.VALUE;")
    [(key, value, stamp)] = written(broker, query, out, 1)
    assert (key, stamp) == (1, 12)
    assert list(value.items()) == [(f"{l}_NAME", "zero"), (f"{l}_ROWTIME", 11), (f"{l}_ROWPARTITION", 0),
                                   (f"{l}_ROWOFFSET", 0), (f"{l}_ID", 0), (f"{r}_F1", "a"), (f"{r}_F2", -1),
                                   (f"{r}_ROWTIME", 12), (f"{r}_ROWPARTITION", 0), (f"{r}_ROWOFFSET", 0),
                                   (f"{r}_ID", 0)]


def test_a_join_on_a_struct_meets_only_records_of_the_same_struct(ksql, broker):
    # each struct join key keeps its own records in the keyed state (unlike GROUP BY a STRUCT, the join
    # needs no flat key: this passes without engine/state_key)
    l, r, out = streams(ksql, broker, ("S STRUCT<A INT>, V BIGINT", "S STRUCT<A INT>, W BIGINT"))
    send(broker, l, [(1, {"S": {"A": 1}, "V": 10}, 1000), (2, {"S": {"A": 2}, "V": 20}, 1001),
                     (3, {"S": None, "V": 30}, 1002)])
    send(broker, r, [(4, {"S": {"A": 1}, "W": 40}, 1003), (5, {"S": None, "W": 50}, 1004)])
    query = ksql.sql(f"CREATE STREAM {out} WITH (KEY_FORMAT='JSON') AS SELECT {l}.S AS S, V, W FROM {l} "
                     f"JOIN {r} WITHIN 10 SECONDS ON {l}.S = {r}.S;")
    assert query.wait_for_records(1, 120), query.failure
    query.wait_for_records(2, 5)
    got = fetch_records(broker.bootstrap_servers, out, from_beginning=True, limit=None, timeout_s=30)
    assert [(json.loads(g["key"]), json.loads(g["value"])) for g in got] == [({"A": 1}, {"V": 10, "W": 40})]


def test_a_right_join_writes_an_unmatched_right_record_with_its_values(ksql, broker):
    # joins.json "stream stream right join with out of order and custom grace period": the right
    # record of key 2 has no left match in its window; it comes out with the left's columns NULL
    # once the window and grace pass (its value was written as NULL, a tombstone)
    l, r, out = streams(ksql, broker, ("L1 STRING", "L2 STRING"))
    send(broker, l, [(0, {"L1": "A"}, 0), (1, {"L1": "B"}, 330000)])
    send(broker, r, [(0, {"L2": "a"}, 60000), (2, {"L2": "c"}, 90000)])
    query = ksql.sql(f"CREATE STREAM {out} AS SELECT t.id, l1, l2 FROM {l} t RIGHT JOIN {r} tt "
                     "WITHIN 1 MINUTE GRACE PERIOD 1 MINUTE ON t.id = tt.id;")
    assert sorted(written(broker, query, out, 2)) == [(0, {"L1": "A", "L2": "a"}, 60000),
                                                      (2, {"L1": None, "L2": "c"}, 90000)]
