"""The lookup join on Spark: the stream's records and the table's changes, unioned and grouped
by join key into `transformWithState` (Row API), whose ValueState holds the table's current row
for the key (typed, as a struct). Per key and micro-batch: one state read, the key's messages in
`rules.processing_order`, one state write (or clear, after a tombstone). The state lives in the
state store of the executor holding the key, checkpointed with the query.

bench/README.md ("Keyed state: what a state call costs") measured the Row API at one state call
per key and batch as the cheapest per-key design; records cross to Python as Rows."""

from __future__ import annotations

from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.streaming import StatefulProcessor

from ..columns import OFFSET, RAW_TIMESTAMP
from .rules import STREAM, TABLE, joins, processing_order


class TableLookup(StatefulProcessor):
    """One join key's table row as state; its stream records joined with it in order."""

    def __init__(self, table_row: T.StructType, keeps_unmatched: bool):
        self.state_schema = T.StructType([T.StructField("row", table_row)])
        self.keeps_unmatched = keeps_unmatched

    def init(self, handle) -> None:
        self.rows = handle.getValueState("row", self.state_schema)

    def handleInputRows(self, key, rows, timerValues):
        messages = sorted(rows, key=lambda m: processing_order(m["__rt"], m["__side"], m["__order"]))
        keyed = key[0] is not None
        stored = self.rows.get() if keyed else None
        row, changed = (stored[0] if stored is not None else None), False
        for message in messages:
            if message["__side"] == TABLE:
                row, changed = (None if message["__tomb"] else message["__r"]), True
            elif joins(row is not None, self.keeps_unmatched):
                yield Row(__l=message["__l"], __r=row)
        if changed and keyed:
            if row is None:
                self.rows.clear()
            else:
                self.rows.update((row,))

    def close(self) -> None:
        pass


def looked_up(stream: DataFrame, table: DataFrame, stream_key, table_key, table_tombstone: str,
              table_time: str, table_offset: str, kind: str) -> DataFrame:
    """`stream` joined (INNER or LEFT) with the changelog `table` on `stream_key` = `table_key`
    (the table's record time, offset and tombstone flag in the named columns): the columns of
    both, as a Spark join of the two would give them."""
    key_type = stream.select(stream_key.alias("k")).schema["k"].dataType
    stream_row, table_row = F.struct(*[F.col(c) for c in stream.columns]), F.struct(*[F.col(c) for c in table.columns])
    stream_schema = stream.select(stream_row.alias("r")).schema["r"].dataType
    table_schema = table.select(table_row.alias("r")).schema["r"].dataType
    records = stream.select(F.lit(STREAM).alias("__side"), stream_key.cast(key_type).alias("__jk"),
                            F.unix_millis(F.col(RAW_TIMESTAMP)).alias("__rt"), F.col(OFFSET).alias("__order"),
                            F.lit(False).alias("__tomb"), stream_row.alias("__l"),
                            F.lit(None).cast(table_schema).alias("__r"))
    changes = table.select(F.lit(TABLE).alias("__side"), table_key.cast(key_type).alias("__jk"),
                           F.unix_millis(F.col(table_time)).alias("__rt"),
                           F.col(table_offset).cast("bigint").alias("__order"), F.col(table_tombstone).alias("__tomb"),
                           F.lit(None).cast(stream_schema).alias("__l"), table_row.alias("__r"))
    messages = records.unionByName(changes).where(F.col("__jk").isNotNull() | (F.col("__side") == STREAM))
    result = T.StructType([T.StructField("__l", stream_schema), T.StructField("__r", table_schema)])
    joined = messages.groupBy("__jk").transformWithState(TableLookup(table_schema, kind == "LEFT"), result,
                                                         "Append", "None")
    return joined.select(*[F.col("__l")[c].alias(c) for c in stream.columns],
                         *[F.col("__r")[c].alias(c) for c in table.columns])
