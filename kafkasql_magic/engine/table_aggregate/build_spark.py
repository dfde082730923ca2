"""An aggregation over a TABLE's changelog in Spark's keyed state (`rules.keyed` says when): the
changes staged as for a stream's aggregation (engine/aggregate/group_by_spark.py's `stage`: group keys
`__g{i}`, aggregate arguments `__a{i}_{n}`), then two `transformWithState` steps in one streaming
query, `keyed_spark.TableRows` grouped by the table's key and `keyed_spark.GroupChanges` by the
group key; the per-batch path's `finished` applies SELECT and HAVING to what they emit. A join
of tables is a table too: its result rows' versions, named by the join's result key and in the
order the join made them (`Rows`), are counted as a table's changes (Kafka Streams' groupBy of
the joined KTable).

Which change counts (as `batch_spark.py` decides it too): a tombstone, a row the WHERE clause
rejects or whose group key is NULL retracts its key's row; a change whose expressions fail is
logged and changes nothing. A group's output record has the latest time among its changes so
far and the headers of the change that made it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..analysis.plan import QueryPlan
from ..aggregate.group_by_spark import aggregate_columns, computing_error, finished, stage
from ..expressions.compile_spark import Compiler, Scope
from ..columns import ERROR, OFFSET, PARTITION, RAW_KEY, TOMBSTONE
from .keyed_spark import SIGN, STEP_ORDER, GroupChanges, TableRows
from ..state_key.flat_spark import flat_keys


@dataclass(frozen=True)
class Rows:
    """The columns of a changelog that name a table's row and order its changes (by `first`,
    then by `order`): a table read from its topic has its record keys, partitions and offsets."""

    key: str = RAW_KEY
    order: str = OFFSET
    first: str = PARTITION


def staged_versions(plan: QueryPlan, frame: DataFrame, scope: Scope, rows: Rows = Rows()):
    """Each change of the table staged as a row version: its key `__k`, whether it counts
    (`__present`: not a tombstone, and the WHERE clause holds) and its group keys and aggregate
    arguments. ERROR holds what to log: a version that does not count logs only its failed
    expressions, one that counts its NULL group key too."""
    stmt = plan.statement
    present = ~F.col(TOMBSTONE)  # a NULL value (ENVELOPE DEBEZIUM: a NULL `after`) deletes
    where_error = F.lit(None).cast("string")
    if stmt.where is not None:
        where = Compiler(scope)
        present = present & F.coalesce(where.compile(stmt.where), F.lit(False))
        if where.failures:
            where_error = computing_error(where, stmt.where, "WHERE", None)
    counts = F.when(~F.col(TOMBSTONE), present).otherwise(F.lit(False)).alias("__present")
    first = [F.col(rows.first)] if rows.first != PARTITION else []
    staged = stage(plan, frame, scope, where_error, extra=[F.col(rows.key).alias("__k"), *first, counts],
                   order=F.col(rows.order))
    logged = staged.frame.withColumn(ERROR, F.when(F.col("__present"), F.col(ERROR)).otherwise(F.col("__FAILED")))
    return replace(staged, frame=logged)


def table_aggregated(plan: QueryPlan, frame: DataFrame, scope: Scope, without_errors: Callable[..., DataFrame],
                     each_change: bool = False, rows: Rows = Rows()) -> DataFrame:
    """The changelog `frame` of a table (or of a join of tables: `rows` says how its rows are
    named and ordered) -> the changed groups' rows (and tombstones: `TOMBSTONE`). `each_change`:
    a row per change of a group (ksqlDB's record cache off), else per group and micro-batch."""
    staged = staged_versions(plan, frame, scope, rows)
    logged = staged.frame
    changes = without_errors(logged, "__errors_aggregate", keep=True) \
        .where(F.col("__FAILED").isNull() & F.col("__k").isNotNull()) \
        .withColumn("__present", F.col("__present") & F.col(ERROR).isNull())
    if rows.first != PARTITION:  # past the processing log: the steps sort by it, and a sink writes in its order
        changes = changes.withColumn(PARTITION, F.col(rows.first))
    results = changes.groupBy(*staged.keys).agg(*aggregate_columns(staged)).schema  # the per-batch path's types
    specs = [(call.name, [f"__a{i}_{n}" for n in range(len(staged.builders[i][1]))],
              _timeless(staged.builders[i][1][0]) if staged.builders[i][1] else None,
              T.StructField(f"__agg{i}", _timeless(results[f"__agg{i}"].dataType), results[f"__agg{i}"].nullable))
             for i, call in enumerate(plan.grouping.calls)]
    arguments = list(dict.fromkeys(c for _, columns, _, _ in specs for c in columns))
    for c in arguments:  # Spark's keyed state holds no TIME: a TIME argument goes through as microseconds
        if isinstance(changes.schema[c].dataType, T.TimeType):
            changes = changes.withColumn(c, F.time_to_micros(F.col(c)))
    inputs, flat = flat_keys(changes.select("__k", "__present", *staged.keys, *arguments, PARTITION, "__order", "__rt",
                                            "__rh"), staged.keys)
    schema = inputs.schema
    version = T.StructType([schema[c] for c in (*flat.keys, *arguments)])
    moved = T.StructType([*version.fields, T.StructField(SIGN, T.IntegerType()), T.StructField(STEP_ORDER, T.LongType()),
                          schema[PARTITION], schema["__rt"], schema["__rh"]])
    at = inputs.columns.index
    rows = TableRows(version, len(flat.keys), [at(c) for c in version.fieldNames()], at("__present"), at(PARTITION),
                     at("__order"), at("__rt"), at("__rh"), moved.fieldNames(), each_change)
    steps = inputs.groupBy("__k").transformWithState(rows, moved, "Update", "None")
    names = moved.fieldNames()
    out = T.StructType([schema[k] for k in flat.keys] + [field for *_, field in specs]
                       + [T.StructField("__n", T.LongType()), schema["__rt"], schema["__rh"], schema[PARTITION],
                          T.StructField(OFFSET, T.LongType()), T.StructField("__deleted", T.BooleanType())])
    groups = GroupChanges([(name, [names.index(c) for c in columns], arg_type, field.dataType)
                           for name, columns, arg_type, field in specs],
                          names.index(SIGN), names.index(STEP_ORDER), names.index(PARTITION), names.index("__rt"),
                          names.index("__rh"), out.fieldNames(), each_change, plan.dialect.keeps_emptied_groups)
    grouped = flat.restore(steps.groupBy(*flat.keys).transformWithState(groups, out, "Update", "None"))
    for i in range(len(plan.grouping.calls)):
        grouped = grouped.withColumn(f"__agg{i}", _with_times(F.col(f"__agg{i}"), results[f"__agg{i}"].dataType))
    return finished(plan, grouped, deleted=F.col("__deleted"))


def _timeless(dtype: T.DataType) -> T.DataType:
    """`dtype` with TIME (or a list of TIME) as microseconds of the day: what the state holds."""
    if isinstance(dtype, T.TimeType):
        return T.LongType()
    if isinstance(dtype, T.ArrayType) and isinstance(dtype.elementType, T.TimeType):
        return T.ArrayType(T.LongType(), dtype.containsNull)
    return dtype


def _with_times(column, dtype: T.DataType):
    """A result column back as `dtype` where `_timeless` made its TIME microseconds."""
    if isinstance(dtype, T.TimeType):
        return F.time_from_micros(column).cast(dtype)
    if isinstance(dtype, T.ArrayType) and isinstance(dtype.elementType, T.TimeType):
        return F.transform(column, lambda v: F.time_from_micros(v)).cast(dtype)
    return column
