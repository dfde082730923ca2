"""The stateful steps of table-table joins on Spark (`build_spark.py` builds the frames around
them). This module imports nothing of the engine's build, so that Spark's Python workers unpickle
a step without importing the planner.

Primary keys (`PrimaryKeyJoin`): `transformWithStateInPandas` over hash buckets of join keys
(bench/README.md, "Keyed state": a call per bucket pays the API's cost once for many keys), a
MapState per join key holding each table's latest row (its columns and headers as JSON text) and
time. Per bucket and micro-batch: one state read per join key the batch changes, its changes
applied in order (`rows.key_changes`), one state write (or removal, when no table has a row
left) per key: the cost follows the changes, not the tables' history.

A chain after a foreign-key join (`foreign_key_step`): one `applyInPandasWithState` group
holding every left row (with its foreign key), every right row and the later tables' rows, as
JSON (a foreign-key join of two tables: `foreign_key_spark.py`)."""

from __future__ import annotations

import json
from decimal import Decimal

import pandas as pd
from pyspark.sql import types as T
from pyspark.sql.streaming import StatefulProcessor

from .rows import joined_tables, key_changes, later, merged

#: What a step emits besides each table's row as JSON (`row_columns`; NULL: no row): the
#: record time, which table caused the change (its headers go to the output record), whether
#: it is a tombstone, and the join key. Named without a leading underscore:
#: transformWithStateInPandas hands a column named `__x` to pandas under a positional name.
RECORD_COLUMNS = ["m_rt", "m_hside", "m_tomb", "m_jk"]
#: The columns of a change handed to `PrimaryKeyJoin`: its join key, table, row as JSON (with
#: its headers), record time, offset and whether it is a tombstone.
CHANGE_COLUMNS = ["m_jk", "m_side", "m_row", "m_rt", "m_order", "m_tomb"]
#: Each output row's place in its step's output of a micro-batch (`in_order`): one key's rows come
#: from one call, in the order its changes made them (what an aggregation over the join counts
#: in order); the call's group in the high bits keeps two calls' rows apart. And the time of the
#: change that made the row: an aggregation over the join takes the rows of several keys in
#: that time's order, then in their place's.
ORDER, CAUSE_TIME = "m_seq", "m_ct"
#: Join keys are spread over this many groups, each a call of the step per micro-batch with
#: changes; part of the state's layout (sinks/layout.py), so never changed for a running query.
BUCKETS = 64
FOREIGN_STATE = "tables string"


def row_columns(tables: int) -> list[str]:
    """A step's output columns holding each table's row."""
    return [f"m_t{i}" for i in range(tables)]


class PrimaryKeyJoin(StatefulProcessor):
    """A bucket of join keys of tables joined on their primary keys by `kinds` (one per join)."""

    def __init__(self, kinds, key_type: T.DataType):
        self.kinds, self.tables = list(kinds), len(kinds) + 1
        self.key_schema = T.StructType([T.StructField("k", key_type)])
        self.value_schema = T.StructType([field for i in range(self.tables) for field in (
            T.StructField(f"r{i}", T.StringType()), T.StructField(f"t{i}", T.LongType()))])

    def init(self, handle) -> None:
        self.rows = handle.getMapState("rows", self.key_schema, self.value_schema)

    def handleInputRows(self, key, rows, timerValues):
        frame = pd.concat(list(rows), ignore_index=True)
        by_key: dict = {}
        for jk, side, row, at, order, tomb in zip(*(frame[c].tolist() for c in CHANGE_COLUMNS)):
            by_key.setdefault(jk, []).append((int(side), row, int(at), int(order), bool(tomb)))
        out = []
        for jk, changes in by_key.items():
            stored = self.rows.getValue((jk,))
            kept = list(stored) if stored is not None else [None] * (2 * self.tables)
            current, times = kept[0::2], kept[1::2]
            for side, row, cause, _, tomb in merged(changes, 0, 3, 2):
                for joined, at, side_, tomb_ in key_changes(self.kinds, current, times, [(side, row, cause, tomb)]):
                    out.append((*joined, at, side_, tomb_, jk, cause))
            if any(r is not None for r in current):
                self.rows.updateValue((jk,), tuple(v for pair in zip(current, times) for v in pair))
            elif stored is not None:
                self.rows.removeKey((jk,))
        yield in_order(pd.DataFrame(out, columns=[*row_columns(self.tables), *RECORD_COLUMNS, CAUSE_TIME]), key[0])

    def close(self) -> None:
        pass


def in_order(frame: pd.DataFrame, group: int, column: str = ORDER) -> pd.DataFrame:
    """`frame`, a call's output for `group` (a hash bucket), with each row's place (`ORDER`)."""
    return frame.assign(**{column: [(int(group) << 32) + i for i in range(len(frame))]})


def _emitted(key, rows, time, side, tomb=False):
    return {**dict(zip(row_columns(len(rows)), rows)), "m_rt": time, "m_hside": side, "m_tomb": tomb, "m_jk": key}


def foreign_key_step(kind: str, *more: str):
    """All the changes (one group) -> the changed result rows of a foreign-key join (`kind`) and
    the joins on the left table's primary key after it (`more`). The state holds every left row
    with its foreign key (and its primary key as JSON text), every right row, and each later
    table's rows by primary key. A left or right change emits each row it touches, or a
    tombstone where the row is gone or never was (Kafka Streams' foreign-key join cannot tell);
    a later table's change emits as a primary-key join does. Each row carries its primary key
    (`m_pk`): a later RIGHT or FULL join's row may have no left row to name it."""
    kinds = (kind, *more)
    tables = len(kinds) + 1

    def step(key, chunks, state):
        stored = json.loads(state.get[0]) if state.exists else {"lefts": {}, "rights": {}}
        # left key -> [fk, row, time, primary key]; right key -> [row, time]; later tables: primary key -> [row, time]
        lefts, rights = stored["lefts"], stored["rights"]
        tables_after = [stored.setdefault(f"t{i}", {}) for i in range(2, tables)]
        pointing: dict[str, set] = {}
        owners: dict[str, str] = {}  # a left row's primary key -> its left key
        for left_key, (fk, _, _, *pk) in lefts.items():
            pointing.setdefault(fk, set()).add(left_key)
            owners.update({pk[0]: left_key} if pk else {})

        def result(pk, left_key=None):
            """(the tables in the result row of primary key `pk` (of left row `left_key`), or None;
            each table's row; each table's time)"""
            left = lefts.get(owners.get(pk) if left_key is None else left_key)
            fk, row, at = left[:3] if left is not None else (None, None, None)
            found = [rights.get(fk, [None, None]) if left is not None else [None, None],
                     *(t.get(pk, [None, None]) for t in tables_after)]
            rows, times = [row, *(f[0] for f in found)], [at, *(f[1] for f in found)]
            return joined_tables(kinds, rows), rows, times

        def row_of(pk, joined, rows, times, at, side):  # `at`: the time of the change that made it
            return {**_emitted(None, [rows[i] if i in joined else None for i in range(tables)],
                               later(at, *(times[i] for i in joined)), side), "m_pk": pk, CAUSE_TIME: at}

        def gone(pk, rows, change, times):
            side = change["m_side"]
            return {**_emitted(None, [change["m_row"] if i == side else rows[i] for i in range(tables)],
                               later(change["m_rt"], times[0] if side else None), side, tomb=True), "m_pk": pk,
                    CAUSE_TIME: change["m_rt"]}

        out = []
        for change in merged(pd.concat(list(chunks)).to_dict("records"), "m_side", "m_order", "m_rt"):
            side, at = change["m_side"], change["m_rt"]
            if side >= 2:  # a later table's row, keyed like the left table
                pk = change["m_pk"]
                before = result(pk)[0]
                if change["m_tomb"]:
                    tables_after[side - 2].pop(pk, None)
                else:
                    tables_after[side - 2][pk] = [change["m_row"], at]
                joined, rows, times = result(pk)
                if joined is not None and (side in joined or side in (before or ())):
                    out.append(row_of(pk, joined, rows, times, at, side))
                elif joined is None and before is not None:
                    out.append(gone(pk, rows, change, times))
                continue
            fk = _loose_text(change["m_jk"])
            if side == 1:
                if change["m_tomb"]:
                    rights.pop(fk, None)
                else:
                    rights[fk] = [change["m_row"], at]
                for left_key in sorted(pointing.get(fk, ())):
                    pk = lefts[left_key][3] if len(lefts[left_key]) > 3 else None
                    joined, rows, times = result(pk, left_key)
                    out.append(gone(pk, rows, change, times) if joined is None
                               else row_of(pk, joined, rows, times, at, 1))
                continue
            left_key, pk = _text(change["m_lk"]), change["m_pk"]
            old = lefts.pop(left_key, None)
            if old is not None:
                pointing.get(old[0], set()).discard(left_key)
                owners.pop(old[3] if len(old) > 3 else None, None)
            if change["m_tomb"]:
                if old is not None:  # the deleted row's last result goes (a later RIGHT join's row stays)
                    joined, rows, times = result(pk)
                    out.append(gone(pk, [None] * tables, change, [None] * tables) if joined is None
                               else row_of(pk, joined, rows, times, at, 0))
                continue
            lefts[left_key] = [fk, change["m_row"], at, pk]
            pointing.setdefault(fk, set()).add(left_key)
            owners[pk] = left_key
            joined, rows, times = result(pk)
            out.append(gone(pk, [None] * tables, change, [None] * tables) if joined is None
                       else row_of(pk, joined, rows, times, at, 0))
        state.update((json.dumps(stored),))
        yield in_order(pd.DataFrame(out, columns=[*row_columns(tables), *RECORD_COLUMNS, "m_pk", CAUSE_TIME]), 0)

    return step


def _loose_text(value) -> str:
    """`_text` of a value from a pandas column that may hold NULLs: a BIGINT join key comes as a
    `Decimal` (`engine/pandas_step`), written as the integer it is; a float column's NaN is NULL."""
    if isinstance(value, Decimal) and value.as_tuple().exponent == 0:
        value = int(value)
    elif isinstance(value, float):
        value = None if value != value else int(value) if value.is_integer() else value
    return _text(value)


def _text(value) -> str:
    """A key as text for the state's JSON: bytes in base64, anything else as JSON."""
    import base64

    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode()
    return json.dumps(value, default=str, sort_keys=True)
