"""Table-table joins as changelogs (Kafka Streams' KTable-KTable joins), in Spark state.

Every table streams every change, tombstones too. Each table's change becomes a message: its
table, its join key, its row as JSON (with its headers) and its time. The messages of all the
tables meet in one `applyInPandasWithState`, grouped by a bucket of join keys (a hash of the
key, BUCKETS of them: Spark's cost is per group, a pandas frame and a state row each, so a group
per key ran at a fortieth of raw consume), whose state is the latest row of each table per key
(checkpointed by Spark like any stateful operator, so a persistent query resumes with it).
Within a bucket each key's changes are walked in order as plain tuples. Two tables or more
(`t1 JOIN t2 ON ... LEFT JOIN t3 ON ...`): every join is on the same primary key, so the
result row of a key is its tables' rows joined left-deep (`joined_tables`), as ksqlDB does.
A change emits the key's new result row, or a tombstone when the row goes (an INNER join losing
its match, a LEFT join losing its left row, every table deleted in a FULL join), with the last
rows' key columns and every other column NULL.

A foreign-key join (`ON l.fk = r.pk`) emits rows keyed by the left table's key: a left change
joins the right row its foreign key names, a right change re-emits every left row pointing at
it. A left row whose foreign key changes must leave its old right row, and Spark allows one
such stateful step per streaming query, so both tables meet in one group whose state holds
every left row (with its foreign key) and every right row: correct, but one task's work and
state (a limit for large tables, measured in bench/). A foreign-key join may start a chain (ksqlDB's
rule): the tables joined after it on the left table's key join in the same state, their rows
kept by primary key (`__pk`, JSON text), each result row naming its primary key.

The output record's time is the latest of the change's and the joined rows' times (Kafka
Streams' rule for table joins), its headers those of the change that caused it.
"""

from __future__ import annotations

import json

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.streaming.state import GroupStateTimeout

from ...sql import ast
from ..analysis.plan import QueryPlan
from ..analysis.table_joins import FOREIGN_KEY, join_sides
from ..columns import (DROP, ERROR, OFFSET, PARTITION, RAW_HEADERS, RAW_KEY, RAW_TIMESTAMP, RAW_VALUE, TOMBSTONE,
                       TOPIC, result_column)
from .decode import logical_frame
from .expressions import Compiler, JoinScope, Scope, quoted
from .join_key import JOIN_KEY

#: What the join step emits besides each table's row as JSON (`row_columns`; NULL: no row):
#: the record time, which table caused the change (its headers go to the output record),
#: whether it is a tombstone, and the join key.
RECORD_COLUMNS = ["__rt", "__hside", "__tomb", "__jk"]
#: A bucket of join keys, as JSON: each key (as `_text`) -> the latest row and time of each
#: table, [row0, time0, row1, time1, ...] (a string, as PySpark's worker does not read array
#: types in a state's schema).
PRIMARY_STATE = "rows string"
#: Join keys are spread over this many groups (a group per key costs Spark a pandas frame and
#: a state row per key: measured in bench/); part of the state's layout, so never changed for
#: a running query.
BUCKETS = 256
FOREIGN_STATE = "tables string"


def row_columns(tables: int) -> list[str]:
    """The step's output columns holding each table's row."""
    return [f"__t{i}" for i in range(tables)]


def table_joined(plan: QueryPlan, raw: DataFrame, read, without_errors) -> tuple[DataFrame, JoinScope]:
    """The tables' changelogs joined: the frame of the joined rows (`__s{i}_{name}` columns and
    bookkeeping) and the scope that resolves the query's names over it."""
    joins = plan.statement.joins
    ons = [join_sides(join.on, plan.inputs, number + 1) for number, join in enumerate(joins)]
    # each table's side of its ON clause: the first table's in the first join, then each joined table's
    join_exprs = [ons[0][0], *(right for _, right in ons)]
    foreign = plan.table_join == FOREIGN_KEY
    # a foreign-key join's rows are keyed by the left table's primary key (`__pk`, beside the
    # foreign key), the later tables' by theirs
    left_keys = [ast.ColumnRef(c.name) for c in plan.inputs[0].source.key_columns]
    primary = [left_keys, None, *([e] for e in join_exprs[2:])] if foreign else [None] * len(join_exprs)
    messages, sides, schemas = [], [], []
    for index, (side, on) in enumerate(zip(plan.inputs, join_exprs)):
        side_raw = raw if index == 0 else read(side.source, True)
        frame = without_errors(logical_frame(side_raw, side.source), f"__errors_{index}")
        compiler = Compiler(Scope(frame, set(side.visible), set(side.qualifiers), plan.dialect))
        key = compiler.compile(on)
        columns = {name: f"__s{index}_{name}" for name in side.visible}
        row = F.struct(*[F.col(quoted(n)).alias(c) for n, c in columns.items()], F.col(RAW_HEADERS))
        # as JSON text: pandas reads an integer column holding NULLs as floats
        pk = [F.to_json(F.struct(*(compiler.compile(e).alias(f"k{i}") for i, e in enumerate(primary[index]))))
              if primary[index] is not None else F.lit(None).cast("string")] if foreign else []
        if index == 0 and foreign:
            left_key_type = frame.select(compiler.compile(left_keys[0]).alias("k")).schema["k"].dataType
        messages.append(frame.select(
            F.lit(index).alias("__side"), (F.lit(None) if foreign and index >= 2 else key).alias("__jk"),
            *[c.alias("__pk") for c in pk], F.to_json(row).alias("__row"),
            F.unix_millis(F.col(RAW_TIMESTAMP)).alias("__rt"), F.col(OFFSET).alias("__order"),
            F.col(TOMBSTONE).alias("__tomb"), F.col(RAW_KEY).alias("__lk")))
        sides.append((side.qualifiers, columns))
        schemas.append(frame.select(row.alias("r")).schema["r"].dataType)
    key_type = messages[0].schema["__jk"].dataType
    kinds = [join.kind for join in joins]
    if foreign:
        step, state = _foreign_key_step(*kinds), FOREIGN_STATE
    else:
        step, state = _primary_key_step(*kinds), PRIMARY_STATE
    changes = messages[0]
    for message in messages[1:]:
        message = message.withColumn("__jk", F.col("__jk").cast(key_type))
        changes = changes.unionByName(message)
    # a table's NULL key is its envelope's concern; a NULL foreign key is a left row without a match
    keep = F.col("__jk").isNotNull()
    if foreign:
        side = F.col("__side")
        keep = (side == 0) | ((side == 1) & keep) | ((side >= 2) & F.col("__pk").isNotNull())
    changes = changes.where(keep)
    result = T.StructType([*(T.StructField(c, T.StringType()) for c in row_columns(len(messages))),
                           T.StructField("__rt", T.LongType()), T.StructField("__hside", T.IntegerType()),
                           T.StructField("__tomb", T.BooleanType()), T.StructField("__jk", key_type),
                           *([T.StructField("__pk", T.StringType())] if foreign else [])])
    # a foreign-key join meets in one group: a left row moving to another foreign key must leave
    # its old one, and Spark runs one stateful step per streaming query
    group = F.lit(0) if foreign else F.pmod(F.xxhash64("__jk"), F.lit(BUCKETS))
    joined = changes.withColumn("__group", group).groupBy("__group").applyInPandasWithState(
        step, result, state, "append", GroupStateTimeout.NoTimeout)
    keys = [] if foreign else [next(c for n, c in columns.items() if n.lower() == on.name.lower())
                               for on, (_, columns) in zip(join_exprs, sides)]
    if foreign and len(left_keys) == 1:  # the left table's key, back from its JSON text
        pk_type = T.StructType([T.StructField("k0", left_key_type)])
        joined = joined.withColumn("__jk", F.from_json(F.col("__pk"), pk_type)["k0"])
    return _rows(joined, schemas, sides, plan, keys, keyed=not foreign or len(left_keys) == 1)


def _rows(joined: DataFrame, schemas, sides, plan: QueryPlan, keys, keyed: bool) -> tuple[DataFrame, JoinScope]:
    """The emitted JSON rows back to columns, with the output record's bookkeeping. A tombstone
    of a primary-key join names its key on every table (`keys`: each table's key column), and
    the join key is the `keyed` frame's JOIN_KEY column (a table missing from the row has none)."""
    rows = [F.from_json(F.col(c), s) for c, s in zip(row_columns(len(schemas)), schemas)]
    values = [(F.when(F.col("__tomb"), F.col("__jk")).otherwise(row[c]) if c in keys else row[c]).alias(c)
              for row, (_, columns) in zip(rows, sides) for c in columns.values()]
    headers = rows[-1][RAW_HEADERS]
    for index in range(len(rows) - 2, -1, -1):
        headers = F.when(F.col("__hside") == index, rows[index][RAW_HEADERS]).otherwise(headers)
    frame = joined.select(
        *values, *([F.col("__jk").alias(JOIN_KEY)] if keyed else []),
        F.lit(None).cast("string").alias(ERROR), F.lit(False).alias(DROP),
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
    """One key's changes in order: each table's by offset, the tables merged by record time
    (`side`, `order`, `time`: where a change holds them, names for dicts, indexes for tuples)."""
    import heapq

    by_side = [sorted((c for c in changes if c[side] == i), key=lambda c: c[order])
               for i in sorted({c[side] for c in changes})]
    return heapq.merge(*by_side, key=lambda c: c[time])


def _emitted(key, rows, time, side, tomb=False):
    return {**dict(zip(row_columns(len(rows)), rows)), "__rt": time, "__hside": side, "__tomb": tomb, "__jk": key}


def _later(*times):
    known = [t for t in times if t is not None]
    return max(known) if known else None


#: Join kind -> whether a result row exists, given (left row present, right row present).
PRESENT = {"INNER": lambda l, r: l and r, "LEFT": lambda l, r: l, "RIGHT": lambda l, r: r,
           "FULL": lambda l, r: l or r}


def joined_tables(kinds, rows) -> set[int] | None:
    """The tables a key's result row is made of, joined left-deep as ksqlDB does (`kinds`: the
    joins in order; `rows`: each table's row, None when absent); None: no result row."""
    joined = {0} if rows[0] is not None else None
    for right, kind in enumerate(kinds, 1):
        here = rows[right] is not None
        joined = (joined or set()) | ({right} if here else set()) if PRESENT[kind](joined is not None, here) else None
    return joined


def _primary_key_step(*kinds: str):
    """One bucket's changes -> the changed result rows, the tables joined on their primary keys
    by `kinds` (one per join). The bucket's state holds, per join key (as `_text`), the latest
    row and time of each table (PRIMARY_STATE). A change emits its key's new row when the table
    changed is or was part of it, or a tombstone when the row goes."""
    tables = len(kinds) + 1

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
            kept = rows.pop(text, None) or [None] * (2 * tables)
            current, times = kept[0::2], kept[1::2]
            for side, key, row, at, _, tomb in _merged(changes, side=0, order=4, time=3):
                last, before = list(current), joined_tables(kinds, current)
                current[side], times[side] = (None if tomb else row), at
                after = joined_tables(kinds, current)
                if after is not None and (side in after or side in (before or ())):
                    out.append(_emitted(key, [current[i] if i in after else None for i in range(tables)],
                                        _later(at, *(times[i] for i in after)), side))
                elif after is None and before is not None:  # the row goes: its last rows carry the headers
                    gone = [row if i == side else last[i] if i in before else None for i in range(tables)]
                    out.append(_emitted(key, gone, _later(at, *(times[i] for i in before if i != side)), side,
                                        tomb=True))
            if any(r is not None for r in current):
                rows[text] = [value for pair in zip(current, times) for value in pair]
        if rows:
            state.update((json.dumps(rows),))
        else:
            state.remove()
        yield pd.DataFrame(out, columns=[*row_columns(tables), *RECORD_COLUMNS])

    return step


def _foreign_key_step(kind: str, *more: str):
    """All the changes (one group) -> the changed result rows of a foreign-key join (`kind`) and
    the joins on the left table's primary key after it (`more`). The state holds every left row
    with its foreign key (and its primary key as JSON text), every right row, and each later
    table's rows by primary key. A left or right change emits each row it touches, or a
    tombstone where the row is gone or never was (Kafka Streams' foreign-key join cannot tell);
    a later table's change emits as a primary-key join does. Each row carries its primary key
    (`__pk`): a later RIGHT or FULL join's row may have no left row to name it."""
    kinds = (kind, *more)
    tables = len(kinds) + 1

    def step(key, chunks, state):
        import pandas as pd

        stored = json.loads(state.get[0]) if state.exists else {"lefts": {}, "rights": {}}
        # left key -> [fk, row, time, primary key]; right key -> [row, time]; later tables: primary key -> [row, time]
        lefts, rights = stored["lefts"], stored["rights"]
        later = [stored.setdefault(f"t{i}", {}) for i in range(2, tables)]
        pointing: dict[str, set] = {}
        owners: dict[str, str] = {}  # a left row's primary key -> its left key
        for left_key, (fk, _, _, *pk) in lefts.items():
            pointing.setdefault(fk, set()).add(left_key)
            owners.update({pk[0]: left_key} if pk else {})

        def result(pk, left_key=None):
            """(the tables in the result row of primary key `pk` (of left row `left_key`), or None;
            each table's row; each table's time)"""
            left = lefts.get(owners.get(pk) if left_key is None else left_key)
            fk, row, at = left[:3] if left is not None else (None, None, None)
            found = [rights.get(fk, [None, None]) if left is not None else [None, None],
                     *(t.get(pk, [None, None]) for t in later)]
            rows, times = [row, *(f[0] for f in found)], [at, *(f[1] for f in found)]
            return joined_tables(kinds, rows), rows, times

        def row_of(pk, joined, rows, times, at, side):
            return {**_emitted(None, [rows[i] if i in joined else None for i in range(tables)],
                               _later(at, *(times[i] for i in joined)), side), "__pk": pk}

        def gone(pk, rows, change, times):
            side = change["__side"]
            return {**_emitted(None, [change["__row"] if i == side else rows[i] for i in range(tables)],
                               _later(change["__rt"], times[0] if side else None), side, tomb=True), "__pk": pk}

        out = []
        for change in _merged(pd.concat(list(chunks)).to_dict("records")):
            side, at = change["__side"], change["__rt"]
            if side >= 2:  # a later table's row, keyed like the left table
                pk = change["__pk"]
                before = result(pk)[0]
                if change["__tomb"]:
                    later[side - 2].pop(pk, None)
                else:
                    later[side - 2][pk] = [change["__row"], at]
                joined, rows, times = result(pk)
                if joined is not None and (side in joined or side in (before or ())):
                    out.append(row_of(pk, joined, rows, times, at, side))
                elif joined is None and before is not None:
                    out.append(gone(pk, rows, change, times))
                continue
            fk = _loose_text(change["__jk"])
            if side == 1:
                if change["__tomb"]:
                    rights.pop(fk, None)
                else:
                    rights[fk] = [change["__row"], at]
                for left_key in sorted(pointing.get(fk, ())):
                    pk = lefts[left_key][3] if len(lefts[left_key]) > 3 else None
                    joined, rows, times = result(pk, left_key)
                    out.append(gone(pk, rows, change, times) if joined is None
                               else row_of(pk, joined, rows, times, at, 1))
                continue
            left_key, pk = _text(change["__lk"]), change["__pk"]
            old = lefts.pop(left_key, None)
            if old is not None:
                pointing.get(old[0], set()).discard(left_key)
                owners.pop(old[3] if len(old) > 3 else None, None)
            if change["__tomb"]:
                if old is not None:  # the deleted row's last result goes (a later RIGHT join's row stays)
                    joined, rows, times = result(pk)
                    out.append(gone(pk, [None] * tables, change, [None] * tables) if joined is None
                               else row_of(pk, joined, rows, times, at, 0))
                continue
            lefts[left_key] = [fk, change["__row"], at, pk]
            pointing.setdefault(fk, set()).add(left_key)
            owners[pk] = left_key
            joined, rows, times = result(pk)
            out.append(gone(pk, [None] * tables, change, [None] * tables) if joined is None
                       else row_of(pk, joined, rows, times, at, 0))
        state.update((json.dumps(stored),))
        yield pd.DataFrame(out, columns=[*row_columns(tables), *RECORD_COLUMNS, "__pk"])

    return step


def _loose_text(value) -> str:
    """`_text` of a value from a pandas column that may hold NULLs: pandas reads such an integer
    column as floats (NaN for NULL), so a whole float is the integer it was (exact up to 2**53)."""
    if isinstance(value, float):
        value = None if value != value else int(value) if value.is_integer() else value
    return _text(value)


def _text(value) -> str:
    """A key as text for the state's JSON: bytes in base64, anything else as JSON."""
    import base64

    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode()
    return json.dumps(value, default=str, sort_keys=True)
