"""A sink's previous row per key as keyed state: a StatefulProcessor for `transformWithState`
grouped by the key, so the rows live on the executors in Spark's state store, checkpointed with
the query, and no driver keeps them.

Per key and micro-batch the processor reads the held row once (one ValueState, the row pickled:
Spark's Python state client hands a map or an array of a row in state to the JVM as a Java
collection its encoder refuses, EXPRESSION_ENCODING_FAILED), pairs the batch's
changes in (partition, offset) order with it (`rules.pairs`), emits each change with the row it
replaced (`BEFORE`), and writes the last row back once (or clears it: the key holds none). A
dropped row (a record that failed) passes through as it came. This module imports nothing of the
engine's build, so that Spark's Python workers unpickle the processor without the planner.
"""

from __future__ import annotations

import pickle

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.streaming import StatefulProcessor

from ..columns import DROP, OFFSET, PARTITION
from .rules import pairs

#: The columns the step adds: the key, the row a change writes (NULL: a delete), the row it replaces.
KEY, AFTER, BEFORE = "__sink_key", "__after", "__before"


def previous_rows(frame: DataFrame, keys: list[Column], after: Column) -> DataFrame:
    """`frame` with `AFTER` (`after`: the row a change writes, NULL for a delete) and `BEFORE`
    (the row its key held before it), keyed by the `keys` columns, in keyed state."""
    staged = frame.withColumn(AFTER, after).withColumn(KEY, F.to_json(F.struct(*keys)))
    schema = staged.schema
    row_type = schema[AFTER].dataType
    out = T.StructType([*schema.fields, T.StructField(BEFORE, row_type)])
    step = PreviousRow(schema.names, *(schema.names.index(c) for c in (AFTER, DROP, PARTITION, OFFSET)))
    return staged.groupBy(KEY).transformWithState(step, out, "Append", "None")


class PreviousRow(StatefulProcessor):
    """Rows in (`names`, `after`, `drop`, `partition`, `offset`: positions in them) and out with
    `BEFORE` appended."""

    def __init__(self, names: list[str], after: int, drop: int, partition: int, offset: int):
        self.names = names
        self.after, self.drop, self.partition, self.offset = after, drop, partition, offset

    def init(self, handle) -> None:
        self.state = handle.getValueState("row", T.StructType([T.StructField("row", T.BinaryType())]))

    def handleInputRows(self, key, rows, timerValues):
        from pyspark.sql import Row

        out = Row(*self.names, BEFORE)
        changes = []
        for row in rows:
            if row[self.drop]:
                yield out(*row, None)
            else:
                changes.append(row)
        changes.sort(key=lambda r: (r[self.partition] is None, r[self.partition] or 0, r[self.offset] or 0))
        stored = self.state.get()
        paired, held = pairs(None if stored is None else pickle.loads(stored[0]), [c[self.after] for c in changes])
        for change, (before, _) in zip(changes, paired):
            yield out(*change, before)
        if held is None:
            self.state.clear()
        else:
            self.state.update((pickle.dumps(held),))

    def close(self) -> None:
        pass
