"""The stateful steps of table joins, run on pandas frames as Spark runs them (no Spark session)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from pyspark.sql import types as T

from kafkasql_magic.engine.table_join.state_spark import CHANGE_COLUMNS, PrimaryKeyJoin
from kafkasql_magic.engine.table_join.rows import joined_tables


class MapState:
    """What transformWithStateInPandas's handle gives a processor: a MapState, its calls counted."""

    def __init__(self):
        self.value, self.calls = {}, []

    def getValue(self, key):
        self.calls.append(("get", key))
        return self.value.get(key)

    def updateValue(self, key, value):
        self.calls.append(("update", key))
        self.value[key] = tuple(value)

    def removeKey(self, key):
        self.calls.append(("remove", key))
        del self.value[key]


class Handle:
    def __init__(self):
        self.state = MapState()

    def getMapState(self, name, key_schema, value_schema):
        return self.state


def primary(*kinds):
    """A PrimaryKeyJoin over integer join keys, and its state."""
    step, handle = PrimaryKeyJoin(kinds, T.LongType()), Handle()
    step.init(handle)
    return step, handle.state


def change(side, key, row, at, order):
    return {"m_side": side, "m_jk": key, "m_row": None if row is None else json.dumps(row), "m_rt": at,
            "m_order": order, "m_tomb": row is None}


def run(step, key, *changes, tables=2):
    """The step's output rows as (each table's row..., time, tombstone)."""
    frame = pd.DataFrame(list(changes))
    out = pd.concat(list(step.handleInputRows((key,), iter([frame[CHANGE_COLUMNS]]), None)))
    return [(*(None if r[f"m_t{i}"] is None else json.loads(r[f"m_t{i}"]) for i in range(tables)),
             r["m_rt"], bool(r["m_tomb"])) for r in out.to_dict("records")]


def test_inner_join_emits_rows_while_both_sides_exist_then_a_tombstone():
    step, state = primary("INNER")
    assert run(step, 1, change(0, 1, {"n": "ann"}, 10, 0)) == []  # no match yet
    assert run(step, 1, change(1, 1, {"s": 5}, 20, 0), change(0, 1, {"n": "anne"}, 15, 1)) == [
        ({"n": "anne"}, {"s": 5}, 20, False)]  # merged by time: the rename came first
    assert run(step, 1, change(1, 1, None, 30, 1)) == [({"n": "anne"}, None, 30, True)]
    assert run(step, 1, change(0, 1, None, 40, 2)) == []  # nothing left to delete
    assert state.value == {}  # both sides gone: no state kept


def test_outer_joins_keep_the_side_they_preserve():
    left, full = primary("LEFT")[0], primary("FULL")[0]
    assert run(left, 1, change(1, 1, {"s": 5}, 1, 0)) == []
    assert run(full, 1, change(1, 1, {"s": 5}, 1, 0), change(1, 1, None, 2, 1)) == [
        (None, {"s": 5}, 1, False), (None, None, 2, True)]


def test_a_foreign_key_joins_rows_are_one_table_of_the_joins_after_it():
    """A chain after a foreign-key join: each of its result rows (a pair of rows under the left key's
    JSON text) is table 0 of the primary-key step, so `LEFT JOIN ships` follows the pair's changes,
    and `RIGHT JOIN ships` keeps a shipment whose order has no pair (yet), named by its key."""
    step, state = PrimaryKeyJoin(["LEFT"], T.StringType()), Handle()
    step.init(state)
    pair = {"m_t0": '{"oid": 1}', "m_t1": '{"name": "ann"}', "m_hside": 1}
    got = run(step, 3, change(0, '{"k0":1}', pair, 10, 0), change(1, '{"k0":1}', {"ship": "box"}, 11, 0),
              change(0, '{"k0":1}', None, 12, 1))
    assert got == [(pair, None, 10, False), (pair, {"ship": "box"}, 11, False), (None, {"ship": "box"}, 12, True)]
    right, state = PrimaryKeyJoin(["RIGHT"], T.StringType()), Handle()
    right.init(state)
    assert run(right, 3, change(1, '{"k0":7}', {"ship": "bag"}, 1, 0)) == [
        (None, {"ship": "bag"}, 1, False)]


def test_a_bucket_of_keys_joins_each_key_on_its_own_with_one_read_and_one_write_per_key():
    """Spark hands the step a bucket of join keys at once: each key's changes meet only its rows,
    its state read once and written (or removed) once per micro-batch however many changes it has."""
    step, state = primary("INNER")
    got = run(step, 7, change(0, 1, {"n": "ann"}, 10, 0), change(0, 2, {"n": "bob"}, 11, 1),
              change(1, 2, {"s": 20}, 12, 0), change(0, 2, {"n": "bo"}, 13, 2))
    assert got == [({"n": "bob"}, {"s": 20}, 12, False), ({"n": "bo"}, {"s": 20}, 13, False)]
    assert state.calls == [("get", (1,)), ("update", (1,)), ("get", (2,)), ("update", (2,))]
    got = run(step, 7, change(1, 1, {"s": 10}, 20, 1), change(1, 2, None, 21, 2))
    assert sorted(got, key=lambda r: r[2]) == [({"n": "ann"}, {"s": 10}, 20, False), ({"n": "bo"}, None, 21, True)]
    assert sorted(state.value) == [(1,), (2,)]  # key 2 keeps its left row
    state.calls.clear()
    run(step, 7, change(0, 1, None, 30, 3), change(1, 1, None, 31, 2), change(0, 2, None, 32, 4))
    assert state.value == {}
    assert state.calls == [("get", (1,)), ("remove", (1,)), ("get", (2,)), ("remove", (2,))]


def test_three_tables_join_left_deep_on_their_key():
    """`t0 JOIN t1 ... FULL JOIN t2`: a key's row is (t0 JOIN t1) FULL JOIN t2, so t0 alone shows nothing and
    t2 alone is a row with t0 and t1 NULL, as ksqlDB's QTT for table-table-table inner-full expects."""
    step, state = primary("INNER", "FULL")
    assert run(step, 0, change(0, 0, {"a": 1}, 0, 0), change(2, 0, {"c": 3}, 2, 0),
               change(1, 0, {"b": 2}, 3, 0), change(0, 0, {"a": 4}, 1000, 1), tables=3) == [
        (None, None, {"c": 3}, 2, False), ({"a": 1}, {"b": 2}, {"c": 3}, 3, False),
        ({"a": 4}, {"b": 2}, {"c": 3}, 1000, False)]
    # t1 goes: t0 drops out with it (the inner join), t2's row stays; then t2 goes too: a tombstone
    assert run(step, 0, change(1, 0, None, 1001, 1), change(2, 0, None, 1002, 1), tables=3) == [
        (None, None, {"c": 3}, 1001, False), (None, None, None, 1002, True)]
    assert run(step, 0, change(0, 0, {"a": 5}, 1003, 2), tables=3) == []  # t0 alone: no row
    assert state.value == {(0,): ('{"a": 5}', 1003, None, 1001, None, 1002)}  # per key: each table's row, time


def test_a_change_to_a_table_outside_the_row_emits_nothing():
    step, state = primary("LEFT", "INNER")
    assert run(step, 0, change(1, 0, {"b": 1}, 1, 0), change(2, 0, {"c": 1}, 2, 0), tables=3) == []
    got = run(step, 0, change(0, 0, {"a": 1}, 3, 0), change(1, 0, None, 4, 1), tables=3)
    assert got == [({"a": 1}, {"b": 1}, {"c": 1}, 3, False), ({"a": 1}, None, {"c": 1}, 4, False)]
    assert run(step, 0, change(1, 0, None, 5, 2), tables=3) == []  # deleting a row already gone


@pytest.mark.parametrize("kinds, rows, joined", [
    (("INNER", "LEFT"), ("a", "b", None), {0, 1}),
    (("INNER", "LEFT"), ("a", None, "c"), None),
    (("LEFT", "INNER"), ("a", None, "c"), {0, 2}),
    (("RIGHT", "LEFT"), (None, "b", "c"), {1, 2}),
    (("FULL", "RIGHT"), ("a", None, None), None),
    (("FULL", "FULL", "INNER"), (None, None, "c", "d"), {2, 3}),
])
def test_joined_tables_fold_left_deep(kinds, rows, joined):
    assert joined_tables(kinds, rows) == joined
