"""A stream joined with a table kept as Spark state (Kafka Streams' KStream-KTable join), for a
stream-table join that feeds GROUP BY.

A plain stream-table push join re-reads the table every micro-batch (`QueryPlan.per_batch`);
an aggregation cannot run per micro-batch, so here the table streams as a changelog alongside
the stream. Both meet in `applyInPandasWithState` keyed by the join key, whose state is the
table's current row for that key: each stream record joins the row as it is when the record is
processed (changes and records merged by record time, a table change first on a tie), and
Spark's aggregation then counts the joined rows. The state is checkpointed with the query.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.streaming.state import GroupStateTimeout

from ..columns import OFFSET, RAW_TIMESTAMP

STATE_SCHEMA = "row string"


def looked_up(stream: DataFrame, table: DataFrame, stream_key, table_key, table_tombstone: str,
              table_time: str, table_offset: str, kind: str) -> DataFrame:
    """`stream` joined (INNER or LEFT) with the changelog `table` on `stream_key` = `table_key`
    (the table's record time, offset and tombstone flag in the named columns): the columns of
    both, as a Spark join of the two would give them."""
    key_type = stream.select(stream_key.alias("k")).schema["k"].dataType
    stream_row, table_row = F.struct(*[F.col(c) for c in stream.columns]), F.struct(*[F.col(c) for c in table.columns])
    stream_schema = stream.select(stream_row.alias("r")).schema["r"].dataType
    table_schema = table.select(table_row.alias("r")).schema["r"].dataType
    messages = stream.select(F.lit(0).alias("__side"), stream_key.cast(key_type).alias("__jk"),
                             F.to_json(stream_row).alias("__row"), F.unix_millis(F.col(RAW_TIMESTAMP)).alias("__rt"),
                             F.col(OFFSET).alias("__order"), F.lit(False).alias("__tomb")).unionByName(
        table.select(F.lit(1).alias("__side"), table_key.cast(key_type).alias("__jk"),
                     F.to_json(table_row).alias("__row"), F.unix_millis(F.col(table_time)).alias("__rt"),
                     F.col(table_offset).cast("bigint").alias("__order"), F.col(table_tombstone).alias("__tomb")))
    result = T.StructType([T.StructField("__l", T.StringType()), T.StructField("__r", T.StringType())])
    joined = messages.where(F.col("__jk").isNotNull() | (F.col("__side") == 0)).groupBy("__jk") \
        .applyInPandasWithState(_lookup_step(kind == "LEFT"), result, STATE_SCHEMA, "append",
                                GroupStateTimeout.NoTimeout)
    left, right = F.from_json("__l", stream_schema), F.from_json("__r", table_schema)
    return joined.select(*[left[c].alias(c) for c in stream.columns], *[right[c].alias(c) for c in table.columns])


def _lookup_step(keeps_unmatched: bool):
    def step(key, chunks, state):
        import pandas as pd

        changes = pd.concat(list(chunks)).sort_values(["__rt", "__side", "__order"], ascending=[True, False, True],
                                                      kind="stable")
        row = state.get[0] if state.exists else None
        out = []
        for change in changes.to_dict("records"):
            if change["__side"] == 1:
                row = None if change["__tomb"] else change["__row"]
            elif row is not None or keeps_unmatched:
                out.append({"__l": change["__row"], "__r": row if key[0] is not None else None})
        if row is None:
            state.remove()
        else:
            state.update((row,))
        yield pd.DataFrame(out, columns=["__l", "__r"])

    return step

