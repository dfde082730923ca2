"""A push aggregation over SESSION windows, with ksqlDB's (Kafka Streams') semantics.

A session of a group key is a run of its records with no gap longer than the inactivity gap
between one record time and the next; WINDOWSTART is its first record time, WINDOWEND its last.
A record within the gap of a session extends it, a record within the gap of two sessions merges
them. Spark's session window emits a session only once it closes, so this runs per micro-batch
(`QueryPlan.tracks_time`) with the members (staged rows) of the sessions that can still change
as state (`WindowState`, kept beside a persistent query's checkpoint). Each batch re-forms the
sessions of the keys it touched from their members: a changed session's new row is emitted, and
an old session it replaced with other bounds is retracted: a tombstone (its key, WINDOWSTART and
WINDOWEND, the rest NULL), as Kafka Streams removes merged sessions from its session store.
A record more than the grace period behind stream time is late: dropped and logged. A session
whose end is more than gap + grace behind stream time can no longer change and leaves the state.
"""

from __future__ import annotations

from typing import Callable

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from ..analysis.plan import QueryPlan
from ..window.timing import timing_of
from ..columns import ERROR, ORIGIN, PARTITION
from ..aggregate.group_by_spark import aggregate_columns, finished, record_columns, stage
from ..expressions.compile_spark import Scope
from ..window.windowed_spark import NO_TIME, WindowState, expired_message


def sessionized(rows: DataFrame, keys: list[str], gap: int, prefix: str) -> DataFrame:
    """`rows` with their session's bounds as `{prefix}start` / `{prefix}end`: a new session
    starts where a record is more than `gap` after every earlier record of its key."""
    ordered = Window.partitionBy(*keys).orderBy("__t", "__order")
    before = ordered.rowsBetween(Window.unboundedPreceding, -1)
    opens = F.when(F.max("__t").over(before).isNull() | (F.col("__t") - F.max("__t").over(before) > gap), 1)
    numbered = rows.withColumn("__sid", F.sum(F.coalesce(opens, F.lit(0))).over(ordered))
    session = Window.partitionBy(*keys, "__sid")
    return (numbered.withColumn(f"{prefix}start", F.min("__t").over(session))
            .withColumn(f"{prefix}end", F.max("__t").over(session)).drop("__sid"))


def sessions(plan: QueryPlan, frame: DataFrame, scope: Scope, where_error: Column, state: WindowState,
             without_errors: Callable[[DataFrame, str], DataFrame], batch_id: int | None = None) -> DataFrame:
    """One micro-batch of a SESSION-windowed aggregation -> new session rows and retractions."""
    state.resume(frame.sparkSession, batch_id)
    timing = timing_of(plan.grouping.window)
    gap, grace = timing.size, timing.grace
    staged = stage(plan, frame, scope, where_error)
    keys = staged.keys
    batch = staged.frame.localCheckpoint()
    order = Window.partitionBy(PARTITION).orderBy("__order").rowsBetween(Window.unboundedPreceding,
                                                                         Window.currentRow)
    good = (batch.where(F.col(ERROR).isNull()).withColumn("__t", F.unix_millis("__ts"))
            .withColumn("__stream", F.greatest(F.max("__t").over(order), F.lit(state.stream_time)))
            .withColumn("__wstart", F.col("__t")).withColumn("__wend", F.col("__t"))
            .withColumn("__late", F.col("__t") + F.lit(grace) < F.col("__stream")).localCheckpoint())
    late = good.where("__late").select(expired_message(grace).alias(ERROR), *ORIGIN)
    without_errors(batch.select(ERROR, *ORIGIN).unionByName(late), "__errors_aggregate")
    members = [*keys, *[c for c in good.columns if c.startswith("__a")], PARTITION, "__order", "__rt", "__rh", "__t"]
    accepted = good.where(~F.col("__late")).select(*members, F.lit(True).alias("__new"))
    newest = good.agg(F.max("__t")).first()[0]
    stream_time = max(state.stream_time, newest if newest is not None else NO_TIME)

    touched = accepted.select(*keys).distinct()
    if state.members is None:
        prior = accepted.limit(0).withColumn("__ostart", F.col("__t")).withColumn("__oend", F.col("__t"))
        kept = prior.drop("__new")
    else:
        prior = state.members.join(touched, keys, "left_semi").withColumn("__new", F.lit(False))
        kept = state.members.join(touched, keys, "left_anti")
    regrouped = sessionized(prior.drop("__ostart", "__oend").unionByName(accepted), keys, gap,
                            "__w").localCheckpoint()
    changed = regrouped.groupBy(*keys, "__wstart", "__wend").agg(
        F.max("__new").alias("__changed"), *aggregate_columns(staged),
        *record_columns(F.struct(F.col("__rt"), F.col("__order")))).where("__changed").drop("__changed")
    # an old session whose records now make a changed session with other bounds is retracted
    record = [*keys, PARTITION, "__order"]
    replaced = (prior.join(regrouped.select(*record, "__wstart", "__wend"), record)
                .join(changed.select(*keys, "__wstart", "__wend"), [*keys, "__wstart", "__wend"], "left_semi")
                .where((F.col("__ostart") != F.col("__wstart")) | (F.col("__oend") != F.col("__wend")))
                .groupBy(*keys, F.col("__ostart").alias("__wstart"), F.col("__oend").alias("__wend"))
                .agg(*record_columns(F.col("__order"))))
    gone = replaced.select("*", *[F.lit(None).cast(changed.schema[c].dataType).alias(c)
                                  for c in changed.columns if c not in replaced.columns])
    emitted = gone.withColumn("__deleted", F.lit(True)).unionByName(changed.withColumn("__deleted", F.lit(False)))
    current = kept.unionByName(regrouped.drop("__new").withColumnRenamed("__wstart", "__ostart")
                               .withColumnRenamed("__wend", "__oend"), allowMissingColumns=True)
    open_ = current.where(F.col("__oend") + F.lit(gap + grace) >= F.lit(stream_time))
    state.advance(batch_id, stream_time, open_.select(*members, "__ostart", "__oend").localCheckpoint())
    return finished(plan, emitted, deleted=F.col("__deleted"))
