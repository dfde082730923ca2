"""The stateful steps of table joins, run on pandas frames as Spark runs them per key (no Spark)."""

from __future__ import annotations

import json

import pandas as pd

from kafkasql_magic.engine.build.table_join import _foreign_key_step, _primary_key_step
from kafkasql_magic.engine.build.table_lookup import _lookup_step


class State:
    """What applyInPandasWithState hands a step: the key's state, kept between calls."""

    def __init__(self):
        self.value = None

    @property
    def exists(self):
        return self.value is not None

    @property
    def get(self):
        return self.value

    def update(self, value):
        self.value = tuple(value)

    def remove(self):
        self.value = None


def change(side, key, row, at, order, lk=None):
    return {"__side": side, "__jk": key, "__row": None if row is None else json.dumps(row), "__rt": at,
            "__order": order, "__tomb": row is None, "__lk": lk}


def run(step, state, key, *changes):
    out = pd.concat(list(step((key,), iter([pd.DataFrame(list(changes))]), state)))
    return [(None if r["__l"] is None else json.loads(r["__l"]), None if r["__r"] is None else json.loads(r["__r"]),
             r["__rt"], bool(r["__tomb"])) for r in out.to_dict("records")]


def test_inner_join_emits_rows_while_both_sides_exist_then_a_tombstone():
    step, state = _primary_key_step("INNER"), State()
    assert run(step, state, 1, change(0, 1, {"n": "ann"}, 10, 0)) == []  # no match yet
    assert run(step, state, 1, change(1, 1, {"s": 5}, 20, 0), change(0, 1, {"n": "anne"}, 15, 1)) == [
        ({"n": "anne"}, {"s": 5}, 20, False)]  # merged by time: the rename came first
    assert run(step, state, 1, change(1, 1, None, 30, 1)) == [({"n": "anne"}, None, 30, True)]
    assert run(step, state, 1, change(0, 1, None, 40, 2)) == []  # nothing left to delete
    assert state.value is None  # both sides gone: no state kept


def test_outer_joins_keep_the_side_they_preserve():
    left, full = _primary_key_step("LEFT"), _primary_key_step("FULL")
    assert run(left, State(), 1, change(1, 1, {"s": 5}, 1, 0)) == []
    state = State()
    assert run(full, state, 1, change(1, 1, {"s": 5}, 1, 0), change(1, 1, None, 2, 1)) == [
        (None, {"s": 5}, 1, False), (None, None, 2, True)]


def test_foreign_key_join_follows_the_right_row_and_moved_left_rows():
    step, state = _foreign_key_step("LEFT"), State()
    got = run(step, state, 0, change(1, "eu", {"label": "Europe"}, 1, 0),
              change(0, "eu", {"id": 1}, 2, 0, lk=b"\x01"), change(0, "eu", {"id": 2}, 3, 1, lk=b"\x02"),
              change(0, "us", {"id": 1}, 4, 2, lk=b"\x01"),  # order 1 moves to us (no label yet)
              change(1, "eu", {"label": "EU"}, 5, 1))  # only order 2 still points at eu
    assert got == [({"id": 1}, {"label": "Europe"}, 2, False), ({"id": 2}, {"label": "Europe"}, 3, False),
                   ({"id": 1}, None, 4, False), ({"id": 2}, {"label": "EU"}, 5, False)]
    inner, state = _foreign_key_step("INNER"), State()
    got = run(inner, state, 0, change(0, "eu", {"id": 1}, 1, 0, lk=b"\x01"), change(1, "eu", {"label": "E"}, 2, 0),
              change(0, None, None, 3, 1, lk=b"\x01"))
    assert got == [({"id": 1}, None, 1, True), ({"id": 1}, {"label": "E"}, 2, False), (None, None, 3, True)]


def test_a_stream_record_meets_the_table_row_of_its_time():
    step, state = _lookup_step(keeps_unmatched=False), State()
    got = pd.concat(list(step(("tea",), iter([pd.DataFrame([
        change(0, "tea", {"sale": 1}, 5, 0), change(1, "tea", {"price": 2}, 1, 0),
        change(1, "tea", {"price": 3}, 10, 1), change(0, "tea", {"sale": 2}, 10, 1)])]), state)))
    assert [(json.loads(r["__l"])["sale"], json.loads(r["__r"])["price"]) for r in got.to_dict("records")] == [
        (1, 2), (2, 3)]  # a table change at the same time as a record comes first
    assert json.loads(state.value[0]) == {"price": 3}


def test_a_bucket_of_keys_joins_each_key_on_its_own():
    """Spark hands the step a bucket of join keys at once: each key's changes meet only its rows,
    and the bucket's state keeps every key still present."""
    step, state = _primary_key_step("INNER"), State()
    got = run(step, state, 7, change(0, 1, {"n": "ann"}, 10, 0), change(0, 2, {"n": "bob"}, 11, 1),
              change(1, 2, {"s": 20}, 12, 0), change(0, "1", {"n": "text key"}, 13, 2))
    assert got == [({"n": "bob"}, {"s": 20}, 12, False)]  # key 1 (and the text "1") have no match yet
    got = run(step, state, 7, change(1, 1, {"s": 10}, 20, 1), change(1, 2, None, 21, 2))
    assert sorted(got, key=lambda r: r[2]) == [({"n": "ann"}, {"s": 10}, 20, False), ({"n": "bob"}, None, 21, True)]
    assert sorted(json.loads(state.value[0])) == ['"1"', "1", "2"]  # key 2 keeps its left row
    run(step, state, 7, change(0, 1, None, 30, 3), change(1, 1, None, 31, 2), change(0, 2, None, 32, 4),
        change(0, "1", None, 33, 5))
    assert state.value is None
