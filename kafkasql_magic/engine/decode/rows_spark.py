"""Raw Kafka records -> a source's logical rows: decoded key and value columns, header and
metadata columns, pseudocolumns, and the bookkeeping the runtime needs (engine.columns)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Callable

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from ... import clientconf, dialects, formats, types
from ...catalog import HEADER, HEADERS, INLINE_ERROR, KEY, OFFSET as OFFSET_ROLE, PARTITION as PARTITION_ROLE
from ...catalog import TIMESTAMP as TIMESTAMP_ROLE, TOPIC as TOPIC_ROLE, VALUE, SourceDef
from ...dialects import debezium, pg_types
from ...dialects.dialect import KEY_WITHOUT_VALUE, NULL_KEY
from ...formats import Decoded, Field
from ...formats import avro
from ...formats.json import jsonb_text, materialize_decode_error
from ...kafka import json_columns
from ...kafka.worker_decoding import AVRO_COLUMN, WorkerDecoding
from ...kafka.headers import unreadable_error
from ...sql import ast
from ..columns import (DROP, ERROR, OFFSET, PARTITION, RAW_HEADERS, RAW_KEY, RAW_TIMESTAMP, RAW_VALUE, ROWOFFSET,
                       ROWPARTITION, ROWTIME, SQL_TYPE, TOMBSTONE, TOPIC, WINDOWEND, WINDOWSTART)
from ..window import keys_spark as window_keys

#: Pseudocolumn -> its value from the raw Kafka record (its metadata columns: `_Raw`).
PSEUDOCOLUMN_VALUES: dict[str, Callable[["_Raw"], Column]] = {
    ROWTIME: lambda r: F.unix_millis(r.metadata("timestamp")),
    ROWPARTITION: lambda r: r.metadata("partition"),
    ROWOFFSET: lambda r: r.metadata("offset"),
}

#: Metadata role (Materialize's INCLUDE) -> its value from the raw record.
METADATA_COLUMNS: dict[str, Callable[["_Raw"], Column]] = {
    PARTITION_ROLE: lambda r: r.metadata("partition"),
    OFFSET_ROLE: lambda r: r.metadata("offset"),
    TIMESTAMP_ROLE: lambda r: r.metadata("timestamp"),
    TOPIC_ROLE: lambda r: r.metadata("topic"),
}

#: Envelope rule condition (see dialects.dialect) -> the records it holds for.
ENVELOPE_CONDITIONS: dict[str, Callable[["_Raw"], Column]] = {
    NULL_KEY: lambda r: r.missing("key"),
    KEY_WITHOUT_VALUE: lambda r: ~r.missing("key") & r.missing("value"),
}

#: The raw headers column's type (a read without headers has none: kafka.source).
HEADERS_TYPE = "array<struct<key:string,value:binary>>"

#: A metadata column the read left out (engine.tree.reads) -> its type.
METADATA_TYPES = {"topic": "string", "partition": "int", "offset": "bigint", "timestamp": "timestamp"}


class _Raw:
    """The raw record's columns as a read carries them: a metadata column it left out is the
    source's topic or NULL (the analysis leaves out only what no step reads), and a key or
    value is missing when NULL and not decoded by the reader's worker (a decoded record's bytes
    may be left out; it had them: kafka.worker_decoding)."""

    def __init__(self, columns, source: SourceDef):
        self.columns, self.topic = set(columns), source.topic

    def metadata(self, name: str) -> Column:
        if name in self.columns:
            return F.col(name)
        return F.lit(self.topic) if name == "topic" else F.lit(None).cast(METADATA_TYPES[name])

    def missing(self, role: str) -> Column:
        flag = json_columns.NAMES[role][0]
        return F.col(role).isNull() & ~F.col(flag) if flag in self.columns else F.col(role).isNull()


def _headers(c) -> Column:
    """All headers, with the struct field names the column's type declares (KEY/VALUE in ksql,
    key/value in Materialize)."""
    return F.col("headers").cast(types.to_spark(c.type))


def _matching_headers(c) -> Column:
    return F.filter(F.col("headers"), lambda h: h["key"] == F.lit(c.header_key))


def _last_header(c) -> Column:
    return F.try_element_at(_matching_headers(c), F.lit(-1))["value"]


def _header_text_error(c) -> Column:
    """A HEADER column typed as text must hold UTF-8 (Materialize's INCLUDE HEADER 'k' AS name),
    in Materialize's words: the bytes as `[c3, 28]`."""
    raw = _last_header(c)
    shown = F.regexp_replace(F.lower(F.hex(raw)), "(..)(?!$)", "$1, ")
    return F.when(raw.isNotNull() & ~F.is_valid_utf8(raw.cast("string")),
                  F.concat(F.lit(f"Found ill-formed byte sequence in header '{c.header_key}' that cannot be decoded "
                                 "as valid utf-8 (original bytes: ["), shown, F.lit("])")))


def _header_missing_error(c) -> Column:
    """Materialize's error for a record without a header its source INCLUDEs by key."""
    return F.when(F.size(_matching_headers(c)) == 0,
                  F.lit(f"A header with key '{c.header_key}' was not found in the message headers"))


def _column(c, decoded: dict[str, Column], raw: _Raw) -> Column:
    if c.role in (KEY, VALUE, INLINE_ERROR):
        return decoded[c.name]
    if c.role == HEADERS:
        return _headers(c)
    if c.role == HEADER:
        header = _last_header(c)
        if c.type.name != "STRING":
            return header
        return F.when(F.is_valid_utf8(header.cast("string")), header.cast("string"))
    return METADATA_COLUMNS[c.role](raw)


def _own_type(source: SourceDef, c) -> dict | None:
    """The column's Materialize type as field metadata, where ours differs (pg_types.own_type)."""
    own = pg_types.own_type(source, c)
    return {SQL_TYPE: own} if own else None


def _envelope_checks(source: SourceDef, raw: _Raw) -> list[Column]:
    return [F.when(ENVELOPE_CONDITIONS[condition](raw), F.lit(message))
            for condition, message in dialects.get(source.dialect).envelope_rules(source)]


def _barrier(error: Column) -> Column:
    """The error column, made nondeterministic in form (a no-op on the partition id) so Spark
    cannot push filters on it below the decoding: pushed down, the filter would inline and
    re-run every decode expression it mentions."""
    return F.when(F.spark_partition_id() >= 0, error)


def _debezium_json(value: Decoded) -> tuple[Decoded, list[Column], Column]:
    """Debezium JSON: the event is the document or its `payload`; its `after` (JSON text) is
    the `data` column, a NULL `after` deletes, and an event without rows or with an unknown
    `op` is an error (dialects.debezium.json_event is the same rule in plain Python)."""
    document = value.columns[0]
    payload = F.get_json_object(document, f"$.{debezium.PAYLOAD}")
    event = F.when(payload.isNotNull(), payload).otherwise(document)
    after, before = F.get_json_object(event, f"$.{debezium.AFTER}"), F.get_json_object(event, "$.before")
    op = F.get_json_object(event, "$.op")
    unsupported = debezium.OPERATION_MESSAGE.split("{}")
    wrong = (F.when(document.isNull(), F.lit(None))
             .when(after.isNull() & before.isNull(), F.lit(debezium.NO_ROW_MESSAGE))
             .when(op.isNotNull() & ~op.isin(*debezium.OPERATIONS),
                   F.concat(F.lit(unsupported[0]), op, F.lit(unsupported[1]))))
    error = F.coalesce(value.error, wrong) if value.error is not None else wrong
    return replace(value, error=error), [jsonb_text(after)], F.col("value").isNull() | (error.isNull() & after.isNull())


def worker_decoding(source: SourceDef) -> WorkerDecoding | None:
    """What the reader decodes in its worker for `source` (kafka.worker_decoding): JSON where
    that is exact, AVRO always (the same decoding the planner's UDF runs); nothing for a
    windowed table's key, whose window bounds come from it, nor for DEBEZIUM values."""
    keys = [(c.format_field, c.type) for c in source.key_columns]
    values = [(c.format_field, c.type) for c in source.value_columns]
    windowed = bool(window_keys.window_columns(source))
    found = WorkerDecoding(
        json_key=None if windowed else json_columns.key_fields(source.key_format.name, keys),
        json_value=None if windowed else json_columns.worker_fields(
            source.value_format.name, source.value_format.options, source.envelope,
            [(name, t.name) for name, t in values]),
        avro_key=_avro_layout(source.key_format, keys, "key") if not windowed else None,
        avro_value=_avro_layout(source.value_format, values, "value") if source.envelope != "DEBEZIUM" else None)
    return found if found else None


def _avro_layout(spec, columns, role: str):
    if spec.name != "AVRO" or not columns:
        return None
    return avro.layout_for([Field(name, t) for name, t in columns], spec, role)


def _decoded_in_worker(raw_column: Column, fields: list[Field], spec, role: str) -> Decoded:
    """The reader's columns where its flag says it decoded the record (no error: it decodes only
    what converts without one); the planner's decoding for the rest, as one struct bound per
    record (formats.json.decode_bound) in a CASE branch Spark evaluates only for those rows. So
    the planner's stages (JSON parses, lambdas: no generated code) are one interpreted step that
    does nothing for a decoded record, and everything after it keeps Spark's generated code. A
    single STRUCT key column is built from the reader's columns of its fields (the key is that
    object)."""
    flag, column = json_columns.NAMES[role]
    done = F.col(flag)
    fallback = f"__{role}_fallback"
    planner = formats.lookup(spec.name).decode_bound(raw_column, fields, spec, role)
    struct_key = role == "key" and len(fields) == 1 and fields[0].type.name == "STRUCT"
    if struct_key:
        worker_columns = [F.struct(*[F.col(column.format(i)).alias(name)
                                     for i, (name, _) in enumerate(fields[0].type.fields)])]
    else:
        worker_columns = [F.col(column.format(i)) for i in range(len(fields))]
    return Decoded([F.when(done, w).otherwise(F.col(fallback)[f"v{i}"]).alias(f.name)
                    for i, (w, f) in enumerate(zip(worker_columns, fields))],
                   F.col(fallback)["error"], [(fallback, F.when(~done, planner))])


def _decode(read: set[str], raw_column: Column, fields: list[Field], spec, role: str) -> Decoded:
    """`role`'s columns: from the reader's AVRO struct when it decoded them, by the reader's JSON
    columns where its flag says they are exact, else by the format."""
    avro_column = AVRO_COLUMN[role]
    if spec.name == "AVRO" and fields and avro_column in read:
        return avro.from_struct(F.col(avro_column), fields, role)
    if spec.name == "JSON" and fields and json_columns.NAMES[role][0] in read:
        return _decoded_in_worker(raw_column, fields, spec, role)
    return formats.lookup(spec.name).decode(raw_column, fields, spec, role)


def _value(read: set[str], source: SourceDef, value_columns):
    """(decoded value, its columns, whether a record deletes its key). ENVELOPE DEBEZIUM reads
    the value's `after` record: its fields are the columns, and an `after` of NULL deletes."""
    fmt = formats.lookup(source.value_format.name)
    fields = [Field(c.format_field, c.type) for c in value_columns]
    if source.envelope == "DEBEZIUM" and source.value_format.name == "JSON_DOCUMENT":
        return _debezium_json(fmt.decode(F.col("value"), [Field(c.format_field, c.type) for c in value_columns],
                                         source.value_format, "value"))
    if source.envelope != "DEBEZIUM":
        value = _decode(read, F.col("value"), fields, source.value_format, "value")
        return value, value.columns, _Raw(read, source).missing("value")
    after_type = ast.Type("STRUCT", fields=tuple((c.format_field, c.type) for c in value_columns))
    value = fmt.decode(F.col("value"), [Field(debezium.AFTER, after_type)], source.value_format, "value")
    after = value.columns[0]
    return value, [after[c.format_field] for c in value_columns], F.col("value").isNull() | after.isNull()


@dataclass(frozen=True)
class _Recipe:
    """What logical_frame does to a read, as expressions: the records it skips, the stages it
    computes once per record, and the columns it selects. `tombstones` skips a stream's NULL
    values, unless the read passes them on."""

    filters: tuple[Column, ...]
    stages: tuple[tuple[str, Column], ...]
    columns: tuple[Column, ...]
    tombstones: tuple[Column, ...] = ()


class _Recipes:
    """Recipes by source and read columns, kept for the JVM that built them and the client
    settings they were built with (an AVRO or PROTOBUF UDF holds its registry's properties).
    Why: a recipe is thousands of py4j calls (~0.5 s for a JSON source with its fallback
    decoding), which every query over the source paid again; the expressions name columns, so
    they fit any read of the same columns."""

    def __init__(self, build: Callable[[SourceDef, set[str]], _Recipe], size: int = 64):
        self._kept: OrderedDict = OrderedDict()
        self._build, self._gateway, self._size, self._lock = build, None, size, threading.Lock()

    def get(self, source: SourceDef, read: tuple[str, ...]) -> _Recipe:
        from pyspark import SparkContext

        key = (repr(source), read, clientconf.version())  # repr: every field, the format options too
        with self._lock:
            if SparkContext._gateway is not self._gateway:
                self._kept.clear()
                self._gateway = SparkContext._gateway
            if key in self._kept:
                self._kept.move_to_end(key)
                return self._kept[key]
        recipe = self._build(source, set(read))
        with self._lock:
            self._kept[key] = recipe
            while len(self._kept) > self._size:
                self._kept.popitem(last=False)
        return recipe


def logical_frame(raw: DataFrame, source: SourceDef, tombstones: bool = False) -> DataFrame:
    """Raw Kafka records -> the source's columns, pseudocolumns and bookkeeping. `tombstones`:
    a stream's NULL values stay (TOMBSTONE set), for a persistent query that passes them on."""
    if "headers" not in raw.columns:  # a read without headers: every record's list is empty
        raw = raw.withColumn("headers", F.array().cast(HEADERS_TYPE))
    recipe = _RECIPES.get(source, tuple(raw.columns))
    for condition in recipe.filters + (() if tombstones else recipe.tombstones):
        raw = raw.where(condition)
    for name, expression in recipe.stages:
        raw = raw.withColumn(name, expression)  # one stage each: computed once per record
    return raw.select(*recipe.columns)


def _recipe(source: SourceDef, read: set[str]) -> _Recipe:
    dialect = dialects.get(source.dialect)
    record = _Raw(read, source)
    filters = []
    if dialect.skips_empty(source):
        filters.append(~record.missing("key") | ~record.missing("value"))  # empty records are skipped
    tombstones = (~record.missing("value"),) if dialect.skips_null_value(source) else ()
    key = _decode(read, window_keys.inner_key(source), [Field(c.format_field, c.type) for c in source.key_columns],
                  source.key_format, "key")
    windowed = window_keys.window_columns(source)  # the window bounds, from the key
    value_fields = [c for c in source.value_columns if c.name not in windowed]
    value, value_columns, tombstone = _value(read, source, value_fields)
    decoded = {c.name: col for c, col in zip(source.key_columns, key.columns)}
    decoded.update({c.name: col for c, col in zip(value_fields, value_columns)})
    decoded.update(windowed)
    value_error = value.error
    for inline in source.with_role(INLINE_ERROR):  # the value's error is a column, not a failure
        decoded[inline.name] = F.lit(None).cast(types.to_spark(inline.type))
        if value_error is not None:
            decoded.update({c.name: F.when(value_error.isNull(), decoded[c.name]) for c in source.value_columns})
            if source.value_format.name == "JSON_DOCUMENT" and "value" in record.columns:
                value_error = materialize_decode_error(F.col("value"), value_error)
            elif source.value_format.name == "AVRO" and "value" in record.columns:
                value_error = avro.materialize_decode_error(source.value_format, F.col("value"), value_error)
            elif source.value_format.name == "PROTOBUF_DESCRIPTORS":  # its reasons are Materialize's own
                value_error = F.regexp_replace(value_error, "^Failed to deserialize value: ", "")
            decoded[inline.name] = F.when(value_error.isNotNull(), F.struct(value_error.alias("description")))
            value_error = None
    checks = _envelope_checks(source, record) + [e for e in (window_keys.key_error(source), key.error, value_error)
                                         if e is not None]
    if dialect.requires_included_headers:
        checks += [_header_missing_error(c) for c in source.columns if c.role == HEADER]
    checks += [_header_text_error(c) for c in source.columns if c.role == HEADER and c.type.name == "STRING"]
    checks += [unreadable_error(F.col("headers"))] if source.header_columns else []
    error = F.coalesce(*checks) if len(checks) > 1 else (checks[0] if checks else F.lit(None).cast("string"))
    error = _barrier(error)
    columns = [_column(c, decoded, record).alias(c.name, metadata=_own_type(source, c)) for c in source.columns]
    columns += [windowed[b].alias(b) for b in (WINDOWSTART, WINDOWEND) if b in windowed]
    pseudo = [build(record).alias(name) for name, build in PSEUDOCOLUMN_VALUES.items()]
    meta = [
        error.alias(ERROR), error.isNotNull().alias(DROP), record.metadata("topic").alias(TOPIC),
        record.metadata("partition").alias(PARTITION), record.metadata("offset").alias(OFFSET),
        F.col("key").alias(RAW_KEY), F.col("value").alias(RAW_VALUE),
        F.col("headers").alias(RAW_HEADERS), record.metadata("timestamp").alias(RAW_TIMESTAMP),
        tombstone.alias(TOMBSTONE),
    ]
    return _Recipe(tuple(filters), tuple(key.intermediates + value.intermediates), (*columns, *pseudo, *meta),
                   tombstones)


_RECIPES = _Recipes(_recipe)


def current_rows(raw: DataFrame, source: SourceDef) -> DataFrame:
    """A keyed source as it is now, from all its records read bounded: the newest good record
    per key, deleted keys (a NULL value, a tombstone) gone. A record that fails to decode takes
    no part (it stays, to be reported): a bad record never deletes a good row. Records without
    a key stay, each an error, unless the source's dialect treats NULL as one more key
    (Materialize's UPSERT: only the newest counts, and a NULL value retracts its error)."""
    rows = logical_frame(raw, source)
    null_is_a_key = dialects.get(source.dialect).upserts_null_keys and source.envelope == "UPSERT"
    keyed, good = F.col(RAW_KEY).isNotNull(), F.col(ERROR).isNull()
    ranked_null_keys, kept_null_keys = (~keyed, F.lit(False)) if null_is_a_key else (F.lit(False), ~keyed)
    newest_first = Window.partitionBy(RAW_KEY).orderBy(F.col(ROWTIME).desc(), F.col(OFFSET).desc())
    latest = (rows.where((keyed & good) | ranked_null_keys).withColumn("__rank", F.row_number().over(newest_first))
              .where((F.col("__rank") == 1) & ~F.col(TOMBSTONE)).drop("__rank"))
    return latest.unionByName(rows.where((keyed & ~good) | kept_null_keys))
