"""Materialize's joins in SUBSCRIBE: a join of two multisets whose result is a stream of diffs.

Materialize joins whole collections (no windows) and SUBSCRIBE emits each change of the result
as a row and its multiplicity: +1 an insert, -1 a retraction. Each input record becomes a
change of its input's multiset: an append-only record inserts its row (+1); a changelog's
record (ENVELOPE UPSERT, a table FROM SOURCE, Debezium) retracts its key's previous row (-1)
and inserts the new one (+1), a delete only retracts. Both run as keyed state in Spark's state
store (state_spark.py), for the whole history, as Materialize keeps it, checkpointed by Spark:
a changelog's row per record key (grouped by input and record key, so an update that moves the
row to another join key retracts it under the old one), then each input's rows per join key
with their counts (grouped by join key: a change costs what its join key holds).

A change of one input joins the other input's rows under its join key, each with its count. An
outer join's preserved input has a row without a match emitted NULL-extended; when its join key
gets its first match there, the NULL-extended rows are retracted and the matched rows inserted,
and back when the last match goes. A NULL join key never matches (SQL's NULL is never equal).
"""

from __future__ import annotations

import functools

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .rules import equalities, referenced_pseudocolumns
from .state_spark import CHANGE, RESULT, JoinedRows, RecordKeyRows
from ..analysis.plan import TABLE, QueryPlan
from ..columns import (BOOKKEEPING, DROP, ERROR, OFFSET, PARTITION, RAW_HEADERS, RAW_KEY, RAW_TIMESTAMP,
                       RAW_VALUE, TOMBSTONE, TOPIC, result_column)
from ..expressions.compile_spark import Compiler, JoinScope, Scope, quoted

#: The joined frame's columns for the change's time (epoch ms) and multiplicity.
MZ_TIMESTAMP, MZ_DIFF = "__mz_timestamp", "__mz_diff"
#: How the state is keyed, as a persistent query's checkpoint layout records it (sinks/layout.py).
LAYOUT = "keyed state per record key and join key"
#: Join kind -> whether the (left, right) input's rows are kept when unmatched.
PRESERVED = {"INNER": (False, False), "LEFT": (True, False), "RIGHT": (False, True), "FULL": (True, True)}


def diff_joined(plan: QueryPlan, raw: DataFrame, read, input_frame, without_errors) -> tuple[DataFrame, JoinScope]:
    """Both inputs' changes joined: a frame of the changed result rows (`__s{i}_{name}` columns,
    MZ_TIMESTAMP, MZ_DIFF and bookkeeping) and the scope that resolves the query's names over it.
    `input_frame(side, raw)` gives a FROM item's decoded rows."""
    join = plan.statement.joins[0]
    pairs = equalities(join.on, plan.inputs)
    changes, sides, schemas, keys = [], [], [], []
    for index, side in enumerate(plan.inputs):
        frame = input_frame(side, raw if index == 0 else read(side.source, True))
        frame = without_errors(frame, f"__errors_{index}")
        scope = Scope(frame, set(side.visible), set(side.qualifiers), plan.dialect)
        keys.append([Compiler(scope).compile(pair[index]) for pair in pairs])
        kept = side.columns + referenced_pseudocolumns(plan.statement, side)
        columns = {name: f"__s{index}_{name}" for name in kept}
        row = F.struct(*[F.col(quoted(n)).alias(c) for n, c in columns.items()])
        changes.append((frame, row, _record_key(side) if side.kind == TABLE else None))
        sides.append((side.qualifiers, columns))
        schemas.append(frame.select(row.alias("r")).schema["r"].dataType)
    types = [changes[0][0].select(k.alias("k")).schema["k"].dataType for k in keys[0]]
    messages = [_messages(index, frame, row, record_key, [k.cast(t) for k, t in zip(keys[index], types)])
                for index, (frame, row, record_key) in enumerate(changes)]
    changelogs = [m for m, (_, _, record_key) in zip(messages, changes) if record_key is not None]
    moves = [_union(changelogs).groupBy("side", "pk").transformWithState(RecordKeyRows(), CHANGE, "Append", "None")
             ] if changelogs else []
    inserts = [m.select(*CHANGE.names[:-1], F.lit(1).cast("bigint").alias("d"))
               for m, (_, _, record_key) in zip(messages, changes) if record_key is None]
    # the inputs in their order (an append-only first input's inserts first), as Spark then lists
    # their sources, which a SUBSCRIBE's held snapshot compares with its inputs' (diffs.snapshot_read)
    ordered = inserts + moves if changes[0][2] is None else moves + inserts
    joined = _union(ordered).groupBy("jk").transformWithState(
        JoinedRows(PRESERVED[join.kind]), RESULT, "Append", "None")
    return _rows(joined, schemas, sides, plan)


def _union(frames: list[DataFrame]) -> DataFrame:
    return functools.reduce(DataFrame.unionByName, frames)


def _record_key(side):
    """What keys a changelog input's rows: the record's key, or a view's key columns (a view
    over a changelog selects them: rules)."""
    if side.view is None:
        return F.base64(F.col(RAW_KEY))
    return F.to_json(F.struct(*[F.col(quoted(k)) for k in side.view.keys]))


def _messages(index: int, frame: DataFrame, row, record_key, keys) -> DataFrame:
    """One input's records as changes: its side, join key (as JSON text; NULL when any part is
    NULL), row (JSON), record time, where it was read (for order) and, for a changelog
    (`record_key` set), its key and whether it deletes."""
    changelog = record_key is not None
    null_key = F.greatest(*[k.isNull() for k in keys]) if len(keys) > 1 else keys[0].isNull()
    join_key = F.when(~null_key, F.to_json(F.struct(*[k.alias(f"k{i}") for i, k in enumerate(keys)])))
    return frame.select(
        F.lit(index).alias("side"), join_key.alias("jk"), F.to_json(row).alias("row"),
        F.unix_millis(F.col(RAW_TIMESTAMP)).alias("t"), F.col(PARTITION).alias("p"), F.col(OFFSET).alias("o"),
        (record_key if changelog else F.lit(None).cast("string")).alias("pk"),
        (F.col(TOMBSTONE) if changelog else F.lit(False)).alias("del"))


def _rows(joined: DataFrame, schemas, sides, plan: QueryPlan) -> tuple[DataFrame, JoinScope]:
    """The emitted JSON rows back to columns, with the time and diff and empty bookkeeping."""
    rows = [F.from_json(F.col(c), s) for c, s in zip(("l", "r"), schemas)]
    values = [row[c].alias(c) for row, (_, columns) in zip(rows, sides) for c in columns.values()]
    frame = joined.select(
        *values, F.col("t").alias(MZ_TIMESTAMP), F.col("d").alias(MZ_DIFF),
        F.lit(None).cast("string").alias(ERROR), F.lit(False).alias(DROP),
        F.lit(None).cast("string").alias(TOPIC), F.lit(None).cast("int").alias(PARTITION),
        F.lit(None).cast("bigint").alias(OFFSET), F.lit(None).cast("binary").alias(RAW_KEY),
        F.lit(None).cast("binary").alias(RAW_VALUE),
        F.lit(None).cast("array<struct<key:string,value:binary>>").alias(RAW_HEADERS),
        F.timestamp_millis(F.col("t")).alias(RAW_TIMESTAMP), F.lit(False).alias(TOMBSTONE))
    return frame, JoinScope(frame, set(), set(), plan.dialect, sides=list(sides))


def with_diff_columns(projected: DataFrame, count: int) -> DataFrame:
    """The projected result (`count` columns, then MZ_TIMESTAMP and MZ_DIFF as extra columns,
    then bookkeeping) as SUBSCRIBE shows it: mz_timestamp, mz_diff, then the columns."""
    return projected.select(F.col(MZ_TIMESTAMP).alias(result_column(0)), F.col(MZ_DIFF).alias(result_column(1)),
                            *[F.col(result_column(i)).alias(result_column(i + 2)) for i in range(count)],
                            *[F.col(c) for c in BOOKKEEPING])
