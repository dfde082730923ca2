"""The stateful steps of table-table joins on Spark (`build_spark.py` builds the frames around
them). This module imports nothing of the engine's build, so that Spark's Python workers unpickle
a step without importing the planner.

Primary keys (`PrimaryKeyJoin`): `transformWithStateInPandas` over hash buckets of join keys
(bench/README.md, "Keyed state": a call per bucket pays the API's cost once for many keys), a
MapState per join key holding each table's latest row (its columns and headers as JSON text) and
time. Per bucket and micro-batch: one state read per join key the batch changes, its changes
applied in order (`rows.key_changes`), one state write (or removal, when no table has a row
left) per key: the cost follows the changes, not the tables' history.

A chain after a foreign-key join runs this step too, with the foreign-key join's rows as its
first table (`build_spark.py`; a foreign-key join of two tables: `foreign_key_spark.py`)."""

from __future__ import annotations

import pandas as pd
from pyspark.sql import types as T
from pyspark.sql.streaming import StatefulProcessor

from .rows import key_changes, merged

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
