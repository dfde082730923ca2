"""Materialize's joins in SUBSCRIBE: a join of two multisets whose result is a stream of diffs.

Materialize joins whole collections (no windows) and SUBSCRIBE emits each change of the result
as a row and its multiplicity: +1 an insert, -1 a retraction. Each input record becomes a
change of its input's multiset: an append-only record inserts its row (+1); a changelog's
record (ENVELOPE UPSERT, a table FROM SOURCE, Debezium) retracts its key's previous row (-1)
and inserts the new one (+1), a delete only retracts. The changes of both inputs meet in
`applyInPandasWithState`, whose state holds each input's rows per join key, with their counts
(and a changelog's latest row per key), for the whole history, as Materialize keeps it;
checkpointed by Spark like any stateful operator.

A change of one input joins the other input's rows under its join key, each with its count. An
outer join's preserved input has a row without a match emitted NULL-extended; when its join key
gets its first match there, the NULL-extended rows are retracted and the matched rows inserted,
and back when the last match goes. A NULL join key never matches (SQL's NULL is never equal).

The state is spread over hash buckets of join keys (Spark's cost is per group, as in
build/table_join.py; each bucket a group, its own task's work) when every change of a row stays under
one join key: always for append-only inputs, and for a changelog whose join key its record key
determines (the ON names only its key columns: rules.spreads_over_buckets). A
changelog joined on a value column may move a key's row to another join key, whose retraction
belongs with the old row: then both inputs meet in one group (one task's work and state).
"""

from __future__ import annotations

import json

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.streaming.state import GroupStateTimeout

from .rules import equalities, referenced_pseudocolumns, spreads_over_buckets
from ..analysis.plan import TABLE, QueryPlan
from ..columns import (BOOKKEEPING, DROP, ERROR, OFFSET, PARTITION, RAW_HEADERS, RAW_KEY, RAW_TIMESTAMP,
                       RAW_VALUE, TOMBSTONE, TOPIC, result_column)
from ..build.expressions import Compiler, JoinScope, Scope, quoted

#: The joined frame's columns for the change's time (epoch ms) and multiplicity.
MZ_TIMESTAMP, MZ_DIFF = "__mz_timestamp", "__mz_diff"
#: What the join step emits: both rows as JSON (NULL: the side is missing), time and diff.
RESULT = T.StructType([T.StructField("__l", T.StringType()), T.StructField("__r", T.StringType()),
                       T.StructField("__t", T.LongType()), T.StructField("__d", T.LongType())])
#: The state: each input's rows per join key with counts, and a changelog's row per key (JSON).
STATE = "sides string"
#: Hash buckets of join keys (part of the state's layout: never changed for a running query).
BUCKETS = 64
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
    group = _bucket() if spreads_over_buckets(join.on, plan.inputs) else F.lit(0)
    joined = messages[0].unionByName(messages[1]).withColumn("__group", group).groupBy("__group") \
        .applyInPandasWithState(_step(*PRESERVED[join.kind]), RESULT, STATE, "append", GroupStateTimeout.NoTimeout)
    return _rows(joined, schemas, sides, plan)


def _bucket():
    """A change's group: the hash bucket of its join key (a NULL join key's bucket is that of '')."""
    return F.pmod(F.xxhash64(F.coalesce("__jk", F.lit(""))), F.lit(BUCKETS))


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
        F.lit(index).alias("__side"), join_key.alias("__jk"), F.to_json(row).alias("__row"),
        F.unix_millis(F.col(RAW_TIMESTAMP)).alias("__t"), F.col(PARTITION).alias("__p"), F.col(OFFSET).alias("__o"),
        (record_key if changelog else F.lit(None).cast("string")).alias("__pk"),
        (F.col(TOMBSTONE) if changelog else F.lit(False)).alias("__del"))


def _rows(joined: DataFrame, schemas, sides, plan: QueryPlan) -> tuple[DataFrame, JoinScope]:
    """The emitted JSON rows back to columns, with the time and diff and empty bookkeeping."""
    rows = [F.from_json(F.col(c), s) for c, s in zip(("__l", "__r"), schemas)]
    values = [row[c].alias(c) for row, (_, columns) in zip(rows, sides) for c in columns.values()]
    frame = joined.select(
        *values, F.col("__t").alias(MZ_TIMESTAMP), F.col("__d").alias(MZ_DIFF),
        F.lit(None).cast("string").alias(ERROR), F.lit(False).alias(DROP),
        F.lit(None).cast("string").alias(TOPIC), F.lit(None).cast("int").alias(PARTITION),
        F.lit(None).cast("bigint").alias(OFFSET), F.lit(None).cast("binary").alias(RAW_KEY),
        F.lit(None).cast("binary").alias(RAW_VALUE),
        F.lit(None).cast("array<struct<key:string,value:binary>>").alias(RAW_HEADERS),
        F.timestamp_millis(F.col("__t")).alias(RAW_TIMESTAMP), F.lit(False).alias(TOMBSTONE))
    return frame, JoinScope(frame, set(), set(), plan.dialect, sides=list(sides))


def with_diff_columns(projected: DataFrame, count: int) -> DataFrame:
    """The projected result (`count` columns, then MZ_TIMESTAMP and MZ_DIFF as extra columns,
    then bookkeeping) as SUBSCRIBE shows it: mz_timestamp, mz_diff, then the columns."""
    return projected.select(F.col(MZ_TIMESTAMP).alias(result_column(0)), F.col(MZ_DIFF).alias(result_column(1)),
                            *[F.col(result_column(i)).alias(result_column(i + 2)) for i in range(count)],
                            *[F.col(c) for c in BOOKKEEPING])


def _step(left_kept: bool, right_kept: bool):
    """A group's changes -> the result's diffs. State (STATE): per input, join key -> {row: count}
    and, for a changelog, its key -> [join key, row]."""
    preserved = (left_kept, right_kept)

    def step(group, chunks, state):  # nothing of this module's: Spark's workers unpickle it without importing it
        import pandas as pd

        def _ordered(frame):
            """A group's changes in order: each input partition's by offset, merged by record time."""
            import heapq

            runs: dict[tuple, list] = {}
            for change in zip(*(frame[c].tolist() for c in ("__side", "__jk", "__row", "__t", "__p", "__o", "__pk",
                                                              "__del"))):
                runs.setdefault((change[0], change[4]), []).append(change)
            return heapq.merge(*(sorted(run, key=lambda c: c[5]) for _, run in sorted(runs.items())), key=lambda c: c[3])

        saved = json.loads(state.get[0]) if state.exists else {"rows": [{}, {}], "keys": [{}, {}]}
        rows, keyed = saved["rows"], saved["keys"]
        out: dict[tuple, int] = {}  # (left, right, time) -> diff: one row per distinct change

        def emit(side, row, other, diff, at):
            pair = (row, other) if side == 0 else (other, row)
            out[(*pair, at)] = out.get((*pair, at), 0) + diff

        def change(side, key, row, diff, at):
            other = 1 - side
            if key is None:  # a NULL join key matches nothing
                if preserved[side]:
                    emit(side, row, None, diff, at)
                return
            mine, theirs = rows[side].setdefault(key, {}), rows[other].get(key, {})
            before = sum(mine.values())
            after = before + diff
            if preserved[other] and theirs and before == 0 and after > 0:  # their first match
                for match, count in theirs.items():
                    emit(other, match, None, -count, at)
            for match, count in theirs.items():
                emit(side, row, match, diff * count, at)
            if preserved[side] and not theirs:
                emit(side, row, None, diff, at)
            if preserved[other] and theirs and before > 0 and after == 0:  # their last match went
                for match, count in theirs.items():
                    emit(other, match, None, count, at)
            mine[row] = mine.get(row, 0) + diff
            if not mine[row]:
                del mine[row]
            if not mine:
                del rows[side][key]

        for side, key, row, at, _, _, record_key, deletes in _ordered(pd.concat(list(chunks))):
            if record_key is None:  # append-only: an insert
                change(side, key, row, 1, at)
                continue
            old = keyed[side].pop(record_key, None)
            if old is not None:  # the key's previous row is retracted
                change(side, old[0], old[1], -1, at)
            if not deletes:
                keyed[side][record_key] = [key, row]
                change(side, key, row, 1, at)
        state.update((json.dumps(saved),))
        yield pd.DataFrame([(l, r, t, d) for (l, r, t), d in out.items() if d], columns=["__l", "__r", "__t", "__d"])

    return step
