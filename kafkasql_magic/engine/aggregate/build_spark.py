"""GROUP BY with one change per input record (`per_record.py` says when), in Spark's keyed state.

The records staged as for the per-batch aggregation (`engine/aggregate/group_by_spark.py`'s `stage`:
group keys `__g{i}`, aggregate arguments `__a{i}_{n}`) go to `transformWithState` keyed by the
group key, where `keyed_spark.PerRecord` emits each record's change; the per-batch path's
`finished` then applies SELECT and HAVING to every emitted row. In a changelog, a change failing
HAVING is a tombstone only where the group's row before it passed HAVING (Kafka Streams' table
filter forwards nothing when neither the old nor the new row passes), as ksqlDB writes it.
"""

from __future__ import annotations

from typing import Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..analysis.plan import QueryPlan
from .group_by_spark import accumulator_specs, finished, stage
from ..expressions.compile_spark import Compiler, Scope
from ..columns import ERROR, OFFSET, PARTITION
from .keyed_spark import PerRecord
from ..state_key.flat_spark import flat_keys


def per_record_aggregated(plan: QueryPlan, frame: DataFrame, scope: Scope, where_error: Column,
                          without_errors: Callable[[DataFrame, str], DataFrame], changelog: bool = False) -> DataFrame:
    """`changelog`: a change failing HAVING comes out as a tombstone instead of no row."""
    staged = stage(plan, frame, scope, where_error)
    good = without_errors(staged.frame, "__errors_aggregate")
    specs, arguments = accumulator_specs(plan, staged, good)
    inputs, flat = flat_keys(good.select(*staged.keys, *dict.fromkeys(arguments), PARTITION, "__order", "__rt",
                                         "__rh"), staged.keys)
    schema = inputs.schema
    out = T.StructType([schema[k] for k in flat.keys] + [field for *_, field in specs]
                       + [schema["__rt"], schema["__rh"], schema[PARTITION], T.StructField(OFFSET, T.LongType())]
                       + [T.StructField(f"__prev{field.name}", field.dataType) for *_, field in specs]
                       + [T.StructField("__fresh", T.BooleanType())])
    processor = PerRecord([(name, [inputs.columns.index(c) for c in columns], arg_type, field.dataType)
                           for name, columns, arg_type, field in specs],
                          inputs.columns.index(PARTITION), inputs.columns.index("__order"),
                          inputs.columns.index("__rt"), inputs.columns.index("__rh"), out.fieldNames())
    grouped = flat.restore(inputs.groupBy(*flat.keys).transformWithState(processor, out, "Update", "None"))
    if changelog and plan.grouping.having is not None:
        grouped = having_changes(plan, grouped, [field.name for *_, field in specs])
    return finished(plan, grouped.drop(*[f"__prev{field.name}" for *_, field in specs], "__fresh"),
                    F.lit(False) if changelog else None)


def having_changes(plan: QueryPlan, grouped: DataFrame, aggregates: list[str]) -> DataFrame:
    """The changes a changelog writes under HAVING: those passing it, and those failing it after a
    row of the group that passed it (its tombstone); a change failing it after nothing, or after
    a row that failed it too, writes nothing. A late record's row (its ERROR set) stays, to be logged."""
    def passes(frame: DataFrame) -> Column:
        scope = Scope(frame, set(frame.columns), set(), plan.dialect)
        return F.coalesce(Compiler(scope).predicate(plan.grouping.having), F.lit(False))

    columns = grouped.columns
    now = grouped.withColumn("__passes", passes(grouped))
    before = now.select(*[F.col(f"__prev{c}").alias(c) if c in aggregates else F.col(c) for c in columns],
                        "__passes", *[F.col(c).alias(f"__now{c}") for c in aggregates])
    kept = before.where(F.col("__passes") | (~F.col("__fresh") & passes(before))
                        | (F.col(ERROR).isNotNull() if ERROR in columns else F.lit(False)))
    return kept.select(*[F.col(f"__now{c}").alias(c) if c in aggregates else F.col(c) for c in columns])
