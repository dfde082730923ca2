"""Raw Kafka records -> a source's logical rows: decoded key and value columns, header and
metadata columns, pseudocolumns, and the bookkeeping the runtime needs (engine.columns)."""

from __future__ import annotations

from typing import Callable

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from ... import dialects, formats, types
from ...catalog import HEADER, HEADERS, KEY, OFFSET as OFFSET_ROLE, PARTITION as PARTITION_ROLE
from ...catalog import TIMESTAMP as TIMESTAMP_ROLE, TOPIC as TOPIC_ROLE, VALUE, SourceDef
from ...dialects.dialect import KEY_WITHOUT_VALUE, NULL_KEY
from ...formats import Field
from ..columns import DROP, ERROR, OFFSET, PARTITION, RAW_KEY, RAW_VALUE, ROWOFFSET, ROWPARTITION, ROWTIME, TOPIC

#: Pseudocolumn -> its value from the raw Kafka record.
PSEUDOCOLUMN_VALUES: dict[str, Callable[[], Column]] = {
    ROWTIME: lambda: F.unix_millis(F.col("timestamp")),
    ROWPARTITION: lambda: F.col("partition"),
    ROWOFFSET: lambda: F.col("offset"),
}

#: Metadata role (Materialize's INCLUDE) -> its value from the raw record.
METADATA_COLUMNS: dict[str, Callable[[], Column]] = {
    PARTITION_ROLE: lambda: F.col("partition"),
    OFFSET_ROLE: lambda: F.col("offset"),
    TIMESTAMP_ROLE: lambda: F.col("timestamp"),
    TOPIC_ROLE: lambda: F.col("topic"),
}

#: Envelope rule condition (see dialects.dialect) -> the records it holds for.
ENVELOPE_CONDITIONS: dict[str, Callable[[], Column]] = {
    NULL_KEY: lambda: F.col("key").isNull(),
    KEY_WITHOUT_VALUE: lambda: F.col("key").isNotNull() & F.col("value").isNull(),
}


def _headers(c) -> Column:
    """All headers, with the struct field names the column's type declares (KEY/VALUE in ksql,
    key/value in Materialize)."""
    return F.col("headers").cast(types.to_spark(c.type))


def _last_header(c) -> Column:
    matching = F.filter(F.col("headers"), lambda h: h["key"] == F.lit(c.header_key))
    return F.try_element_at(matching, F.lit(-1))["value"]


def _header_text_error(c) -> Column:
    """A HEADER column typed as text must hold UTF-8 (Materialize's INCLUDE HEADER 'k' AS name)."""
    raw = _last_header(c)
    return F.when(raw.isNotNull() & ~F.is_valid_utf8(raw.cast("string")),
                  F.concat(F.lit(f"Header '{c.header_key}' is not valid UTF-8: "), F.hex(raw)))


def _column(c, decoded: dict[str, Column]) -> Column:
    if c.role in (KEY, VALUE):
        return decoded[c.name]
    if c.role == HEADERS:
        return _headers(c)
    if c.role == HEADER:
        raw = _last_header(c)
        return F.when(F.is_valid_utf8(raw.cast("string")), raw.cast("string")) if c.type.name == "STRING" else raw
    return METADATA_COLUMNS[c.role]()


def _envelope_checks(source: SourceDef) -> list[Column]:
    return [F.when(ENVELOPE_CONDITIONS[condition](), F.lit(message))
            for condition, message in dialects.get(source.dialect).envelope_rules(source)]


def _barrier(error: Column) -> Column:
    """The error column, made nondeterministic in form (a no-op on the partition id) so Spark
    cannot push filters on it below the decoding: pushed down, the filter would inline and
    re-run every decode expression it mentions."""
    return F.when(F.spark_partition_id() >= 0, error)


def logical_frame(raw: DataFrame, source: SourceDef) -> DataFrame:
    """Raw Kafka records -> the source's columns, pseudocolumns and bookkeeping."""
    if dialects.get(source.dialect).skips_empty(source):
        raw = raw.where(F.col("key").isNotNull() | F.col("value").isNotNull())  # empty records are skipped
    key = formats.lookup(source.key_format.name).decode(
        F.col("key"), [Field(c.format_field, c.type) for c in source.key_columns], source.key_format, "key")
    value = formats.lookup(source.value_format.name).decode(
        F.col("value"), [Field(c.format_field, c.type) for c in source.value_columns], source.value_format, "value")
    for name, expression in key.intermediates + value.intermediates:
        raw = raw.withColumn(name, expression)  # one stage each: computed once per record
    decoded = {c.name: col for c, col in zip(source.key_columns, key.columns)}
    decoded.update({c.name: col for c, col in zip(source.value_columns, value.columns)})
    checks = _envelope_checks(source) + [e for e in (key.error, value.error) if e is not None]
    checks += [_header_text_error(c) for c in source.columns if c.role == HEADER and c.type.name == "STRING"]
    error = F.coalesce(*checks) if len(checks) > 1 else (checks[0] if checks else F.lit(None).cast("string"))
    error = _barrier(error)
    columns = [_column(c, decoded).alias(c.name) for c in source.columns]
    pseudo = [build().alias(name) for name, build in PSEUDOCOLUMN_VALUES.items()]
    meta = [
        error.alias(ERROR), error.isNotNull().alias(DROP), F.col("topic").alias(TOPIC),
        F.col("partition").alias(PARTITION), F.col("offset").alias(OFFSET),
        F.col("key").alias(RAW_KEY), F.col("value").alias(RAW_VALUE),
    ]
    return raw.select(*columns, *pseudo, *meta)


def latest_per_key(raw: DataFrame) -> DataFrame:
    """A keyed source as it is now: the newest record per key, deleted keys (a NULL value,
    a tombstone) gone. Records without a key are kept, to be reported as errors."""
    newest_first = Window.partitionBy("key").orderBy(F.col("timestamp").desc(), F.col("offset").desc())
    keyed = (raw.where(F.col("key").isNotNull()).withColumn("__rank", F.row_number().over(newest_first))
             .where((F.col("__rank") == 1) & F.col("value").isNotNull()).drop("__rank"))
    return keyed.unionByName(raw.where(F.col("key").isNull()))
