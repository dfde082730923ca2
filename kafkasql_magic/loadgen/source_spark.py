"""The load generators' Spark Python data source (`kafkasql_loadgen`), batch and streaming:
a counter's values (loadgen/counter.py) as records of the Kafka source's schema, so the
engine reads them as it reads a topic.

Options (strings): the counter's (`Counter.options`: tickMicros, epochMicros, upTo), `topic`
(the source's name, in the topic column), startingOffsets / endingOffsets (earliest, latest or
the Kafka source's JSON {"0": n}), maxRecordsPerTrigger, includeHeaders and metadataColumns as
the Kafka source reads them; its other options (decoding in the reader) do not apply. The
driver only decides offset ranges from the clock; an executor makes a range's rows from the
range alone.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows, SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

from kafkasql_magic.kafka.arrow_batch import METADATA
from kafkasql_magic.kafka.json_options import json_list
from kafkasql_magic.kafka.offsets import from_json, parse_offsets, to_json
from kafkasql_magic.kafka.source import SCHEMA
from kafkasql_magic.loadgen.counter import FORMAT, Counter

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _now_us() -> int:
    return time.time_ns() // 1_000


@dataclass(frozen=True)
class _Shape:
    """What each row carries: the counter, the topic name, headers or not, the metadata columns."""

    counter: Counter
    topic: str
    headers: bool
    metadata: tuple[str, ...]

    @classmethod
    def of(cls, options) -> "_Shape":
        names = json_list(options, "metadataColumns", lambda names: all(n in METADATA for n in names),
                          f"a JSON list of some of {', '.join(METADATA)}")
        metadata = METADATA if names is None else tuple(n for n in METADATA if n in names)
        headers = str(options.get("includeHeaders", "true")).strip().lower() != "false"
        return cls(Counter.of_options(options), options.get("topic", ""), headers, metadata)

    def schema(self) -> StructType:
        return StructType([f for f in SCHEMA.fields if (f.name not in METADATA or f.name in self.metadata)
                           and (f.name != "headers" or self.headers)])

    def offset(self, text: str | None, default: str, due: int) -> int:
        """An offset option as an offset of the counter, `due` values being due now."""
        spec = parse_offsets(text, "offsets", default)
        if isinstance(spec, dict):
            first = spec.get(0, -2)
            spec = "earliest" if first == -2 else "latest" if first == -1 else first
        return 0 if spec == "earliest" else due if spec == "latest" else spec


@dataclass(frozen=True)
class CounterRange(InputPartition):
    """Offsets [start, end) of a counter: everything an executor needs to make their rows."""

    shape: _Shape
    start: int
    end: int


def read_range(rng: CounterRange):
    """The rows of `rng`, in the schema's column order."""
    shape = rng.shape
    for offset in range(rng.start, rng.end):
        value, due_us = shape.counter.record(offset)
        row = [None, value]
        if shape.headers:
            row.append([])
        metadata = {"topic": shape.topic, "partition": 0, "offset": offset,
                    "timestamp": _EPOCH + timedelta(microseconds=due_us // 1_000 * 1_000)}
        yield tuple(row + [metadata[name] for name in shape.metadata])


class CounterBatchReader(DataSourceReader):
    """The values due when the read is planned (or the offsets endingOffsets names)."""

    def __init__(self, options):
        self.options = options
        self.shape = _Shape.of(options)

    def partitions(self):
        due = self.shape.counter.due(_now_us())
        start = self.shape.offset(self.options.get("startingOffsets"), "earliest", due)
        end = self.shape.offset(self.options.get("endingOffsets"), "latest", due)
        return [CounterRange(self.shape, start, max(start, end))]

    def read(self, partition):
        return read_range(partition)


class CounterStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches of the values due since the last one; admission control as the Kafka
    source's (maxRecordsPerTrigger) and Trigger.AvailableNow."""

    def __init__(self, options):
        self.options = options
        self.shape = _Shape.of(options)
        limit = options.get("maxRecordsPerTrigger")
        self.max_per_trigger = int(limit) if limit else None
        self._target: int | None = None
        self._bound: int | None = None

    def _due(self) -> int:
        due = self.shape.counter.due(_now_us())
        for cap in (self._target, self._bound):
            if cap is not None:
                due = min(due, cap)
        return due

    def initialOffset(self) -> dict:
        due = self.shape.counter.due(_now_us())
        if self.options.get("endingOffsets") is not None:
            self._bound = self.shape.offset(self.options["endingOffsets"], "latest", due)
        return to_json({0: self.shape.offset(self.options.get("startingOffsets"), "latest", due)})

    def latestOffset(self, start: dict, limit=None) -> dict:
        first = from_json(start).get(0, 0)
        end = max(first, self._due())
        budget = limit.max_rows if isinstance(limit, ReadMaxRows) else self.max_per_trigger if limit is None else None
        if budget is not None:
            end = min(end, first + budget)
        return to_json({0: end})

    def getDefaultReadLimit(self):
        return ReadMaxRows(self.max_per_trigger) if self.max_per_trigger else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self.shape.counter.due(_now_us())

    def partitions(self, start: dict, end: dict):
        first, last = from_json(start).get(0, 0), from_json(end).get(0, 0)
        return [CounterRange(self.shape, first, last)] if last > first else []

    def read(self, partition):
        return read_range(partition)

    def commit(self, end: dict) -> None:
        pass


class LoadGeneratorDataSource(DataSource):
    """`spark.read.format("kafkasql_loadgen")` / `spark.readStream.format("kafkasql_loadgen")`."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self):
        return _Shape.of(self.options).schema()

    def reader(self, schema) -> CounterBatchReader:
        return CounterBatchReader(self.options)

    def streamReader(self, schema) -> CounterStreamReader:
        return CounterStreamReader(self.options)


_REGISTERED_ATTR = "_kafkasql_loadgen_registered"


def register(spark) -> None:
    """Register the data source with `spark`; a no-op the second time."""
    jsession = getattr(spark, "_jsparkSession", None)
    marker = jsession if jsession is not None else spark
    if getattr(spark, _REGISTERED_ATTR, None) is marker:
        return
    spark.dataSource.register(LoadGeneratorDataSource)
    try:
        setattr(spark, _REGISTERED_ATTR, marker)
    except Exception:
        pass
