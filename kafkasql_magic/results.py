"""A query's results on the driver: a collected micro-batch split into result rows and
processing-log entries (topic, partition, offset, reason, raw bytes), and the log itself."""

from __future__ import annotations

import base64
import heapq
import itertools
import threading
from collections import deque
from dataclasses import dataclass

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame

from .engine.columns import (DROP, ERROR, OFFSET, ORIGIN, PARTITION, RAW_KEY, RAW_TIMESTAMP, RAW_VALUE, TOPIC,
                             result_column)


class ProcessingLog:
    """Record-level errors of every query in a session, newest last."""

    COLUMNS = ["TIME", "QUERY", "SOURCE", "TOPIC", "PARTITION", "OFFSET", "MESSAGE", "KEY", "VALUE"]

    def __init__(self, capacity: int = 10_000):
        self._entries: deque[dict] = deque(maxlen=capacity)
        self._lock = threading.Lock()
        self._count = 0

    def add(self, entries: list[dict]) -> None:
        with self._lock:
            self._entries.extend(entries)
            self._count += len(entries)

    @property
    def count(self) -> int:
        return self._count

    def latest(self, n: int = 5) -> list[dict]:
        with self._lock:
            return list(itertools.islice(reversed(self._entries), n))[::-1]

    def to_pandas(self, *, raw: bool = False, query: str | None = None) -> pd.DataFrame:
        with self._lock:
            entries = [e for e in self._entries if query is None or e["QUERY"] == query]
        columns = self.COLUMNS if raw else self.COLUMNS[:-2]
        return pd.DataFrame([[e[c] for c in columns] for e in entries], columns=columns)


@dataclass
class Batch:
    rows: list[tuple]
    errors: list[dict]


def collectable(frame: DataFrame, width: int, *, timed: bool = False) -> DataFrame:
    """What of a planned frame goes to the driver: the result columns, whether each row is
    dropped, and (for failed rows) where it came from; never the input record's headers.
    `timed`: each row's record time too (for `record_order`)."""
    return frame.select(*[result_column(i) for i in range(width)], ERROR, DROP, *ORIGIN,
                        *([RAW_TIMESTAMP] if timed else []))


def record_order(table: pa.Table) -> pa.Table:
    """A collected micro-batch's rows in record-time order, not partition by partition as Spark
    delivers them: the partitions' rows merged by record time (then partition), each partition's
    rows keeping their offset order, so a key's updates (a key lives in one partition) stay in
    order whatever their times. Unchanged when a row has no partition or time (rows that are
    not records, a read without record times)."""
    if table.num_rows < 2:
        return table
    partitions, offsets, times = (table.column(c) for c in (PARTITION, OFFSET, RAW_TIMESTAMP))
    if partitions.null_count or offsets.null_count or times.null_count:
        return table
    partitions, offsets = partitions.to_pylist(), offsets.to_pylist()
    times = pc.cast(times, pa.int64()).to_pylist() if pa.types.is_timestamp(times.type) else times.to_pylist()
    runs: dict[int, list[int]] = {}
    for index, partition in enumerate(partitions):
        runs.setdefault(partition, []).append(index)
    if len(runs) < 2:
        return table
    merged = heapq.merge(*(sorted(run, key=offsets.__getitem__) for run in runs.values()),
                         key=lambda i: (times[i], partitions[i]))
    return table.take(pa.array(list(merged), pa.int64()))


def split_batch(table: pa.Table, width: int, query_id: str, source: str) -> Batch:
    """One collected micro-batch -> result rows (in order) and processing-log entries."""
    if table.num_rows == 0:
        return Batch([], [])
    keep = pc.invert(table.column(DROP).combine_chunks())
    good = table.filter(keep).select([result_column(i) for i in range(width)])
    rows = list(zip(*(_python_values(good.column(i)) for i in range(width)))) if width else [()] * good.num_rows
    failed = table.filter(pc.is_valid(table.column(ERROR)))
    errors = []
    if failed.num_rows:
        now = pd.Timestamp.now(tz="UTC")
        meta = failed.select([ERROR, *ORIGIN]).to_pylist()
        errors = [_log_entry(now, query_id, source, m, m[RAW_KEY], m[RAW_VALUE]) for m in meta]
    return Batch(rows, errors)


def _log_entry(now, query_id: str, source: str, failed: dict, key, value) -> dict:
    """A processing-log entry for one failed record (its bookkeeping columns in `failed`)."""
    return {"TIME": now, "QUERY": query_id, "SOURCE": source, "TOPIC": failed[TOPIC],
            "PARTITION": failed[PARTITION], "OFFSET": failed[OFFSET], "MESSAGE": failed[ERROR],
            "KEY": key, "VALUE": value}


def located_message(entry) -> str:
    """A failed record's message and where it is, as a query that fails over it says it."""
    return f"{entry['MESSAGE']} (topic {entry['TOPIC']}, partition {entry['PARTITION']}, offset {entry['OFFSET']})"


def observed_errors(metrics: dict, sources: dict[str, str], query_id: str, *, base64_bytes: bool) -> list[dict]:
    """Processing-log entries from the errors a plan captures before a join or an aggregation
    (each a list of failed records; see engine.build); `sources` maps each metric to the
    source whose records it carries; raw bytes come as base64 text in streaming metrics."""
    now = pd.Timestamp.now(tz="UTC")
    as_bytes = _from_base64 if base64_bytes else _bytes
    entries = []
    for name, source in sources.items():
        row = metrics.get(name)
        for m in (row["errors"] if row is not None else None) or []:
            m = m.asDict() if hasattr(m, "asDict") else m
            entries.append(_log_entry(now, query_id, source, m, as_bytes(m[RAW_KEY]), as_bytes(m[RAW_VALUE])))
    return entries


def _from_base64(text):
    return base64.b64decode(text) if text is not None else None


def _bytes(data):
    return bytes(data) if data is not None else None


def _python(arrow_type: pa.DataType):
    """A converter from Arrow's Python values to ksql's (MAP as dict), or None when as is."""
    if pa.types.is_map(arrow_type):
        item = _python(arrow_type.item_type)
        return lambda v: None if v is None else {k: (item(x) if item else x) for k, x in v}
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        item = _python(arrow_type.value_type)
        return None if item is None else (lambda v: None if v is None else [item(x) for x in v])
    if pa.types.is_struct(arrow_type):
        fields = {f.name: _python(f.type) for f in arrow_type}
        if not any(fields.values()):
            return None
        return lambda v: None if v is None else {k: (fields[k](x) if fields[k] else x) for k, x in v.items()}
    return None


def _python_values(column) -> list:
    values = column.to_pylist()
    convert = _python(column.type)
    return values if convert is None else [convert(v) for v in values]


def to_pandas(rows: list[tuple], names: list[str]) -> pd.DataFrame:
    """Rows -> DataFrame; integer columns holding NULLs keep integers (pandas' Int64), not floats."""
    if not rows:
        return pd.DataFrame(columns=names)
    frame = pd.DataFrame.from_records(rows, columns=range(len(names)))
    for i in range(len(names)):
        values = [row[i] for row in rows]
        ints = [v for v in values if v is not None]
        if ints and len(ints) < len(values) and all(isinstance(v, int) and not isinstance(v, bool) for v in ints):
            frame[i] = pd.array(values, dtype="Int64")
    frame.columns = names
    return frame
