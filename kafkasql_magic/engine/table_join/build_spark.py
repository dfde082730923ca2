"""Table-table joins as changelogs (Kafka Streams' KTable-KTable joins), in Spark state.

Every table streams every change, tombstones too. Each table's change becomes a message: its
table, its join key, its row as JSON (with its headers) and its time. Two tables or more
(`t1 JOIN t2 ON ... LEFT JOIN t3 ON ...`) on their primary keys: every join is on the same
key, so the result row of a key is its tables' rows joined left-deep (`rows.joined_tables`), as
ksqlDB does. The messages of all the tables meet in one `transformWithStateInPandas`
(`state_spark.PrimaryKeyJoin`), grouped by a hash bucket of join keys, whose MapState holds
each key's latest row of each table (checkpointed by Spark like any stateful operator, so a
persistent query resumes with it). A change emits the key's new result row, or a tombstone
when the row goes (an INNER join losing its match, a LEFT join losing its left row, every
table deleted in a FULL join), with the last rows' key columns and every other column NULL.

A foreign-key join (`ON l.fk = r.pk`) emits rows keyed by the left table's key: a left change
joins the right row its foreign key names, a right change re-emits every left row pointing at
it, a left row whose foreign key changes leaves its old right row. Two tables: keyed steps
chained in the query (`foreign_key_spark.py`), by the left key, then by the foreign key, then by
the left key again. A foreign-key join may start a chain (ksqlDB's rule): its result rows (its
two tables' rows in one, `_chained`) are then the first table of a primary-key join step with
the tables joined after it on the left table's key, keyed by that key's JSON text (`m_pk`), as
Kafka Streams joins the foreign-key join's KTable with the next one.

The output record's time is the latest of the change's and the joined rows' times (Kafka
Streams' rule for table joins), its headers those of the change that caused it.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ...sql import ast
from ..analysis.plan import QueryPlan
from .foreign_key_spark import foreign_key_joined
from .kinds import FOREIGN_KEY, join_sides
from .state_spark import BUCKETS, CAUSE_TIME, CHANGE_COLUMNS, ORDER, PrimaryKeyJoin, row_columns
from ..columns import (DROP, ERROR, OFFSET, PARTITION, RAW_HEADERS, RAW_KEY, RAW_TIMESTAMP, RAW_VALUE, TOMBSTONE,
                       TOPIC, result_column)
from ..decode.rows_spark import logical_frame
from ..expressions.compile_spark import Compiler, JoinScope, Scope, quoted
from ..join_key.column_spark import JOIN_KEY
from ..pandas_step.exact_spark import arrived, travel_type, travelling


#: The columns of a joined row that an aggregation over the join takes as a table's key, offset
#: and partition (`_rows`): the result row it is a version of, its place among the step's rows,
#: the time of the change that made it.
JOIN_ROW, JOIN_ORDER, JOIN_TIME = "__join_row", "__join_order", "__join_time"


def table_joined(plan: QueryPlan, raw: DataFrame, read, without_errors) -> tuple[DataFrame, JoinScope]:
    """The tables' changelogs joined: the frame of the joined rows (`__s{i}_{name}` columns and
    bookkeeping) and the scope that resolves the query's names over it."""
    joins = plan.statement.joins
    ons = [join_sides(join.on, plan.inputs, number + 1) for number, join in enumerate(joins)]
    # each table's side of its ON clause: the first table's in the first join, then each joined table's
    join_exprs = [ons[0][0], *(right for _, right in ons)]
    foreign = plan.table_join == FOREIGN_KEY
    # a foreign-key join's rows are keyed by the left table's primary key (`m_pk`, beside the
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
            F.lit(index).alias("m_side"), (F.lit(None) if foreign and index >= 2 else key).alias("m_jk"),
            *[c.alias("m_pk") for c in pk], F.to_json(row).alias("m_row"),
            F.unix_millis(F.col(RAW_TIMESTAMP)).alias("m_rt"), F.col(OFFSET).alias("m_order"),
            F.col(TOMBSTONE).alias("m_tomb"), F.col(RAW_KEY).alias("m_lk")))
        sides.append((side.qualifiers, columns))
        schemas.append(frame.select(row.alias("r")).schema["r"].dataType)
    key_type = messages[0].schema["m_jk"].dataType
    kinds = [join.kind for join in joins]
    changes = messages[0]
    for message in messages[1:]:
        message = message.withColumn("m_jk", F.col("m_jk").cast(key_type))
        changes = changes.unionByName(message)
    # a table's NULL key is its envelope's concern; a NULL foreign key is a left row without a match
    keep = F.col("m_jk").isNotNull()
    if foreign:
        side = F.col("m_side")
        keep = (side == 0) | ((side == 1) & keep) | ((side >= 2) & F.col("m_pk").isNotNull())
    # the join key as the pandas steps carry it exactly (a left row's NULL foreign key beside BIGINTs)
    changes = changes.where(keep).withColumn("m_jk", travelling(F.col("m_jk"), key_type))
    key_type, joined_key_type = travel_type(key_type), key_type
    result = T.StructType([*(T.StructField(c, T.StringType()) for c in row_columns(len(messages))),
                           T.StructField("m_rt", T.LongType()), T.StructField("m_hside", T.IntegerType()),
                           T.StructField("m_tomb", T.BooleanType()), T.StructField("m_jk", key_type),
                           *([T.StructField("m_pk", T.StringType())] if foreign else [])])
    if foreign and len(kinds) == 1:
        joined = foreign_key_joined(changes, kinds[0], key_type, result)
    elif foreign:
        joined = _chained(changes, kinds, key_type, result)
    else:
        step = PrimaryKeyJoin(kinds, key_type)
        placed = T.StructType([*result.fields, *(T.StructField(c, T.LongType()) for c in (ORDER, CAUSE_TIME))])
        joined = changes.select(*CHANGE_COLUMNS).withColumn("m_bucket", F.pmod(F.xxhash64("m_jk"), F.lit(BUCKETS))) \
            .groupBy("m_bucket").transformWithStateInPandas(step, placed, "Append", "None")
    keys = [] if foreign else [next(c for n, c in columns.items() if n.lower() == on.name.lower())
                               for on, (_, columns) in zip(join_exprs, sides)]
    if not foreign:
        joined = joined.withColumn("m_jk", arrived(F.col("m_jk"), joined_key_type))
    elif len(left_keys) == 1:  # a foreign-key join's rows name no join key: the left table's, from its JSON text
        pk_type = T.StructType([T.StructField("k0", left_key_type)])
        joined = joined.withColumn("m_jk", F.from_json(F.col("m_pk"), pk_type)["k0"])
    # which result row a row is a version of: its left key's JSON text, or its join key
    row = F.col("m_pk") if foreign else F.to_json(F.struct(F.col("m_jk").alias("k")))
    joined = joined.withColumns({JOIN_ROW: row, JOIN_ORDER: F.col(ORDER), JOIN_TIME: F.col(CAUSE_TIME)})
    return _rows(joined, schemas, sides, plan, keys, keyed=not foreign or len(left_keys) == 1)


#: A foreign-key join's result row as the first table of the joins after it: its two tables'
#: rows and the table its headers come from.
PAIR = T.StructType([T.StructField("m_t0", T.StringType()), T.StructField("m_t1", T.StringType()),
                     T.StructField("m_hside", T.IntegerType())])


def _chained(changes: DataFrame, kinds, key_type: T.DataType, result: T.StructType) -> DataFrame:
    """A foreign-key join (`kinds[0]`, tables 0 and 1) then joins on the left table's key with the
    later tables: the foreign-key join's rows, each a pair of rows under its left key, join the
    later tables' changes in `PrimaryKeyJoin` (`kinds[1:]`), keyed by the left key's JSON text
    (`m_pk`, which the later tables' changes carry for their key), in hash buckets. -> `result`'s
    rows, each left key's in the order of their changes."""
    tables = len(kinds) + 1
    later_rows = row_columns(tables)[2:]
    pair = T.StructType([f for f in result.fields if f.name not in later_rows])
    first = foreign_key_joined(changes.where(F.col("m_side") <= 1), kinds[0], key_type, pair)
    firsts = first.select(F.col("m_pk").alias("m_jk"), F.lit(0).alias("m_side"),
                          F.to_json(F.struct(*PAIR.fieldNames())).alias("m_row"), "m_rt",
                          F.col(ORDER).alias("m_order"), "m_tomb")
    laters = changes.where(F.col("m_side") >= 2).select(
        F.col("m_pk").alias("m_jk"), (F.col("m_side") - 1).alias("m_side"), "m_row", "m_rt", "m_order", "m_tomb")
    out = T.StructType([*(T.StructField(c, T.StringType()) for c in row_columns(tables - 1)),
                        T.StructField("m_rt", T.LongType()), T.StructField("m_hside", T.IntegerType()),
                        T.StructField("m_tomb", T.BooleanType()), T.StructField("m_jk", T.StringType()),
                        *(T.StructField(c, T.LongType()) for c in (ORDER, CAUSE_TIME))])
    step = PrimaryKeyJoin(kinds[1:], T.StringType())
    joined = firsts.unionByName(laters).select(*CHANGE_COLUMNS) \
        .withColumn("m_bucket", F.pmod(F.xxhash64("m_jk"), F.lit(BUCKETS))) \
        .groupBy("m_bucket").transformWithStateInPandas(step, out, "Append", "None")
    rows = F.from_json(F.col("m_t0"), PAIR)
    side = F.col("m_hside")
    return joined.select(
        rows["m_t0"].alias("m_t0"), rows["m_t1"].alias("m_t1"),
        *(F.col(f"m_t{i - 1}").alias(f"m_t{i}") for i in range(2, tables)), "m_rt",
        F.when(side == 0, rows["m_hside"]).otherwise(side + 1).alias("m_hside"), "m_tomb",
        F.lit(None).cast(key_type).alias("m_jk"), F.col("m_jk").alias("m_pk"), ORDER, CAUSE_TIME)


def _rows(joined: DataFrame, schemas, sides, plan: QueryPlan, keys, keyed: bool) -> tuple[DataFrame, JoinScope]:
    """The emitted JSON rows back to columns, with the output record's bookkeeping. A tombstone
    of a primary-key join names its key on every table (`keys`: each table's key column), and
    the join key is the `keyed` frame's JOIN_KEY column (a table missing from the row has none).
    Each row names the result row it is a version of (`JOIN_ROW`), its place among the step's
    rows of the micro-batch (`JOIN_ORDER`) and the time of the change that made it (`JOIN_TIME`)."""
    rows = [F.from_json(F.col(c), s) for c, s in zip(row_columns(len(schemas)), schemas)]
    values = [(F.when(F.col("m_tomb"), F.col("m_jk")).otherwise(row[c]) if c in keys else row[c]).alias(c)
              for row, (_, columns) in zip(rows, sides) for c in columns.values()]
    headers = rows[-1][RAW_HEADERS]
    for index in range(len(rows) - 2, -1, -1):
        headers = F.when(F.col("m_hside") == index, rows[index][RAW_HEADERS]).otherwise(headers)
    frame = joined.select(
        *values, *([F.col("m_jk").alias(JOIN_KEY)] if keyed else []),
        F.lit(None).cast("string").alias(ERROR), F.lit(False).alias(DROP),
        F.lit(None).cast("string").alias(TOPIC), F.lit(None).cast("int").alias(PARTITION),
        F.lit(None).cast("bigint").alias(OFFSET), F.lit(None).cast("binary").alias(RAW_KEY),
        F.lit(None).cast("binary").alias(RAW_VALUE), headers.alias(RAW_HEADERS),
        F.timestamp_millis(F.col("m_rt")).alias(RAW_TIMESTAMP), F.col("m_tomb").alias(TOMBSTONE),
        F.col(JOIN_ROW), F.col(JOIN_ORDER), F.col(JOIN_TIME))
    return frame, JoinScope(frame, set(), set(), plan.dialect, sides=list(sides))


def tombstoned(plan: QueryPlan, frame: DataFrame) -> DataFrame:
    """A tombstone keeps only the result's key columns: the rest is NULL, as a deleted row."""
    keys = set(plan.keys)
    return frame.withColumns({result_column(i): F.when(~F.col(TOMBSTONE), F.col(result_column(i)))
                              for i, name in enumerate(plan.names) if name not in keys})
