"""A running persistent query: every micro-batch's rows encoded and produced to the sink topic.

Spark's foreachBatch hands each micro-batch to `_on_batch` on the driver, which logs the
records that failed (processing log), encodes the good rows as Spark expressions and writes
them with the `kafkasql_sink` data source, so records are produced on the executors. The
checkpoint under the state directory makes a restarted query resume where the last committed
micro-batch ended: at-least-once, duplicates limited to the batch in flight at a crash.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Callable

from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F

from .. import clientconf, spark_exit, types
from ..catalog import KEY, SourceDef
from ..errors import StatementError
from ..formats import Field
from ..engine.analysis.plan import CAPTURE_METRICS
from ..engine.columns import (DROP, ERROR, KEYLESS, OFFSET, ORIGIN, PARTITION, RAW_HEADERS, RAW_TIMESTAMP,
                              TOMBSTONE, WINDOWEND, WINDOWSTART, result_column)
from ..results import ProcessingLog, observed_errors
from ..runtime import failure_message, start_in_turn, without_java_frames
from . import layout
from .encode import encode, writer_encoded

WINDOW_BOUNDS = (WINDOWSTART, WINDOWEND)


@dataclass(frozen=True)
class QueryStatus:
    """What a query card shows: a snapshot of one persistent query."""

    id: str
    status: str
    records_in_per_s: float | None
    records_out_per_s: float | None
    lag: int | None
    errors: int
    sink: str
    sink_topic: str
    records_in: int = 0  # totals since the query started in this process
    records_out: int = 0
    message: str | None = None  # why the query failed


@dataclass
class SinkWrite:
    """How output rows become records: the sink, its registered schemas and the record time."""

    sink: SourceDef
    registered: dict  # role -> Registered | None
    window_start: str | None = None  # the output column holding WINDOWSTART: the key ends with it
    window_columns: tuple[str, ...] = ()  # WINDOWSTART / WINDOWEND outputs: in the key, not the value
    timestamp_column: str | None = None
    bootstrap: str = ""
    kafka_conf: dict | None = None
    session_end: str | None = None  # a SESSION window's WINDOWEND output: the key ends with end, then start
    partitions: int | None = None  # the sink topic's partition count (windowed sinks place records by it)
    #: Each row is the change one input record made (engine/aggregate): written in the input's
    #: (partition, offset) order by one task, as ksqlDB writes them, not interleaved by Spark's tasks.
    in_record_order: bool = False

    def records(self, rows: DataFrame, names: list[str]) -> DataFrame:
        """key, value, headers, timestamp columns for the `kafkasql_sink` writer."""
        column = {n: F.col(result_column(i)) for i, n in enumerate(names)}
        if self.in_record_order:
            rows = rows.repartition(1).sortWithinPartitions(PARTITION, OFFSET)
        for c in self.sink.columns:  # INSERT INTO widens a DECIMAL result to its target's precision and scale
            if c.type.name == "DECIMAL" and c.name in column:
                column[c.name] = column[c.name].cast(types.to_spark(c.type))
        by_role = {KEY: [], "VALUE": []}
        for c in self.sink.columns:
            if c.name in self.window_columns:
                continue
            by_role[KEY if c.role == KEY else "VALUE"].append(c)
        key = encode([column[c.name] for c in by_role[KEY]], [Field(c.name, c.type) for c in by_role[KEY]],
                     self.sink.key_format, "key", self.registered.get("key"))
        if KEYLESS in rows.columns:  # the input record had no key: ksqlDB's key is NULL, not NULL columns
            key = F.when(~F.col(KEYLESS), key)
        if self.window_start is not None:  # ksqlDB's windowed key: the inner key, then the window start (8 bytes)
            bounds = [self.session_end] if self.session_end is not None else []  # Kafka Streams' session key
            key = F.concat(F.coalesce(key, F.lit(b"").cast("binary")),
                           *[F.unhex(F.lpad(F.hex(column[c].cast("bigint")), 16, "0"))
                             for c in (*bounds, self.window_start)])
        value_fields = [Field(c.name, c.type) for c in by_role["VALUE"]]
        if self._value_by_writer() is not None:  # the writer encodes the struct
            value = F.struct(*[column[f.name].alias(f.name) for f in value_fields])
        else:
            value = encode([column[f.name] for f in value_fields], value_fields, self.sink.value_format, "value",
                           self.registered.get("value"))
        value = F.when(~F.col(TOMBSTONE), value)  # a tombstone stays one
        return rows.select(key.alias("key"), value.alias("value"), F.col(RAW_HEADERS).alias("headers"),
                           self._timestamp(column).alias("timestamp"))

    def _timestamp(self, column: dict[str, Column]) -> Column:
        if self.timestamp_column is None:
            return F.col(RAW_TIMESTAMP)
        chosen = next(c for c in self.sink.columns if c.name.upper() == self.timestamp_column.upper())
        value = column[chosen.name]
        return F.timestamp_millis(value) if chosen.type.name == "BIGINT" else value

    def _value_by_writer(self) -> dict[str, str] | None:
        fields = [Field(c.name, c.type) for c in self.sink.columns
                  if c.role != KEY and c.name not in self.window_columns]
        return writer_encoded(fields, self.sink.value_format, "value", self.registered.get("value"))

    def options(self) -> dict[str, str]:
        """The writer's options: the cluster's client properties (SASL, SSL) go to the executors,
        and how the writer encodes the value when it does."""
        extra = {f"kafka.{k}": str(v) for k, v in (self.kafka_conf or {}).items()}
        return {**clientconf.source_options(self.bootstrap), "bootstrap.servers": self.bootstrap,
                "topic": self.sink.topic, **(self._value_by_writer() or {}), **self._partitioner(), **extra}

    def _partitioner(self) -> dict[str, str]:
        """A windowed sink's records go to their inner key's partition, as Kafka Streams places
        them, so a key lookup on the table reads that one partition."""
        if self.window_start is None:
            return {}
        if self.partitions is None:
            raise RuntimeError(f"the partition count of windowed sink topic {self.sink.topic!r} was not given")
        window_bytes = 16 if self.session_end is not None else 8
        return {"partition.windowBytes": str(window_bytes), "partition.count": str(self.partitions)}

    #: Every micro-batch's records are written (a Materialize sink without its snapshot skips some).
    writes_batch = True

    #: No keyed step of its own (a Materialize sink's previous rows are one: sinks/envelopes.py).
    state_step = None

    def keyed(self, frame: DataFrame, names: list[str]) -> DataFrame:
        """The streaming frame as it is: ksqlDB's records need no previous rows."""
        return frame

    def at_batch(self, spark, checkpoint: str, batch_id: int) -> None:
        """Nothing is carried between micro-batches (a Debezium sink's write carries rows)."""


class PersistentQuery:
    """CREATE ... AS SELECT / INSERT INTO ... SELECT, running until terminated. A failed query
    shows ERROR (with its reason) and restarts from its checkpoint after a back-off, as ksqlDB
    retries failed persistent queries: a transient fault (a broker outage, a Python worker that
    could not start in time) costs a pause, never the query."""

    def __init__(self, query_id: str, kind: str, sql: str, plan, planned: DataFrame, write: SinkWrite, *,
                 sources: list[str], log: ProcessingLog, checkpoint: str, trigger_interval: str,
                 build_batch: Callable | None = None, backoff: tuple[float, float] = (15.0, 900.0),
                 on_stopped: Callable[["PersistentQuery"], None] | None = None):
        """`planned` is the built frame, or (a per-batch plan) the raw stream that
        `build_batch` turns into a Built per micro-batch."""
        self.id = query_id
        self.kind = kind  # STREAM | TABLE | INSERT
        self.sql = sql
        self.plan = plan
        self.write = write
        self.sources = sources
        self.checkpoint = checkpoint
        self._planned = planned
        self._build_batch = build_batch
        self._log = log
        self._trigger = trigger_interval
        self._query = None
        self._errors = 0
        self._out = 0
        self._in = 0
        self._counted_until = ""  # the timestamp of the last progress report counted
        self._out_rate: float | None = None
        self._failure: BaseException | None = None
        self._observed_through = -1
        self._stopped = threading.Event()
        self._terminating = threading.Event()
        self._backoff = backoff
        self.restarts = 0
        self._on_stopped = on_stopped

    @property
    def sink(self) -> str:
        return self.write.sink.name

    @property
    def sink_topic(self) -> str:
        return self.write.sink.topic

    def start(self) -> "PersistentQuery":
        self._query = self._stream()
        threading.Thread(target=self._watch, name=f"{self.id}-watch", daemon=True).start()
        return self

    def _stream(self):
        writer = (self._planned.writeStream.queryName(self.id).outputMode(self.plan.output_mode)
                  .foreachBatch(without_java_frames(self._on_batch)).option("checkpointLocation", self.checkpoint)
                  .trigger(processingTime=self._trigger))
        return start_in_turn(writer.start)

    def _watch(self) -> None:
        backoff, longest = self._backoff
        try:
            while True:
                try:
                    while not self._query.awaitTermination(0.5):
                        self._count_input()
                        self._log_observed()
                    return  # terminated
                except Exception as exc:  # the Spark query failed: keep the reason for SHOW QUERIES
                    self._failure = exc
                    if layout.spark_mismatch(exc) is not None:  # no retry can pass: say what to do
                        self._failure = self._layout_failure(exc)
                        return
                    if spark_exit.died(exc, self._planned.sparkSession) is not None:  # its plan died with the JVM: no retry can start
                        return
                if not self._restart_after(backoff, longest):
                    return
                backoff = min(2 * backoff, longest)
        finally:
            self._stopped.set()

    def _layout_failure(self, exc: BaseException) -> StatementError:
        """Spark refused the checkpoint's state (a stateful step changed since it was written):
        our message, with Spark's error as its cause."""
        changes = [f"Spark reports {layout.spark_mismatch(exc)}"]
        error = StatementError(layout.mismatch_message(self.id, self.checkpoint, changes))
        error.__cause__ = exc
        return error

    def _restart_after(self, backoff: float, longest: float) -> bool:
        """Wait `backoff` seconds, then start the query again from its checkpoint (waiting
        longer each time it cannot start); False when it was terminated meanwhile."""
        while not self._terminating.wait(backoff):
            try:
                self._query = self._stream()
            except Exception as exc:
                self._failure = exc
                backoff = min(2 * backoff, longest)
                continue
            if self._terminating.is_set():  # terminated while it started
                self._query.stop()
                return False
            self._failure = None
            self.restarts += 1
            return True
        return False

    def _on_batch(self, batch: DataFrame, batch_id: int) -> None:
        """One Spark job per micro-batch: the write itself. The rows written and the failed
        records (for the processing log) are observed on the way to the writer rather than
        counted and collected by jobs of their own, each of which would read and decode the
        batch again (or cache it first)."""
        started = time.monotonic()
        built = self._build_batch(batch, batch_id) if self._build_batch is not None else None
        if built is not None:
            batch = built.frame
        observation = Observation(f"{self.id}_batch_{batch_id}")
        failed = F.when(F.col(ERROR).isNotNull(), F.struct(ERROR, *ORIGIN))
        observed = batch.observe(observation, F.count(F.when(~F.col(DROP), 1)).alias("written"),
                                 F.collect_list(failed).alias("errors"))
        self.write.at_batch(batch.sparkSession, self.checkpoint, batch_id)
        records = self.write.records(observed.where(~F.col(DROP)), self.plan.names)
        if self.write.writes_batch:
            records.write.format("kafkasql_sink").options(**self.write.options()).mode("append").save()
        else:  # computed (the state it leaves is kept), not written
            records.write.format("noop").mode("overwrite").save()
        metrics = observation.get
        errors = observed_errors({"batch": metrics}, {"batch": self.plan.source.name}, self.id, base64_bytes=False)
        if built is not None:
            captured = {n: {"errors": [r.e for r in f.collect()]} for n, f in built.error_frames.items()}
            errors += observed_errors(captured, self.plan.observed_sources, self.id, base64_bytes=False)
        if errors:
            self._log.add(errors)
            self._errors += len(errors)
        count = int(metrics["written"]) if self.write.writes_batch else 0
        self._out += count
        self._out_rate = count / max(time.monotonic() - started, 1e-3)

    def _count_input(self) -> None:
        """Records read, from Spark's progress reports (for an aggregation, in and out differ);
        by report time, as reports of idle triggers carry the id of the batch still to come."""
        for progress in self._query.recentProgress:
            if progress["timestamp"] > self._counted_until:
                self._counted_until = progress["timestamp"]
                self._in += int(progress.get("numInputRows") or 0)

    def _log_observed(self) -> None:
        """Records that failed before an aggregation arrive in each batch's progress metrics."""
        if self.plan.capture != CAPTURE_METRICS or self._query is None:
            return
        for progress in self._query.recentProgress:
            if progress["batchId"] <= self._observed_through:
                continue
            self._observed_through = progress["batchId"]
            entries = observed_errors(progress.get("observedMetrics") or {}, self.plan.observed_sources, self.id,
                                      base64_bytes=True)
            if entries:
                self._log.add(entries)
                self._errors += len(entries)

    # ------------------------------------------------------------ status
    @property
    def state(self) -> str:
        if self._failure is not None:
            return "ERROR"
        if self._query is None:
            return "PENDING"
        return "RUNNING" if not self._stopped.is_set() else "TERMINATED"

    @property
    def failure(self) -> BaseException | None:
        return self._failure

    @property
    def records_out(self) -> int:
        return self._out

    def lag(self) -> int | None:
        progress = self._query.lastProgress if self._query is not None else None
        if not progress:
            return None
        total = 0
        for source in progress.get("sources", []):
            latest, end = _offsets(source.get("latestOffset")), _offsets(source.get("endOffset"))
            if latest is None or end is None:
                return None
            total += sum(max(0, latest[p] - end.get(p, 0)) for p in latest)
        return total

    def status(self) -> QueryStatus:
        progress = (self._query.lastProgress if self._query is not None else None) or {}
        return QueryStatus(self.id, self.state, progress.get("inputRowsPerSecond"), self._out_rate, self.lag(),
                           self._errors, self.sink, self.sink_topic, self._in, self._out,
                           None if self._failure is None else failure_message(self._failure)[:1000])

    def terminate(self) -> None:
        """Stop the query, or its retries (its checkpoint stays, so the same query can resume)."""
        self._terminating.set()
        if self._query is not None and self._query.isActive:
            self._query.stop()
        self._stopped.wait(timeout=30)
        if self._on_stopped is not None:
            self._on_stopped(self)

    def __repr__(self) -> str:
        return f"Created query with ID {self.id} ({self.state}, writing {self.sink_topic})"

    def wait_for_records(self, count: int, timeout: float) -> bool:
        """True once `count` records were written (tests, notebooks); a query retrying after a
        failure is still waited for."""
        deadline = time.monotonic() + timeout
        while self._out < count and time.monotonic() < deadline and not self._stopped.is_set():
            time.sleep(0.1)
        return self._out >= count


def _offsets(value) -> dict[str, int] | None:
    from ..kafka.offsets import progress_offsets

    return None if value is None else progress_offsets(value)
