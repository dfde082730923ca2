"""A SUBSCRIBE's last row per identity (a changelog's key, an aggregation's group) as keyed state:
a StatefulProcessor for `transformWithState` grouped by the identity, so the rows live on the
executors in Spark's state store, checkpointed with the query, and no driver keeps one per key.

Per identity and micro-batch the processor reads the held row once (one ValueState), applies
the batch's changes in (partition, offset) order (`last_row.replaced`: the old row -1, the new
one +1, at the change's time), emits those diffs with the bookkeeping of the record that caused
them, and writes the row back once (or clears it: the identity holds none). A dropped row (not
shown, perhaps logged) passes through as it came. This module imports nothing of the engine's
build, so that Spark's Python workers unpickle the processor without importing the planner.
"""

from __future__ import annotations

from pyspark.sql import types as T
from pyspark.sql.streaming import StatefulProcessor

from .last_row import replaced


class LastRow(StatefulProcessor):
    """Rows in and out (`names`): time, code, the `width` columns, the identity, then bookkeeping
    (`drop`, `partition`, `offset`: positions in it). Out, the code is a diff and the identity
    NULL (the driver only consolidates). `row_type`: the columns' types, the state's."""

    def __init__(self, row_type: T.StructType, width: int, names: list[str], drop: int, partition: int, offset: int):
        self.row_type, self.width, self.names = row_type, width, names
        at = 3 + width
        self.drop, self.partition, self.offset = at + drop, at + partition, at + offset

    def init(self, handle) -> None:
        self.state = handle.getValueState("row", self.row_type)

    def handleInputRows(self, key, rows, timerValues):
        from pyspark.sql import Row

        out, columns = Row(*self.names), slice(2, 2 + self.width)
        changes = []
        for row in rows:
            if row[self.drop]:
                yield out(*row)
            else:
                changes.append(row)
        changes.sort(key=lambda r: (r[self.partition] is None, r[self.partition] or 0, r[self.offset] or 0))
        stored = self.state.get()
        held = None if stored is None else tuple(stored)
        for change in changes:
            diffs, held = replaced(held, change[1], tuple(change[columns]))
            for diff, values in diffs:
                yield out(change[0], diff, *values, None, *change[3 + self.width:])
        if held is None:
            self.state.clear()
        else:
            self.state.update(held)

    def close(self) -> None:
        pass
