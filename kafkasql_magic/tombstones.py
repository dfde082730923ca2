"""NULL-valued records (tombstones) on a ksql stream: skipped, as ksqlDB's queries skip them.

ksqlDB's push and pull queries over a STREAM never show a record whose value is NULL (its
transient-query queue drops them; only persistent queries forward them), so a tombstone on a
JSON, DELIMITED, AVRO or KAFKA stream is not an all-NULL row. A stream without value columns
(all key and header columns) has nothing to decode from the value, and keeps every record.
Tables treat NULL values as deletes elsewhere; Materialize sources keep their own rules.
"""

from __future__ import annotations


def skips_null_values(source) -> bool:
    return source.dialect == "ksql" and source.kind == "STREAM" and bool(source.value_columns)
