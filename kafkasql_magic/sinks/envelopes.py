"""A Materialize sink's records: its relation's changes as UPSERT or DEBEZIUM envelopes.

UPSERT writes a changed row under its KEY, and a deleted row (a tombstone of the relation's
changelog) as a record with the key, a NULL value and the deleted row's headers. DEBEZIUM
writes `{"before": old, "after": new}`: an insert has no before, a delete no after (and no
tombstone follows it, as in Materialize). A relation of diffs (a view that joins) pairs a retraction and an insertion of
one KEY at one time into an update (`diff_rows.debezium_pairs`). For a relation with a unique key
(a table, a GROUP BY) the old row is the key's previous row. A changelog read as it is (an UPSERT
source, a writable table, views that project and filter it) keeps it in Spark's keyed state: a
step keyed by the relation's key before the records (`engine.api.previous_rows`, `keyed`), held
on the executors and checkpointed with the query. A relation that aggregates or joins tables
has no such step yet (an aggregation's rows come from a streaming aggregation in update mode,
after which Spark refuses a keyed step, or from a plan built per micro-batch): its previous rows
are a Spark frame (`DebeziumState`), looked up by a join (the driver never collects rows) and
saved (Parquet) beside the query's checkpoint, under its batch id, so a restarted sink pairs
with the rows as they were after the batch before the one it runs. A writable table's changelog
(engine.analysis.row_ids) pairs its rows by their row ids so, for UPSERT too: a delete or a
changed KEY writes a tombstone under the old row's KEY.

`MaterializeSinkWrite` has the interface `runner.PersistentQuery` writes through
(`records`, `options`, `sink`), so a sink is a persistent query like any other.
"""

from __future__ import annotations

import functools
import os
import shutil
from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from .. import clientconf
from ..catalog import KEY, VALUE, Column as CatalogColumn, SourceDef
from ..dialects.materialize_sinks import RESERVED_HEADER_PREFIX, SinkSpec
from ..engine.columns import RAW_KEY, RAW_TIMESTAMP, TOMBSTONE, result_column
from ..formats import FormatSpec
from . import diff_rows, mz_encode
from .mz_encode import AvroWriter
from .snapshot import LeftOutSnapshot

_BEFORE, _AFTER = diff_rows.BEFORE, diff_rows.AFTER
_SEQ, _RANK = "__seq", "__rank"
#: The row a record writes, or deletes: what a PARTITION BY is computed over.
_ROW = "__row"


def header_entries(column: Column, value_type: str) -> Column:
    """A map[text => text|bytea] column as record headers, without Materialize's reserved keys."""
    kept = F.filter(F.map_entries(column), lambda e: ~e["key"].startswith(RESERVED_HEADER_PREFIX))
    as_bytes = (lambda v: F.encode(v, "UTF-8")) if value_type == "STRING" else (lambda v: v)
    return F.transform(kept, lambda e: F.struct(e["key"].alias("key"), as_bytes(e["value"]).alias("value")))


@dataclass
class DebeziumState:
    """The latest row per relation key, carried from one micro-batch to the next and saved in
    `folder/<batch id>` (only the last two batches' are kept): a Debezium record's `before`, an
    upsert tombstone's headers."""

    keys: tuple[str, ...]
    rows: DataFrame | None = None
    folder: str | None = None
    _after_batch: int | None = None  # the batch whose rows `rows` are; None: none yet
    _batch: int | None = None  # the batch running

    def at_batch(self, spark, folder: str, batch_id: int) -> None:
        """Before batch `batch_id`: the rows as saved after the batch before it, unless held."""
        self.folder, self._batch = folder, batch_id
        if self._after_batch == batch_id - 1 and self.rows is not None:
            return
        saved = _saved_batches(folder, below=batch_id)
        self.rows = spark.read.parquet(os.path.join(folder, str(saved[-1]))) if saved else None
        self._after_batch = saved[-1] if saved else None

    def paired(self, staged: DataFrame) -> DataFrame:
        """`staged` (key columns, __after, __seq) with __before: the key's previous row, from
        earlier in the batch or from the state; the state then holds each key's newest row."""
        keys = [F.col(k) for k in self.keys]
        in_order = Window.partitionBy(*keys).orderBy(_SEQ)
        staged = (staged.withColumn("__prev", F.lag(_AFTER).over(in_order))
                  .withColumn(_RANK, F.row_number().over(in_order)))
        if self.rows is not None:
            staged = staged.join(self.rows.withColumnRenamed(_AFTER, "__stored"), list(self.keys), "left")
            first = F.col("__stored")
        else:
            first = F.lit(None).cast(staged.schema[_AFTER].dataType)
        paired = staged.withColumn(_BEFORE, F.when(F.col(_RANK) == 1, first).otherwise(F.col("__prev")))
        paired = paired.localCheckpoint()
        # a retraction of a row the relation did not hold (a row a view's WHERE rejected before
        # too) changes nothing, and writes nothing
        written = paired.where(F.col(_BEFORE).isNotNull() | F.col(_AFTER).isNotNull())
        newest = Window.partitionBy(*keys).orderBy(F.col(_SEQ).desc())
        latest = (paired.withColumn("__last", F.row_number().over(newest)).where(F.col("__last") == 1)
                  .select(*self.keys, _AFTER))
        kept = latest.where(F.col(_AFTER).isNotNull())
        if self.rows is not None:
            kept = self.rows.join(latest.select(*self.keys), list(self.keys), "left_anti").unionByName(kept)
        if self.folder is None:  # not running under a checkpoint
            self.rows = kept.localCheckpoint()
            return written
        path = os.path.join(self.folder, str(self._batch))
        kept.write.mode("overwrite").parquet(path)
        self.rows, self._after_batch = kept.sparkSession.read.parquet(path), self._batch
        for old in _saved_batches(self.folder, below=self._batch - 1):
            shutil.rmtree(os.path.join(self.folder, str(old)), ignore_errors=True)
        return written


def _split_across_keys(paired: DataFrame, key: list[str]) -> DataFrame:
    """Materialize pairs a sink's changes by its KEY: an update whose old and new row differ in
    a KEY column (the relation keyed otherwise) is a delete under the old key, then an insert."""
    before, after = F.col(_BEFORE), F.col(_AFTER)
    same_key = functools.reduce(lambda a, b: a & b, [before[k].eqNullSafe(after[k]) for k in key])
    moved = before.isNotNull() & after.isNotNull() & ~same_key
    part = F.explode(F.when(moved, F.array(F.lit(0), F.lit(1))).otherwise(F.array(F.lit(2))))
    split = paired.withColumn("__part", part)
    return (split.withColumn(_BEFORE, F.when(F.col("__part") != 1, before))
            .withColumn(_AFTER, F.when(F.col("__part") != 0, F.col(_AFTER))).drop("__part"))


def _saved_batches(folder: str, below: int) -> list[int]:
    """Batch ids below `below` whose rows were saved completely, in order."""
    if not os.path.isdir(folder):
        return []
    return sorted(int(n) for n in os.listdir(folder)
                  if n.isdigit() and int(n) < below and os.path.exists(os.path.join(folder, n, "_SUCCESS")))


@dataclass
class MaterializeSinkWrite:
    """How a sink's rows become records: formats, envelope, headers, the broker written to."""

    spec: SinkSpec
    sink: SourceDef
    key_writer: AvroWriter | None
    value_writer: AvroWriter | None
    bootstrap: str
    kafka_conf: dict | None = None
    state: DebeziumState | None = field(default=None)
    #: The relation's changes are diffs (a view that joins): mz_timestamp and mz_diff come first.
    diffs: bool = False
    #: The relation is a writable table's changelog (engine.analysis.row_ids): its rows carry
    #: their row ids, which pair a row's old and new values for either envelope.
    row_ids: bool = False
    #: The relation's changes include retractions (a changelog whose view's WHERE rejects a
    #: changed row): the key's previous row tells whether there is anything to retract.
    retractions: bool = False
    #: The topic's partition count: what a PARTITION BY hash is taken modulo.
    partitions: int | None = None
    #: The dialect a PARTITION BY expression compiles in (its functions).
    dialect: object = None
    #: WITH (SNAPSHOT = false): the micro-batches reading the rows held at creation write nothing.
    left_out: LeftOutSnapshot | None = None
    #: Whether the running micro-batch's records are written (set by `at_batch`).
    writes_batch: bool = True
    #: The columns the previous rows are keyed by (None: the sink needs none).
    state_keys: tuple[str, ...] | None = None

    def __post_init__(self):
        # DEBEZIUM's `before`, an UPSERT tombstone's headers (the deleted row's, which a relation
        # of diffs carries on the tombstone's row itself) and whether it has a row to retract
        upsert_headers = self.spec.envelope == "UPSERT" and (self.spec.headers is not None or self.retractions) \
            and not self.diffs
        if self.row_ids:
            self.state_keys = (RAW_KEY,)
        elif (self.spec.envelope == "DEBEZIUM" or upsert_headers) and self.spec.relation_key:
            self.state_keys = self.spec.relation_key
        if self.state_keys and not self.keyed_state and self.state is None:
            self.state = DebeziumState(self.state_keys)

    @property
    def keyed_state(self) -> bool:
        """The previous rows are keyed state (a changelog read as it is streams to the sink)."""
        return bool(self.state_keys) and (self.row_ids or self.retractions)

    @property
    def state_step(self) -> str | None:
        """The keyed step's layout, as the checkpoint records it (sinks/layout.py); None: none."""
        from ..engine.api import PREVIOUS_ROWS_LAYOUT

        return PREVIOUS_ROWS_LAYOUT if self.keyed_state else None

    def keyed(self, frame: DataFrame, names: list[str]) -> DataFrame:
        """The streaming frame with each change's previous row per key (`_BEFORE`, `_AFTER`) from
        keyed state, when the sink needs it; else as it is."""
        if not self.keyed_state:
            return frame
        from ..engine.api import previous_rows

        column = self._columns(names)
        row = F.struct(*[column[f.name].alias(f.name) for f in self.spec.columns])
        return previous_rows(frame, [column[k].alias(k) for k in self.state_keys], F.when(~F.col(TOMBSTONE), row))

    def _columns(self, names: list[str]) -> dict[str, Column]:
        column = {n: F.col(result_column(i)) for i, n in enumerate(names)}
        if self.row_ids:
            column[RAW_KEY] = F.col(RAW_KEY)
        return column

    def at_batch(self, spark, checkpoint: str, batch_id: int) -> None:
        """Before a micro-batch's records: the Debezium state as of the batch before it, and
        whether its records are written (not when it reads the snapshot a sink leaves out)."""
        self.writes_batch = self.left_out is None or self.left_out.writes(checkpoint, batch_id)
        if self.state is not None:
            self.state.at_batch(spark, os.path.join(checkpoint, "debezium_rows"), batch_id)

    def records(self, rows: DataFrame, names: list[str]) -> DataFrame:
        """key, value, headers, timestamp (and with PARTITION BY, partition) columns for the
        `kafkasql_sink` writer."""
        written = self._records(rows, names)
        if self.spec.topic_options.partition_by is None:
            return written.drop(_ROW)
        return written.select("key", "value", "headers", "timestamp", self._partition(written).alias("partition"))

    def _partition(self, written: DataFrame) -> Column:
        """Materialize's PARTITION BY: the expression over the row written (or deleted) cast to
        uint8, modulo the partition count; NULL, a failure or a value out of uint8's range goes
        to partition 0."""
        from ..engine.api import row_expression

        value = row_expression(self.spec.topic_options.partition_by, F.col(_ROW), written, self.dialect)
        hashed = value.try_cast("decimal(20,0)")
        fits = hashed.isNotNull() & (hashed >= 0) & (hashed <= F.lit("18446744073709551615").cast("decimal(20,0)"))
        return F.when(fits, F.pmod(hashed, F.lit(self.partitions)).cast("int")).otherwise(F.lit(0))

    def _records(self, rows: DataFrame, names: list[str]) -> DataFrame:
        column = self._columns(names)
        row = F.struct(*[column[f.name].alias(f.name) for f in self.spec.columns])
        if self.diffs and self.spec.envelope == "DEBEZIUM":
            key = F.struct(*[column[f.name].alias(f.name) for f in self.spec.key]) if self.spec.key else None
            pairs = diff_rows.debezium_pairs(rows, F.col(result_column(1)), F.col(result_column(0)), row, key)
            return self._debezium(pairs.withColumnRenamed(RAW_TIMESTAMP, "timestamp"))
        if self.diffs:
            rows = self._upserts_from_diffs(rows, names)
        after = F.when(~F.col(TOMBSTONE), row)
        if self.spec.envelope == "UPSERT" and self.row_ids:
            return self._upserts_of_pairs(self._paired_by_state(rows, column, after))
        if self.spec.envelope == "UPSERT":
            return self._upsert(rows, column, after)
        return self._debezium(self._paired_by_state(rows, column, after))

    def _upsert(self, rows: DataFrame, column: dict, after: Column) -> DataFrame:
        """Each change under its KEY, a deleted row as a tombstone. The HEADERS column's headers go
        on every record, a tombstone's from the deleted row (as Materialize writes them): a
        relation with a unique key finds it in the state (the key's previous row), a relation of
        diffs has it on the tombstone's row."""
        key_row = F.struct(*[column[f.name].alias(f.name) for f in self.spec.key])
        headers = F.lit(None).cast("array<struct<key:string,value:binary>>")
        if self.spec.headers is not None:
            value_type = next(f.type.value.name for f in self.spec.columns if f.name == self.spec.headers)
            headers = header_entries(column[self.spec.headers], value_type)
        paired = self.state is not None or self.keyed_state
        if paired:
            rows = self._paired(rows, column, after, key_row.alias("__key"))
            row = F.coalesce(F.col(_AFTER), F.col(_BEFORE))  # the row written, or the row deleted
            key_row, after = F.col("__key"), F.col(_AFTER)
            if self.spec.headers is not None:
                headers = header_entries(row[self.spec.headers], value_type)
        value = self._encode(after, self.spec.columns, self.spec.value_format, self.value_writer)
        written = F.coalesce(F.col(_AFTER), F.col(_BEFORE)) if paired else \
            F.struct(*[column[f.name].alias(f.name) for f in self.spec.columns])
        return rows.select(self._key(key_row).alias("key"), value.alias("value"), headers.alias("headers"),
                           F.col("timestamp" if paired else RAW_TIMESTAMP).alias("timestamp"),
                           written.alias(_ROW))

    def _upserts_of_pairs(self, staged: DataFrame) -> DataFrame:
        """`staged` (_BEFORE, _AFTER, timestamp) as UPSERT records: the KEY of whichever row there
        is, the new row as the value, or a tombstone when there is none (a delete, or a row
        whose KEY changed: `_split_across_keys` made that a delete under the old KEY), with the
        deleted row's headers as Materialize writes them."""
        before, after = F.col(_BEFORE), F.col(_AFTER)
        key_row = F.struct(*[F.when(after.isNotNull(), after[f.name]).otherwise(before[f.name]).alias(f.name)
                             for f in self.spec.key])
        value = self._encode(after, self.spec.columns, self.spec.value_format, self.value_writer)
        headers = F.lit(None).cast("array<struct<key:string,value:binary>>")
        if self.spec.headers is not None:
            value_type = next(f.type.value.name for f in self.spec.columns if f.name == self.spec.headers)
            headers = header_entries(F.coalesce(after, before)[self.spec.headers], value_type)  # a tombstone: the deleted row's
        return staged.select(self._key(key_row).alias("key"), value.alias("value"), headers.alias("headers"),
                             F.col("timestamp"), F.coalesce(after, before).alias(_ROW))

    def _upserts_from_diffs(self, rows: DataFrame, names: list[str]) -> DataFrame:
        """A batch of diffs as rows with TOMBSTONE flags: per key what it holds after the batch."""
        time, diff = F.col(result_column(0)), F.col(result_column(1))
        key_names = {f.name for f in self.spec.key}
        columns = list(enumerate(names))[2:]
        return diff_rows.upserts(rows, diff, time, [result_column(i) for i, n in columns if n in key_names],
                                 [result_column(i) for i, n in columns if n not in key_names])

    def _paired_by_state(self, rows: DataFrame, column: dict, after: Column) -> DataFrame:
        """The relation's rows with their `before`: the key's previous row, from the state (a
        relation without a unique key, a stream, only inserts), split in two where the sink's
        KEY is not the relation's and the update changes it."""
        if self.state is None and not self.keyed_state:
            staged = rows.select(after.alias(_AFTER), F.col(RAW_TIMESTAMP).alias("timestamp"))
            return staged.withColumn(_BEFORE, F.lit(None).cast(staged.schema[_AFTER].dataType))
        paired = self._paired(rows, column, after)
        key = [f.name for f in self.spec.key]
        return paired if not key or set(key) == set(self.state_keys) else _split_across_keys(paired, key)

    def _paired(self, rows: DataFrame, column: dict, after: Column, *extra: Column) -> DataFrame:
        """The key's changes with their previous rows (_BEFORE, _AFTER, timestamp, `extra`): the
        keyed step's (`keyed`), or looked up in the Debezium state."""
        if self.keyed_state:  # a retraction of a row the relation did not hold writes nothing
            return rows.select(F.col(_BEFORE), F.col(_AFTER), F.col(RAW_TIMESTAMP).alias("timestamp"), *extra) \
                .where(F.col(_BEFORE).isNotNull() | F.col(_AFTER).isNotNull())
        staged = rows.select(*[column[k].alias(k) for k in self.state.keys], after.alias(_AFTER),
                             F.col(RAW_TIMESTAMP).alias("timestamp"), *extra,
                             F.monotonically_increasing_id().alias(_SEQ))
        return self.state.paired(staged)

    def _debezium(self, staged: DataFrame) -> DataFrame:
        """`staged` (_BEFORE, _AFTER, timestamp) as records: the KEY from whichever row there is."""
        before, after = F.col(_BEFORE), F.col(_AFTER)
        key_row = F.struct(*[F.coalesce(after[f.name], before[f.name]).alias(f.name) for f in self.spec.key])
        fields = self.spec.columns
        if self.value_writer is not None:
            value = self.value_writer.encode(F.struct(before.alias("before"), after.alias("after")))
        else:
            value = mz_encode.to_json_bytes(F.struct(mz_encode.json_ready(before, fields).alias("before"),
                                                     mz_encode.json_ready(after, fields).alias("after")))
        return staged.select(self._key(key_row).alias("key"), value.alias("value"),
                             F.lit(None).cast("array<struct<key:string,value:binary>>").alias("headers"),
                             F.col("timestamp"), F.coalesce(after, before).alias(_ROW))

    def _key(self, key_row: Column) -> Column:
        if not self.spec.key:
            return F.lit(None).cast("binary")
        return self._encode(key_row, self.spec.key, self.spec.key_format, self.key_writer)

    @staticmethod
    def _encode(row: Column, fields, fmt, writer: AvroWriter | None) -> Column:
        if writer is not None:
            return F.when(row.isNotNull(), writer.encode(row))
        if fmt.name == "JSON":
            return F.when(row.isNotNull(), mz_encode.to_json_bytes(mz_encode.json_ready(row, fields)))
        return F.when(row.isNotNull(), mz_encode.single(row, fields, fmt))

    def options(self) -> dict[str, str]:
        """The writer's options: the cluster's client properties (SASL, SSL) go to the executors."""
        extra = {f"kafka.{k}": str(v) for k, v in (self.kafka_conf or {}).items()}
        return {**clientconf.source_options(self.bootstrap), "bootstrap.servers": self.bootstrap,
                "topic": self.spec.topic, "kafka.compression.type": self.spec.compression, **extra}


def sink_entry(spec: SinkSpec, statement: str) -> SourceDef:
    """What SHOW QUERIES and EXPLAIN show of a sink: its columns, formats and topic."""
    key_names = {f.name for f in spec.key}
    columns = tuple(CatalogColumn(f.name, f.type, KEY if f.name in key_names else VALUE) for f in spec.columns)
    key_format = FormatSpec(spec.key_format.name if spec.key_format else "NONE")
    value_format = FormatSpec(f"{spec.value_format.name} ENVELOPE {spec.envelope}")
    return SourceDef("SINK", spec.name, spec.topic, key_format, value_format, columns, statement=statement,
                     properties={"BROKER": spec.broker} if spec.broker else {}, dialect="materialize")
