"""A relation whose changes are diffs (a view that joins: `mz_timestamp`, `mz_diff`, then its
columns) as the rows a Materialize sink writes.

A sink writes rows with a TOMBSTONE flag: a retraction (-1) is a row that goes, an insert (+1)
one that comes, and a diff of n is n such rows. ENVELOPE UPSERT writes, per key and micro-batch,
what the key holds after the batch: a row whose diffs add up to more than zero (the latest of
them), else a delete when a row of the key went; so an update (the old row retracted, the new
one inserted) is one record, as Materialize writes it.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from ..engine.columns import RAW_TIMESTAMP, TOMBSTONE


def expanded(rows: DataFrame, diff: Column) -> DataFrame:
    """Each change as |diff| rows, a retraction flagged as a tombstone (its columns kept)."""
    copies = F.explode(F.sequence(F.lit(1), F.abs(diff)))
    return rows.where(diff != 0).withColumn("__copy", copies).withColumn(TOMBSTONE, diff < 0).drop("__copy")


def upserts(rows: DataFrame, diff: Column, time: Column, keys: list[str], values: list[str]) -> DataFrame:
    """Per key (`keys`: column names of `rows`), the one row the key holds after the batch, or a
    tombstone carrying the key when its rows went. `values` are the other columns."""
    net = (rows.groupBy(*keys, *values)
           .agg(F.sum(diff).alias("__net"), F.max(time).alias("__at"), F.max(RAW_TIMESTAMP).alias(RAW_TIMESTAMP))
           .where(F.col("__net") != 0))
    latest = Window.partitionBy(*keys).orderBy((F.col("__net") > 0).desc(), F.col("__at").desc())
    chosen = net.withColumn("__rank", F.row_number().over(latest)).where(F.col("__rank") == 1)
    return chosen.withColumn(TOMBSTONE, F.col("__net") < 0).drop("__net", "__at", "__rank")
