"""Table-table joins as changelogs (Kafka Streams' KTable-KTable joins), in Spark state.

Both tables stream every change, tombstones too. Each side's change becomes a message: its
side, its join key, its row as JSON (with its headers) and its time. The messages of both sides
meet in `applyInPandasWithState`, grouped by a bucket of join keys (a hash of the key, BUCKETS
of them: Spark's cost is per group, a pandas frame and a state row each, so a group per key ran
at a fortieth of raw consume), whose state is the latest row of each side per key (checkpointed
by Spark like any stateful operator, so a persistent query resumes with it). Within a bucket
each key's changes are walked in order as plain tuples.
A change emits the key's new result row, or a tombstone when the row goes (an INNER join losing
its match, a LEFT join losing its left row, both sides deleted in a FULL join), with the last
rows' key columns and every other column NULL.

A foreign-key join (`ON l.fk = r.pk`) emits rows keyed by the left table's key: a left change
joins the right row its foreign key names, a right change re-emits every left row pointing at
it. A left row whose foreign key changes must leave its old right row, and Spark allows one
such stateful step per streaming query, so both tables meet in one group whose state holds
every left row (with its foreign key) and every right row: correct, but one task's work and
state (a limit for large tables, measured in bench/).

The output record's time is the later of the two rows' times (Kafka Streams' rule for table
joins), its headers those of the change that caused it.
"""

from __future__ import annotations

import json

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.streaming.state import GroupStateTimeout

from ..analysis.plan import QueryPlan
from ..analysis.table_joins import FOREIGN_KEY, join_sides
from ..columns import (DROP, ERROR, OFFSET, PARTITION, RAW_HEADERS, RAW_KEY, RAW_TIMESTAMP, RAW_VALUE, TOMBSTONE,
                       TOPIC, result_column)
from .decode import logical_frame
from .expressions import Compiler, JoinScope, Scope, quoted

#: What the join step emits: both rows as JSON (NULL: no row), the record time, which side
#: caused the change (its headers go to the output record), and whether it is a tombstone.
RESULT_COLUMNS = ["__l", "__r", "__rt", "__hside", "__tomb", "__jk"]
#: A bucket of join keys, as JSON: each key (as `_text`) -> the latest row and time of each side
#: (a string, as PySpark's worker does not read array types in a state's schema).
PRIMARY_STATE = "rows string"
#: Join keys are spread over this many groups (a group per key costs Spark a pandas frame and
#: a state row per key: measured in bench/); part of the state's layout, so never changed for
#: a running query.
BUCKETS = 256
FOREIGN_STATE = "tables string"


def table_joined(plan: QueryPlan, raw: DataFrame, read, without_errors) -> tuple[DataFrame, JoinScope]:
    """Both tables' changelogs joined: the frame of the joined rows (`__s{i}_{name}` columns and
    bookkeeping) and the scope that resolves the query's names over it."""
    join = plan.statement.joins[0]
    left_expr, right_expr = join_sides(join.on, plan.inputs)
    messages, sides, schemas = [], [], []
    for index, (side, on) in enumerate(zip(plan.inputs, (left_expr, right_expr))):
        side_raw = raw if index == 0 else read(side.source, True)
        frame = without_errors(logical_frame(side_raw, side.source), f"__errors_{index}")
        key = Compiler(Scope(frame, set(side.visible), set(side.qualifiers), plan.dialect)).compile(on)
        columns = {name: f"__s{index}_{name}" for name in side.visible}
        row = F.struct(*[F.col(quoted(n)).alias(c) for n, c in columns.items()], F.col(RAW_HEADERS))
        messages.append(frame.select(F.lit(index).alias("__side"), key.alias("__jk"), F.to_json(row).alias("__row"),
                                     F.unix_millis(F.col(RAW_TIMESTAMP)).alias("__rt"), F.col(OFFSET).alias("__order"),
                                     F.col(TOMBSTONE).alias("__tomb"), F.col(RAW_KEY).alias("__lk")))
        sides.append((side.qualifiers, columns))
        schemas.append(frame.select(row.alias("r")).schema["r"].dataType)
    key_type = messages[0].schema["__jk"].dataType
    left, right = messages[0], messages[1].withColumn("__jk", F.col("__jk").cast(key_type))
    if plan.table_join == FOREIGN_KEY:
        step, state = _foreign_key_step(join.kind), FOREIGN_STATE
    else:
        step, state = _primary_key_step(join.kind), PRIMARY_STATE
    # a table's NULL key is its envelope's concern; a NULL foreign key is a left row without a match
    keep = F.col("__jk").isNotNull()
    changes = left.unionByName(right).where(keep | (F.col("__side") == 0) if plan.table_join == FOREIGN_KEY else keep)
    result = T.StructType([T.StructField("__l", T.StringType()), T.StructField("__r", T.StringType()),
                           T.StructField("__rt", T.LongType()), T.StructField("__hside", T.IntegerType()),
                           T.StructField("__tomb", T.BooleanType()), T.StructField("__jk", key_type)])
    # a foreign-key join meets in one group: a left row moving to another foreign key must leave
    # its old one, and Spark runs one stateful step per streaming query
    group = F.lit(0) if plan.table_join == FOREIGN_KEY else F.pmod(F.xxhash64("__jk"), F.lit(BUCKETS))
    joined = changes.withColumn("__group", group).groupBy("__group").applyInPandasWithState(
        step, result, state, "append", GroupStateTimeout.NoTimeout)
    keys = [] if plan.table_join == FOREIGN_KEY else [
        next(c for n, c in columns.items() if n.lower() == on.name.lower())
        for on, (_, columns) in zip((left_expr, right_expr), sides)]
    return _rows(joined, schemas, sides, plan, keys)


def _rows(joined: DataFrame, schemas, sides, plan: QueryPlan, keys) -> tuple[DataFrame, JoinScope]:
    """The emitted JSON rows back to columns, with the output record's bookkeeping. A tombstone
    of a primary-key join names its key on both sides (`keys`: each side's key column)."""
    rows = [F.from_json(F.col(c), s) for c, s in zip(("__l", "__r"), schemas)]
    values = [(F.when(F.col("__tomb"), F.col("__jk")).otherwise(row[c]) if c in keys else row[c]).alias(c)
              for row, (_, columns) in zip(rows, sides) for c in columns.values()]
    headers = F.when(F.col("__hside") == 0, rows[0][RAW_HEADERS]).otherwise(rows[1][RAW_HEADERS])
    frame = joined.select(
        *values, F.lit(None).cast("string").alias(ERROR), F.lit(False).alias(DROP),
        F.lit(None).cast("string").alias(TOPIC), F.lit(None).cast("int").alias(PARTITION),
        F.lit(None).cast("bigint").alias(OFFSET), F.lit(None).cast("binary").alias(RAW_KEY),
        F.lit(None).cast("binary").alias(RAW_VALUE), headers.alias(RAW_HEADERS),
        F.timestamp_millis(F.col("__rt")).alias(RAW_TIMESTAMP), F.col("__tomb").alias(TOMBSTONE))
    return frame, JoinScope(frame, set(), set(), plan.dialect, sides=list(sides))


def tombstoned(plan: QueryPlan, frame: DataFrame) -> DataFrame:
    """A tombstone keeps only the result's key columns: the rest is NULL, as a deleted row."""
    keys = set(plan.keys)
    return frame.withColumns({result_column(i): F.when(~F.col(TOMBSTONE), F.col(result_column(i)))
                              for i, name in enumerate(plan.names) if name not in keys})


def _merged(changes, side="__side", order="__order", time="__rt"):
    """One key's changes in order: each side's by offset, the sides merged by record time
    (`side`, `order`, `time`: where a change holds them, names for dicts, indexes for tuples)."""
    import heapq

    by_side = [sorted((c for c in changes if c[side] == i), key=lambda c: c[order]) for i in (0, 1)]
    return heapq.merge(*by_side, key=lambda c: c[time])


def _emitted(key, left, lt, right, rt, side, tomb=False):
    times = [t for t in (lt, rt) if t is not None]
    return {"__l": left, "__r": right, "__rt": max(times) if times else None, "__hside": side, "__tomb": tomb,
            "__jk": key}


#: Join kind -> whether a result row exists, given (left row present, right row present).
PRESENT = {"INNER": lambda l, r: l and r, "LEFT": lambda l, r: l, "RIGHT": lambda l, r: r,
           "FULL": lambda l, r: l or r}


def _primary_key_step(kind: str):
    """One bucket's changes -> the changed result rows. The bucket's state holds, per join key
    (as `_text`), the latest row and time of each side (PRIMARY_STATE)."""
    present = PRESENT[kind]

    def step(bucket, chunks, state):
        import pandas as pd

        frame = pd.concat(list(chunks))
        rows = json.loads(state.get[0]) if state.exists else {}
        by_key: dict[str, list] = {}
        columns = [frame[c].tolist() for c in ("__side", "__jk", "__row", "__rt", "__order", "__tomb")]
        for change in zip(*columns):
            by_key.setdefault(_text(change[1]), []).append(change)
        out = []
        for text, changes in by_key.items():
            left, lt, right, rt = rows.pop(text, (None, None, None, None))
            for side, key, row, at, _, tomb in _merged(changes, side=0, order=4, time=3):
                before = present(left is not None, right is not None)
                last = (left, right)
                if side == 0:
                    left, lt = (None if tomb else row), at
                else:
                    right, rt = (None if tomb else row), at
                if present(left is not None, right is not None):
                    out.append(_emitted(key, left, lt, right, rt, side))
                elif before:  # the row goes: its last rows carry the key
                    gone = [row if i == side else last[i] for i in (0, 1)]
                    out.append(_emitted(key, gone[0], lt, gone[1], rt, side, tomb=True))
            if left is not None or right is not None:
                rows[text] = [left, lt, right, rt]
        if rows:
            state.update((json.dumps(rows),))
        else:
            state.remove()
        yield pd.DataFrame(out, columns=RESULT_COLUMNS)

    return step


def _foreign_key_step(kind: str):
    keeps_unmatched = kind == "LEFT"

    def step(key, chunks, state):
        import pandas as pd

        tables = json.loads(state.get[0]) if state.exists else {"lefts": {}, "rights": {}}
        lefts, rights = tables["lefts"], tables["rights"]  # left key -> [fk, row, time]; right key -> [row, time]
        pointing: dict[str, set] = {}
        for left_key, (fk, _, _) in lefts.items():
            pointing.setdefault(fk, set()).add(left_key)
        out = []
        for change in _merged(pd.concat(list(chunks)).to_dict("records")):
            fk = _text(change["__jk"])
            if change["__side"] == 1:
                if change["__tomb"]:
                    rights.pop(fk, None)
                else:
                    rights[fk] = [change["__row"], change["__rt"]]
                for left_key in sorted(pointing.get(fk, ())):
                    _, row, lt = lefts[left_key]
                    gone = not (keeps_unmatched or fk in rights)
                    out.append(_emitted(None, row, lt, change["__row"] if gone else rights.get(fk, [None])[0],
                                        change["__rt"], 1, tomb=gone))
                continue
            left_key = _text(change["__lk"])
            old = lefts.pop(left_key, None)
            if old is not None:
                pointing.get(old[0], set()).discard(left_key)
            if change["__tomb"]:
                if old is not None:  # the deleted row's last result goes
                    out.append(_emitted(None, change["__row"], change["__rt"], None, None, 0, tomb=True))
                continue
            lefts[left_key] = [fk, change["__row"], change["__rt"]]
            pointing.setdefault(fk, set()).add(left_key)
            right, rt = rights.get(fk, [None, None]) if change["__jk"] is not None else [None, None]
            out.append(_emitted(None, change["__row"], change["__rt"], right, rt, 0,
                                tomb=not (keeps_unmatched or right is not None)))
        state.update((json.dumps(tables),))
        yield pd.DataFrame(out, columns=RESULT_COLUMNS)

    return step


def _text(value) -> str:
    """A key as text for the state's JSON: bytes in base64, anything else as JSON."""
    import base64

    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode()
    return json.dumps(value, default=str, sort_keys=True)
