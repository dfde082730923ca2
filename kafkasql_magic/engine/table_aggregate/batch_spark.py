"""Aggregating a TABLE with retractions (Kafka Streams' KGroupedTable adder and subtractor) per
micro-batch, for aggregate functions that cannot take a row back (`rules.keyed` is false: a
Materialize aggregate such as string_agg; the others run in keyed state, `build_spark.py`).

A table's changelog holds several versions of one row; only the latest counts. Spark's
streaming aggregation has no subtractor, so such an aggregation runs per micro-batch
(`QueryPlan.per_batch`): `TableState` keeps the latest staged row per table key (its group
keys and aggregate arguments) between batches; each batch replaces the rows of the keys it
carries (a tombstone, a row the WHERE clause now rejects or a NULL group key removes one),
and only the groups those rows left or joined are aggregated again, from their current
members, with the same aggregate table as a stream's aggregation. A group left with no
member comes out with the aggregates of no rows (a count of 0), as Kafka Streams' subtractor
leaves it in ksqlDB, and HAVING decides over them; in a dialect that does not keep such groups
(Materialize) it is a tombstone (its key columns, the rest NULL): the changelog a sink writes.
A group's output record has the time and headers of the newest change that touched it.
"""

from __future__ import annotations

from typing import Callable

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from ..analysis.plan import QueryPlan
from ..aggregate.group_by_spark import aggregate_columns, empty_aggregates, finished, record_columns
from .batch_store_spark import BatchState, BatchStore
from ..expressions.compile_spark import Scope
from ..columns import ERROR
from .build_spark import staged_versions


class TableState(BatchState):
    """The latest staged row per table key, carried from one micro-batch to the next (and,
    with a `store`, kept beside a persistent query's checkpoint for its restarts)."""

    def __init__(self, store: BatchStore | None = None):
        super().__init__(store)
        self.rows: DataFrame | None = None

    def restore(self, facts: dict, rows: DataFrame | None) -> None:
        self.rows = rows


def retracted(plan: QueryPlan, frame: DataFrame, scope: Scope, state: TableState,
              without_errors: Callable[[DataFrame, str], DataFrame], batch_id: int | None = None) -> DataFrame:
    """One micro-batch (`batch_id`, as Spark numbers them) of a table's changelog -> the changed
    groups' new rows (and tombstones)."""
    state.resume(frame.sparkSession, batch_id)
    # a tombstone or a row the WHERE clause rejects removes its key's row, NULL group key or not
    staged = staged_versions(plan, frame, scope)
    batch = staged.frame.localCheckpoint()
    without_errors(batch, "__errors_aggregate")
    changes = batch.where(F.col("__FAILED").isNull() & F.col("__k").isNotNull())
    newest = Window.partitionBy("__k").orderBy(F.col("__order").desc())
    changes = changes.withColumn("__rank", F.row_number().over(newest)).where(F.col("__rank") == 1)
    members = [c for c in changes.columns if c == "__k" or c.startswith(("__g", "__a")) or c == "__order"]
    joined = changes.where(F.col("__present") & F.col(ERROR).isNull())
    joining = joined.select(*members)
    leaving_keys = changes.select("__k")
    if state.rows is None:
        leaving, kept = joining.limit(0), joining.limit(0)
    else:
        leaving = state.rows.join(leaving_keys, "__k", "left_semi")
        kept = state.rows.join(leaving_keys, "__k", "left_anti")
    state.rows = kept.unionByName(joining).localCheckpoint()
    state.keep(batch_id, {}, state.rows)
    # each changed group's output record: the time and headers of the changes that touched it
    change = changes.select("__k", "__rt", "__rh", F.col("__order").alias("__corder"))
    touched = leaving.select("__k", *staged.keys).join(change, "__k").drop("__k").unionByName(
        joined.select(*staged.keys, "__rt", "__rh", F.col("__order").alias("__corder")))
    record = touched.groupBy(*staged.keys).agg(*record_columns(F.col("__corder")))
    affected = record.select(*staged.keys)
    current = state.rows.join(affected, staged.keys, "left_semi")
    grouped = current.groupBy(*staged.keys).agg(*aggregate_columns(staged))
    emptied = affected.join(grouped.select(*staged.keys), staged.keys, "left_anti")
    types_ = {c: grouped.schema[c].dataType for c in grouped.columns if c not in staged.keys}
    kept = plan.dialect.keeps_emptied_groups
    emptied = emptied.select("*", *(empty_aggregates(staged, types_) if kept
                                    else [F.lit(None).cast(t).alias(c) for c, t in types_.items()]))
    changed = grouped.withColumn("__deleted", F.lit(False)).unionByName(
        emptied.withColumn("__deleted", F.lit(not kept))).join(record, staged.keys)
    return finished(plan, changed, deleted=F.col("__deleted"))


