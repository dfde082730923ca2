"""A SUBSCRIBE's built frame as the driver reads it (`diffs.ChangeTracker`): per row its time
(epoch ms), a code, the result columns and an identity (subscribe.rules says which).

APPEND rows have no identity and the code +1 (one more copy of the row). JOIN rows come from
the diff join's step with their diffs as codes. CHANGELOG and AGGREGATE rows carry what they
replace: a changelog record its key (the record's key, or the key columns a view over it
selects), an aggregation's row its group; the code is +1 for a row, -1 for a delete (a
tombstone, a row the WHERE clause rejects, a group that went or fails HAVING). A changelog's
rows go through their key's last row in keyed state (state_spark.py) and reach the driver as
diffs. An aggregation's rows reach it with their group: Spark fails a keyed step after a
streaming aggregation in update mode (a state store assertion, "Can only upgrade readStore to
writeStore with the same stateStoreId"), and a plan built per micro-batch (build/retract.py)
has no streaming frame to key.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..analysis.plan import Input, QueryPlan
from .rules import CHANGELOG, JOIN
from ..columns import BOOKKEEPING, DROP, OFFSET, PARTITION, RAW_KEY, RAW_TIMESTAMP, TOMBSTONE, result_column
from ..expressions.compile_spark import quoted
from .state_spark import LastRow

#: The column that carries a row's identity through the projection.
IDENTITY = "__identity"


def changelog_identity(side: Input) -> Column:
    """What a changelog's row replaces: its record's key, or the key columns a view selects
    (a view of a writable table selects none: its rows keep their record key, a row id)."""
    if side.view is None or not side.view.keys:
        return F.base64(F.col(RAW_KEY))
    return F.to_json(F.struct(*[F.col(quoted(k)) for k in side.view.keys]))


def group_identity(keys: list[str]) -> Column:
    """An aggregation's group (its staged key columns); a global aggregate has one group."""
    return F.to_json(F.struct(*[F.col(k) for k in keys])) if keys else F.lit("[]")


def for_driver(plan: QueryPlan, frame: DataFrame) -> DataFrame:
    """The built frame (result columns, maybe IDENTITY, bookkeeping) as time, code, the result
    columns and the identity, then bookkeeping."""
    count = len(plan.outputs)
    if plan.changes == JOIN:  # mz_timestamp, mz_diff, then the columns already
        time, code = F.col(result_column(0)), F.col(result_column(1))
        columns = [F.col(result_column(i + 2)) for i in range(count)]
        identity = F.lit(None).cast("string")
    else:
        time = F.unix_millis(F.col(RAW_TIMESTAMP))
        identity = F.col(IDENTITY) if IDENTITY in frame.columns else F.lit(None).cast("string")
        code = F.when(identity.isNotNull() & F.col(TOMBSTONE), F.lit(-1)).otherwise(F.lit(1))
        columns = [F.col(result_column(i)) for i in range(count)]
    rows = frame.select(time.alias(result_column(0)), code.cast("bigint").alias(result_column(1)),
                        *[c.alias(result_column(i + 2)) for i, c in enumerate(columns)],
                        identity.alias(result_column(count + 2)), *[F.col(c) for c in BOOKKEEPING])
    return last_rows(rows, count) if plan.changes == CHANGELOG and frame.isStreaming else rows


def last_rows(rows: DataFrame, count: int) -> DataFrame:
    """Rows that replace what their identity held -> diffs, through the identity's last row in
    keyed state (state_spark.LastRow); the same layout, the identity NULL."""
    schema = rows.schema
    row_type = T.StructType([T.StructField(f"c{i}", schema[i + 2].dataType) for i in range(count)])
    step = LastRow(row_type, count, schema.names, *(BOOKKEEPING.index(c) for c in (DROP, PARTITION, OFFSET)))
    return rows.groupBy(result_column(count + 2)).transformWithState(step, schema, "Append", "None")
