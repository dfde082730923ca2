"""The two keyed steps of a foreign-key join, run as Spark runs them (no Spark session): the
first keyed by the left table's key, the second by the foreign key."""

from __future__ import annotations

import json

import pandas as pd
from pyspark.sql import types as T

from kafkasql_magic.engine.table_join.foreign_key_spark import (MESSAGE_COLUMNS, MOVED, PUT, RIGHT, ForeignKeyMoves,
                                                                 ForeignKeyRows)


class Values:
    """A ValueState or MapState as the handle gives them, its calls counted."""

    def __init__(self):
        self.value, self.map, self.calls = None, {}, []

    def get(self):
        return self.value

    def update(self, value):
        self.value = tuple(value)

    def clear(self):
        self.value = None

    def getValue(self, key):
        self.calls.append(("get", key))
        return self.map.get(key)

    def updateValue(self, key, value):
        self.calls.append(("update", key))
        self.map[key] = tuple(value)

    def removeKey(self, key):
        self.calls.append(("remove", key))
        self.map.pop(key, None)

    def iterator(self):
        self.calls.append(("scan",))
        return iter(list(self.map.items()))


class Handle:
    def __init__(self):
        self.states = {}

    def getMapState(self, name, key_schema, value_schema=None):
        return self.states.setdefault(name, Values())

    getValueState = getMapState


def message(side, fk, pk, row, at, order):
    return {"m_side": side, "m_jk": fk, "m_pk": pk, "m_row": None if row is None else json.dumps(row),
            "m_rt": at, "m_order": order, "m_tomb": row is None}


def moves(step, *changes):
    out = pd.concat(list(step.handleInputRows((0,), iter([pd.DataFrame(list(changes))]), None)))
    return [(m["m_side"], m["m_jk"], m["m_pk"], m["m_tomb"]) for m in out[MESSAGE_COLUMNS].to_dict("records")]


class Msg(dict):
    def asDict(self):
        return dict(self)


def joined(step, fk, *messages):
    """The second step's rows as (left row, right row, time, tombstone, left key)."""
    out = step.handleInputRows((fk,), iter([Msg(m) for m in messages]), None)
    return [(None if r.m_t0 is None else json.loads(r.m_t0), None if r.m_t1 is None else json.loads(r.m_t1),
             r.m_rt, r.m_tomb, r.m_pk) for r in out]


def started(step):
    handle = Handle()
    step.init(handle)
    return step, handle.states


def test_a_left_row_moving_leaves_its_old_foreign_key_and_a_deleted_one_leaves_with_a_tombstone():
    step, states = started(ForeignKeyMoves(T.LongType()))
    assert moves(step, message(0, 5, "1", {"id": 1}, 1, 0), message(1, 5, None, {"label": "e"}, 2, 0)) == [
        (RIGHT, 5, None, False), (PUT, 5, "1", False)]  # the right change passes through
    assert moves(step, message(0, 5, "1", {"id": 1, "n": 2}, 3, 1)) == [(PUT, 5, "1", False)]  # same key: no move
    assert moves(step, message(0, 7, "1", {"id": 1}, 4, 2), message(0, None, "1", None, 5, 3)) == [
        (MOVED, 5, "1", False), (PUT, 7, "1", False), (MOVED, 7, "1", True)]
    assert states["fks"].map == {}
    assert states["fks"].calls == [("get", ("1",)), ("update", ("1",)), ("get", ("1",)), ("update", ("1",)),
                                   ("get", ("1",)), ("remove", ("1",))]  # one read and one write per key and batch
    assert moves(step, message(0, None, "2", None, 6, 4)) == []  # deleting a row never seen: nothing to leave


def test_the_foreign_key_step_follows_its_right_row_and_the_left_rows_under_it():
    step, states = started(ForeignKeyRows("LEFT"))
    assert joined(step, "eu", message(RIGHT, "eu", None, {"label": "Europe"}, 1, 0),
                  message(PUT, "eu", "1", {"id": 1}, 2, 0), message(PUT, "eu", "2", {"id": 2}, 3, 1)) == [
        ({"id": 1}, {"label": "Europe"}, 2, False, "1"), ({"id": 2}, {"label": "Europe"}, 3, False, "2")]
    assert joined(step, "eu", message(MOVED, "eu", "1", {"id": 1}, 4, 2),  # order 1 moved to another key
                  message(RIGHT, "eu", None, {"label": "EU"}, 5, 1)) == [({"id": 2}, {"label": "EU"}, 5, False, "2")]
    assert joined(step, "eu", message(RIGHT, "eu", None, None, 6, 2)) == [({"id": 2}, None, 6, False, "2")]
    inner, states = started(ForeignKeyRows("INNER"))
    got = joined(inner, "eu", message(PUT, "eu", "1", {"id": 1}, 1, 0), message(RIGHT, "eu", None, {"l": "E"}, 2, 0),
                 message(MOVED, "eu", "1", None, 3, 1))
    assert got == [({"id": 1}, None, 1, True, "1"), ({"id": 1}, {"l": "E"}, 2, False, "1"), (None, None, 3, True, "1")]
    assert states["lefts"].map == {} and states["right"].value == ('{"l": "E"}', 2)
    assert states["lefts"].calls.count(("scan",)) == 1  # the left rows are read only when the right row changes
