"""A foreign-key join of two tables (`l JOIN r ON l.fk = r.pk`, INNER or LEFT) as two keyed
steps chained in one streaming query (Spark runs stateful steps one after the other in Append
mode), so the state spreads over keys instead of one group holding both tables:

1. `ForeignKeyMoves`, keyed by the left table's primary key (`transformWithStateInPandas` over
   hash buckets, a MapState of each left row's foreign key): a left change becomes a message
   to the foreign key it leaves (`MOVED`, only when the row was under another one, or is
   deleted) and one to the foreign key it joins (`PUT`); the right table's changes pass
   through.
2. `ForeignKeyRows`, keyed by the foreign key (the Row API `transformWithState`: per-record
   branches, grouped by the real key): a ValueState holding the right row, a MapState of the
   left rows under it. A left row joining emits its result row, a deleted left row its
   tombstone, and a right change re-emits every left row under it (a tombstone where an INNER
   join loses its match), as Kafka Streams' foreign-key join does.
3. `ResultsInOrder`, keyed by a hash bucket of the left key (a pandas step with no state): a left
   row's versions of one micro-batch reach different foreign keys, whose results come from
   different groups, in any order; this step puts each left row's results in the order of the
   changes that made them (time, the left table's before the right's at the same time, offset),
   so the sink writes its last version's join last.

Per micro-batch the state calls follow the changes: one read and one write per left key, and per
foreign key one read of its right row, one write per left row changed, and a scan of its left
rows only when its right row changes. A row is JSON text of its columns and headers (`m_row`);
each output row names its left key (`m_pk`, JSON text)."""

from __future__ import annotations

import heapq

import pandas as pd
from pyspark.sql import Row
from pyspark.sql import types as T
from pyspark.sql.streaming import StatefulProcessor

from .rows import later
from .state_spark import CAUSE_TIME, ORDER, in_order

#: `m_side` of a message: a left row joining its foreign key, a right change, a left row
#: leaving its foreign key (moved elsewhere, or deleted when `m_tomb`).
PUT, RIGHT, MOVED = 0, 1, 2
#: The columns of a message between the steps.
MESSAGE_COLUMNS = ["m_side", "m_jk", "m_pk", "m_row", "m_rt", "m_order", "m_tomb"]
#: What a result row says of the change that made it: its time, its table (0 left, 1 right), its offset.
CAUSE = {CAUSE_TIME: T.LongType(), "m_cside": T.IntegerType(), "m_corder": T.LongType()}
#: Left keys are spread over this many groups in the first step.
BUCKETS = 64
#: The state layout of a foreign-key join of two tables, as a persistent query's checkpoint records
#: it (before, `BUCKETS`: the two steps, with no step putting each left key's results in order).
LAYOUT = f"left keys in {BUCKETS} hash buckets, then by foreign key, then each left key's results in order"
#: The layout of a foreign-key join followed by joins on the left table's key (before: every
#: table's rows as JSON in one group).
CHAIN_LAYOUT = f"{LAYOUT}, then with the later tables by left key in {BUCKETS} hash buckets"


class ForeignKeyMoves(StatefulProcessor):
    """A bucket of left keys: each left row's current foreign key; left changes -> messages."""

    def __init__(self, key_type: T.DataType):
        self.fk_schema = T.StructType([T.StructField("fk", key_type)])
        self.integral = isinstance(key_type, (T.ByteType, T.ShortType, T.IntegerType, T.LongType))

    def init(self, handle) -> None:
        self.fks = handle.getMapState("fks", T.StructType([T.StructField("pk", T.StringType())]), self.fk_schema)

    def handleInputRows(self, key, rows, timerValues):
        frame = pd.concat(list(rows), ignore_index=True)
        right = frame["m_side"] == RIGHT
        out = [frame.loc[right, MESSAGE_COLUMNS]]
        lefts = frame[~right].sort_values("m_order", kind="stable")
        messages = []
        for pk, changes in lefts.groupby("m_pk", sort=False):
            stored = self.fks.getValue((pk,))
            here, fk = stored is not None, (stored[0] if stored is not None else None)
            for change in changes.to_dict("records"):
                new = _plain(change["m_jk"], self.integral)
                if here and (change["m_tomb"] or new != fk):
                    messages.append({**change, "m_side": MOVED, "m_jk": fk})
                here = not change["m_tomb"]
                if here:
                    messages.append({**change, "m_side": PUT, "m_jk": new})
                    fk = new
            if here:
                self.fks.updateValue((pk,), (fk,))
            elif stored is not None:
                self.fks.removeKey((pk,))
        out.append(pd.DataFrame(messages, columns=MESSAGE_COLUMNS))
        yield pd.concat(out, ignore_index=True)

    def close(self) -> None:
        pass


class ForeignKeyRows(StatefulProcessor):
    """One foreign key: the right row it names and the left rows under it (`kind`: INNER or LEFT)."""

    def __init__(self, kind: str):
        self.keeps_unmatched = kind == "LEFT"
        self.out = Row("m_t0", "m_t1", "m_rt", "m_hside", "m_tomb", "m_jk", "m_pk", *CAUSE)

    def init(self, handle) -> None:
        row = T.StructType([T.StructField("row", T.StringType()), T.StructField("at", T.LongType())])
        self.right = handle.getValueState("right", row)
        self.lefts = handle.getMapState("lefts", T.StructType([T.StructField("pk", T.StringType())]), row)

    def handleInputRows(self, key, rows, timerValues):
        messages = [r.asDict() for r in rows]
        lefts = sorted((m for m in messages if m["m_side"] != RIGHT), key=lambda m: m["m_order"])
        rights = sorted((m for m in messages if m["m_side"] == RIGHT), key=lambda m: m["m_order"])
        right = self.right.get()
        right_row, right_at = right if right is not None else (None, None)
        fk = key[0]
        for m in heapq.merge(lefts, rights, key=lambda m: m["m_rt"]):
            at, pk = m["m_rt"], m["m_pk"]
            if m["m_side"] == RIGHT:
                right_row, right_at = (None, None) if m["m_tomb"] else (m["m_row"], at)
                for left_pk, (left_row, left_at) in sorted(self.lefts.iterator()):
                    yield self._row(fk, left_pk[0], left_row, left_at, right_row, right_at, m, RIGHT)
            elif m["m_side"] == MOVED:
                self.lefts.removeKey((pk,))
                if m["m_tomb"]:  # the deleted row's result goes
                    yield self.out(m["m_row"], None, at, PUT, True, fk, pk, *_cause(m))
            else:
                self.lefts.updateValue((pk,), (m["m_row"], at))
                yield self._row(fk, pk, m["m_row"], at, right_row, right_at, m, PUT)
        if rights:
            if right_row is None:
                self.right.clear()
            else:
                self.right.update((right_row, right_at))

    def _row(self, fk, pk, left_row, left_at, right_row, right_at, change, side):
        """A left row's result after `change` (from table `side`): joined, or a tombstone where an
        INNER join has no right row (the change's row carries its headers)."""
        cause = _cause(change)
        if right_row is not None or self.keeps_unmatched:
            return self.out(left_row, right_row, later(change["m_rt"], left_at, right_at), side, False, fk, pk, *cause)
        if side == RIGHT:
            return self.out(left_row, change["m_row"], later(change["m_rt"], left_at), side, True, fk, pk, *cause)
        return self.out(change["m_row"], None, change["m_rt"], side, True, fk, pk, *cause)

    def close(self) -> None:
        pass


def _cause(change: dict) -> tuple:
    """The `CAUSE` columns of a result row `change` made."""
    return change["m_rt"], int(change["m_side"] == RIGHT), change["m_order"]


class ResultsInOrder(StatefulProcessor):
    """A bucket of left keys' result rows, in the order of the changes that made them."""

    def __init__(self, order: list[str], place: str):
        self.order = order  # the step's names of the CAUSE columns
        self.place = place  # its name of the column of each row's place in the output

    def init(self, handle) -> None:
        pass

    def handleInputRows(self, key, rows, timerValues):
        yield in_order(pd.concat(list(rows), ignore_index=True).sort_values(self.order, kind="stable"), key[0],
                       self.place)

    def close(self) -> None:
        pass


def _plain(value, integral: bool):
    """A pandas cell as Python: NULL for NaN, an integer key as an int (pandas reads an integer
    column holding NULLs as floats)."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and value != value:
        return None
    return int(value) if integral and value is not None else value


def foreign_key_joined(changes, kind: str, key_type: T.DataType, result: T.StructType):
    """The changes of both tables (`MESSAGE_COLUMNS`: `m_side` 0 the left table, 1 the right;
    `m_jk` the foreign key or the right key; `m_pk` the left key) -> the result rows (`result`),
    each left key's in the order of their changes (`ORDER`: each row's place; `CAUSE_TIME`: its
    change's time). Their `m_jk` is NULL: a result row is known by its left key."""
    from pyspark.sql import functions as F

    from ..pandas_step.exact_spark import through_pandas

    fields = dict(zip(MESSAGE_COLUMNS, [T.IntegerType(), key_type, T.StringType(), T.StringType(), T.LongType(),
                                        T.LongType(), T.BooleanType()]))
    messages = T.StructType([T.StructField(name, data_type) for name, data_type in fields.items()])
    side = F.col("m_side")
    bucket = F.pmod(F.when(side == RIGHT, F.xxhash64("m_jk")).otherwise(F.xxhash64("m_pk")), F.lit(BUCKETS))
    moved = changes.select(*(F.col(n).cast(t).alias(n) for n, t in fields.items())).withColumn("m_bucket", bucket) \
        .groupBy("m_bucket").transformWithStateInPandas(ForeignKeyMoves(key_type), messages, "Append", "None")
    made = T.StructType([*result.fields, *(T.StructField(name, data_type) for name, data_type in CAUSE.items())])
    rows = moved.groupBy("m_jk").transformWithState(ForeignKeyRows(kind), made, "Append", "None")
    rows = rows.withColumn("m_jk", F.lit(None).cast(key_type)).withColumn(
        "m_bucket", F.pmod(F.xxhash64("m_pk"), F.lit(BUCKETS)))
    ordered = through_pandas(rows, ["m_bucket"], lambda at: ResultsInOrder([at[name] for name in CAUSE], at[ORDER]),
                             {ORDER: T.LongType()}, exact=("m_bucket", *CAUSE), output_mode="Append",
                             time_mode="None")
    return ordered.select(*result.fieldNames(), ORDER, CAUSE_TIME)
