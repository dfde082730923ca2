"""The lookup join on Spark: the stream's records and the table's changes, unioned and grouped by
a hash bucket of join keys into `transformWithStateInPandas`, whose MapState holds the table's
current row per join key (typed). Per bucket and micro-batch: one state read per join key that
has stream records, the bucket's messages ordered by `rules.processing_order` and each stream
record given the row of the latest change before it with pandas (vectorised), one state write
(or removal, after a tombstone) per key the batch changed. The state lives in the state store of
the executor holding the bucket, checkpointed with the query.

Why buckets and pandas (bench/README.md, "The stream-table join with the table as keyed
state"): the Row API handed each record to Python as a Row, which cost more per record than
re-reading a small table; a call per bucket pays the API's per-call cost once for many keys.
Its columns, the join key too, travel as `engine/pandas_step` carries them (BIGINT and TIMESTAMP
as DECIMAL, DOUBLE and FLOAT as text), so that pandas changes none of them."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.streaming import StatefulProcessor

from ..columns import OFFSET, RAW_TIMESTAMP
from ..pandas_step.exact_spark import arrived, travel_type, travelling
from .rules import STREAM, TABLE

#: Hash buckets of join keys: each a call of the step per micro-batch with records.
BUCKETS = 32
#: The time of a key's stored row among its messages: before any record.
STORED = -2


class TableLookup(StatefulProcessor):
    """A bucket of join keys: each key's table row in a MapState; stream records joined in order."""

    def __init__(self, key_type: T.DataType, table_row: T.StructType, left: list[str], right: list[str],
                 keeps_unmatched: bool):
        self.key_schema = T.StructType([T.StructField("k", key_type)])
        self.table_row, self.left, self.right = table_row, left, right
        self.keeps_unmatched = keeps_unmatched

    def init(self, handle) -> None:
        self.rows = handle.getMapState("rows", self.key_schema, self.table_row)

    def handleInputRows(self, key, rows, timerValues):
        frame = pd.concat(list(rows), ignore_index=True)
        looked = frame["m_jk"].notna() & (frame["m_side"] == STREAM)
        stored = [(k, self.rows.getValue((k,))) for k in frame.loc[looked, "m_jk"].unique().tolist()]
        stored = [(k, row) for k, row in stored if row is not None]
        if stored:
            known = pd.DataFrame([row for _, row in stored], columns=self.right)
            known = known.assign(m_jk=[k for k, _ in stored], m_side=TABLE, m_rt=STORED, m_order=-1, m_tomb=False)
            frame = pd.concat([known, frame], ignore_index=True)
        frame = _ordered(frame)
        change = (frame["m_side"] == TABLE).to_numpy()
        tomb = frame["m_tomb"].fillna(False).to_numpy(dtype=bool)
        position = pd.Series(np.where(change, np.where(tomb, -1, np.arange(len(frame))), np.nan))
        frame["m_pos"] = position.groupby(frame["m_jk"].to_numpy(), dropna=False).ffill()
        records = frame[~change]
        found = records["m_pos"].fillna(-1).to_numpy(dtype=np.int64)
        if not self.keeps_unmatched:
            records, found = records[found >= 0], found[found >= 0]
        table = frame[self.right].iloc[np.where(found >= 0, found, 0)].reset_index(drop=True)
        table = table.astype(object).where(pd.Series(found >= 0), None)
        self._keep(frame[change & (frame["m_rt"] != STORED).to_numpy()])
        yield pd.concat([records[self.left].reset_index(drop=True), table], axis=1)

    def _keep(self, changes: pd.DataFrame) -> None:
        """Each key's last change of the batch: its row stored, or removed after a tombstone."""
        for values in changes.groupby("m_jk", sort=False).tail(1).to_dict("records"):
            k = _plain(values["m_jk"])
            if values["m_tomb"]:
                self.rows.removeKey((k,))
            else:
                self.rows.updateValue((k,), tuple(_typed(values[name], field.dataType)
                                                  for name, field in zip(self.right, self.table_row.fields)))

    def close(self) -> None:
        pass


def _ordered(frame: pd.DataFrame) -> pd.DataFrame:
    """`rules.processing_order` within each join key, over a whole frame at once."""
    keys = pd.DataFrame({"k": frame["m_jk"], "t": frame["m_rt"].fillna(-1), "s": -frame["m_side"],
                         "o": frame["m_order"].fillna(-1)})
    return frame.iloc[keys.sort_values(["k", "t", "s", "o"], kind="stable", na_position="first").index]\
        .reset_index(drop=True)


def _plain(value):
    return value.item() if isinstance(value, np.generic) else value


def _typed(value, data_type: T.DataType):
    """A pandas cell as the state's field type takes it (NULL for NaN, an int for an integer)."""
    value = _plain(value)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(data_type, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        return int(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


def looked_up(stream: DataFrame, table: DataFrame, stream_key, table_key, table_tombstone: str,
              table_time: str, table_offset: str, kind: str) -> DataFrame:
    """`stream` joined (INNER or LEFT) with the changelog `table` on `stream_key` = `table_key`
    (the table's record time, offset and tombstone flag in the named columns): the columns of
    both, as a Spark join of the two would give them. The step's columns are named without a
    leading underscore: transformWithStateInPandas hands a column named `__x` to pandas under a
    positional name (`_0`, `_1`, ...)."""
    key_type = stream.select(stream_key.alias("k")).schema["k"].dataType
    left = [f"l{i}" for i in range(len(stream.columns))]
    right = [f"r{i}" for i in range(len(table.columns))]
    stream_fields = [T.StructField(name, travel_type(f.dataType)) for name, f in zip(left, stream.schema.fields)]
    table_fields = [T.StructField(name, travel_type(f.dataType)) for name, f in zip(right, table.schema.fields)]

    def messages(frame, side, key, time, order, tomb, mine, other):
        return frame.select(F.lit(side).alias("m_side"), travelling(key.cast(key_type), key_type).alias("m_jk"),
                            F.unix_millis(F.col(time)).alias("m_rt"), F.col(order).cast("bigint").alias("m_order"),
                            tomb.alias("m_tomb"),
                            *[travelling(F.col(c), f.dataType).alias(n)
                              for c, f, n in zip(frame.columns, frame.schema.fields, mine)],
                            *[F.lit(None).cast(f.dataType).alias(f.name) for f in other])

    records = messages(stream, STREAM, stream_key, RAW_TIMESTAMP, OFFSET, F.lit(False), left, table_fields)
    changes = messages(table, TABLE, table_key, table_time, table_offset, F.col(table_tombstone), right, stream_fields)
    both = records.unionByName(changes).where(F.col("m_jk").isNotNull() | (F.col("m_side") == STREAM))
    step = TableLookup(travel_type(key_type), T.StructType(table_fields), left, right, kind == "LEFT")
    joined = both.withColumn("m_bucket", F.pmod(F.hash("m_jk"), F.lit(BUCKETS))).groupBy("m_bucket") \
        .transformWithStateInPandas(step, T.StructType(stream_fields + table_fields), "Append", "None")
    return joined.select(*[arrived(F.col(n), f.dataType).alias(c)
                           for n, c, f in zip(left, stream.columns, stream.schema.fields)],
                         *[arrived(F.col(n), f.dataType).alias(c)
                           for n, c, f in zip(right, table.columns, table.schema.fields)])
