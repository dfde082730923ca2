"""Materialize's diff joins in keyed state: two `transformWithState` steps, no JSON of whole buckets.

`RecordKeyRows`, grouped by (input, record key), holds a changelog's row per record key with its
join key (one ValueState): a change retracts the old row under the old join key and inserts the
new one under the new join key, so a changelog joined on a value column can move its row between
join keys. Append-only inputs skip it: each record an insert.

`JoinedRows`, grouped by join key, holds each input's rows under that key with their counts
(a MapState per input, JSON row -> count): a change of one input joins the other input's rows,
each with its count, and an outer join's preserved input is NULL-extended while the other
input has no row there (changes.matched_changes). Per join key and micro-batch its rows are read
once (what that key holds, nothing of other keys) and what changed is written back; a NULL join
key keeps nothing. Rows in and out of both steps: input, join key (JSON; NULL never matches),
row (JSON), time (epoch ms), partition, offset, diff.
This module imports nothing of the engine's build, so that Spark's Python workers unpickle the
processors without importing the planner.
"""

from __future__ import annotations

from pyspark.sql import types as T
from pyspark.sql.streaming import StatefulProcessor

from .changes import changed_rows, in_order, matched_changes

#: A change of an input's multiset (both steps' output, the join step's input).
CHANGE = T.StructType([T.StructField("side", T.IntegerType()), T.StructField("jk", T.StringType()),
                       T.StructField("row", T.StringType()), T.StructField("t", T.LongType()),
                       T.StructField("p", T.IntegerType()), T.StructField("o", T.LongType()),
                       T.StructField("d", T.LongType())])
#: A change of the result: both rows (JSON; NULL: that side is missing), time and diff.
RESULT = T.StructType([T.StructField("l", T.StringType()), T.StructField("r", T.StringType()),
                       T.StructField("t", T.LongType()), T.StructField("d", T.LongType())])
_TEXT, _COUNT = T.StructType([T.StructField("v", T.StringType())]), T.StructType([T.StructField("n", T.LongType())])


def _in_order(rows, diff: bool = False):
    """A group's rows in the order they happened (changes.in_order); `diff`: a retraction before
    an insert of one record (a changelog's update under one join key)."""
    offset = (lambda r: (r["o"] or 0, r["d"])) if diff else (lambda r: r["o"] or 0)
    return in_order(rows, lambda r: r["side"], lambda r: r["p"], offset, lambda r: r["t"])


class RecordKeyRows(StatefulProcessor):
    """Rows in: side, jk, row, t, p, o, pk (record key), del (a delete); out: CHANGE."""

    def init(self, handle) -> None:
        self.state = handle.getValueState("held", T.StructType([T.StructField("jk", T.StringType()),
                                                                 T.StructField("row", T.StringType())]))

    def handleInputRows(self, key, rows, timerValues):
        from pyspark.sql import Row

        out = Row(*CHANGE.names)
        stored = self.state.get()
        held = None if stored is None else tuple(stored)
        for r in _in_order(rows):
            changes, held = changed_rows(held, None if r["del"] else (r["jk"], r["row"]))
            for (jk, row), diff in changes:
                yield out(r["side"], jk, row, r["t"], r["p"], r["o"], diff)
        if held is None:
            self.state.clear()
        else:
            self.state.update(held)

    def close(self) -> None:
        pass


class JoinedRows(StatefulProcessor):
    """Rows in: CHANGE, grouped by jk; out: RESULT. `preserved`: whether the (left, right)
    input's rows are kept unmatched (LEFT, RIGHT, FULL)."""

    def __init__(self, preserved: tuple[bool, bool]):
        self.preserved = preserved

    def init(self, handle) -> None:
        self.rows = [handle.getMapState(f"rows{side}", _TEXT, _COUNT) for side in (0, 1)]

    def handleInputRows(self, key, rows, timerValues):
        from pyspark.sql import Row

        out, changes = Row(*RESULT.names), [(r["side"], r["row"], r["d"], r["t"]) for r in _in_order(rows, diff=True)]
        if key[0] is None:  # a NULL join key matches nothing, and is kept nowhere
            held = [{}, {}]
        else:
            held = [{row: n for (row,), (n,) in self.rows[side].iterator()} for side in (0, 1)]
        before = [dict(side) for side in held]
        for (left, right, at), diff in matched_changes(held, changes, self.preserved).items():
            if diff:
                yield out(left, right, at, diff)
        if key[0] is None:
            return
        for side, state in enumerate(self.rows):
            for row in before[side].keys() - held[side].keys():
                state.removeKey((row,))
            for row, count in held[side].items():
                if before[side].get(row) != count:
                    state.updateValue((row,), (count,))

    def close(self) -> None:
        pass
