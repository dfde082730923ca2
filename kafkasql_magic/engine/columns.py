"""Column names the engine shares between analysis, build and runtime: one definition each.

Pseudocolumns (ksql's ROWTIME, ROWPARTITION, ROWOFFSET) are never in `SELECT *`; the window
bounds exist in windowed aggregations. A planned frame carries the result columns, named by
position (`result_column(i)`), then the bookkeeping columns: `__ERROR` (why a record failed,
NULL when it did not), `__DROP` (the record yields no row) and where it came from, so the
processing log can name the record and show its bytes.
"""

from __future__ import annotations

ROWTIME, ROWPARTITION, ROWOFFSET = "ROWTIME", "ROWPARTITION", "ROWOFFSET"
PSEUDOCOLUMNS = (ROWTIME, ROWPARTITION, ROWOFFSET)
WINDOWSTART, WINDOWEND = "WINDOWSTART", "WINDOWEND"
#: Names ksqlDB keeps for pseudocolumns and window bounds.
RESERVED_COLUMN_NAMES = PSEUDOCOLUMNS + (WINDOWSTART, WINDOWEND)

ERROR, DROP, TOPIC, PARTITION, OFFSET, RAW_KEY, RAW_VALUE = (
    "__ERROR", "__DROP", "__TOPIC", "__PARTITION", "__OFFSET", "__RAW_KEY", "__RAW_VALUE")
#: Where a failed record came from (with ERROR: what the processing log shows of it).
ORIGIN = (TOPIC, PARTITION, OFFSET, RAW_KEY, RAW_VALUE)
RAW_HEADERS, RAW_TIMESTAMP, TOMBSTONE = "__RAW_HEADERS", "__RAW_TIMESTAMP", "__TOMBSTONE"
#: What a persistent query writes to its output record besides its columns: the input
#: record's headers and timestamp (Kafka Streams forwards both), and whether its value was
#: NULL (a tombstone stays one). Never collected to the driver.
RECORD = (RAW_HEADERS, RAW_TIMESTAMP, TOMBSTONE)
BOOKKEEPING = (ERROR, DROP) + ORIGIN + RECORD
#: A persistent query whose key is its record's key passed through (`QueryPlan.passes_key`):
#: whether the input record had no key, so that the output record has none either.
KEYLESS = "__KEYLESS"
#: The Spark field metadata key naming a source column's Materialize type where ours holds it as
#: another (dialects.pg_types.own_type: `jsonb`, `uint8`); a column selected as it is keeps it.
SQL_TYPE = "sql_type"


def result_column(index: int) -> str:
    """The planned frame's name for the result column at `index`."""
    return f"_c{index}"
