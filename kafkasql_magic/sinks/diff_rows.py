"""A relation whose changes are diffs (a view that joins: `mz_timestamp`, `mz_diff`, then its
columns) as the rows a Materialize sink writes.

ENVELOPE UPSERT writes, per key and micro-batch, what the key holds after the batch: a row whose
diffs add up to more than zero (the latest of them), else a delete when a row of the key went;
so an update (the old row retracted, the new one inserted) is one record, as Materialize writes
it. ENVELOPE DEBEZIUM writes each change as Materialize pairs them: the changes consolidated,
then per sink key and time a retraction and an insertion make one update (`before` and `after`),
the unpaired ones a delete (no `after`) or an insert (no `before`). Without a key nothing pairs
(Materialize then keys by the whole row: an update is a delete and an insert).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from ..engine.columns import RAW_TIMESTAMP, TOMBSTONE

#: The Debezium pairs' columns: the row a change retracts and the row it inserts (NULL: none).
BEFORE, AFTER = "__before", "__after"


def debezium_pairs(rows: DataFrame, diff: Column, time: Column, row: Column, key: Column | None) -> DataFrame:
    """Each change of the batch as (BEFORE, AFTER, RAW_TIMESTAMP), one record each: equal rows at
    one time summed first, then per `key` (a struct; None: no key) and time the n-th retracted row
    (in the rows' text order, as Materialize zips its sorted rows) paired with the n-th inserted
    one. A key's records come out in one Spark partition (so one writer task), in time order."""
    text = F.to_json(row)
    changes = (rows.select(time.alias("__t"), diff.alias("__d"), row.alias("__row"), text.alias("__text"),
                           (F.to_json(key) if key is not None else text).alias("__k"), F.col(RAW_TIMESTAMP))
               .repartition("__k")  # one shuffle: every step below groups by __k and more
               .groupBy("__k", "__t", "__text")
               .agg(F.first("__row").alias("__row"), F.sum("__d").alias("__net"),
                    F.max(RAW_TIMESTAMP).alias(RAW_TIMESTAMP))
               .where(F.col("__net") != 0)
               .withColumn("__copy", F.explode(F.sequence(F.lit(1), F.abs(F.col("__net"))))))
    in_order = Window.partitionBy("__k", "__t", F.col("__net") > 0).orderBy("__text", "__copy")
    ranked = changes.withColumn("__pair", F.row_number().over(in_order))
    paired = ranked.groupBy("__k", "__t", "__pair").agg(
        F.first(F.when(F.col("__net") < 0, F.col("__row")), ignorenulls=True).alias(BEFORE),
        F.first(F.when(F.col("__net") > 0, F.col("__row")), ignorenulls=True).alias(AFTER),
        F.max(RAW_TIMESTAMP).alias(RAW_TIMESTAMP))
    return paired.sortWithinPartitions("__t", "__k", "__pair").select(BEFORE, AFTER, RAW_TIMESTAMP)


def upserts(rows: DataFrame, diff: Column, time: Column, keys: list[str], values: list[str]) -> DataFrame:
    """Per key (`keys`: column names of `rows`), the one row the key holds after the batch, or a
    tombstone carrying the key when its rows went. `values` are the other columns."""
    net = (rows.groupBy(*keys, *values)
           .agg(F.sum(diff).alias("__net"), F.max(time).alias("__at"), F.max(RAW_TIMESTAMP).alias(RAW_TIMESTAMP))
           .where(F.col("__net") != 0))
    latest = Window.partitionBy(*keys).orderBy((F.col("__net") > 0).desc(), F.col("__at").desc())
    chosen = net.withColumn("__rank", F.row_number().over(latest)).where(F.col("__rank") == 1)
    return chosen.withColumn(TOMBSTONE, F.col("__net") < 0).drop("__net", "__at", "__rank")
