"""The `kafkasql_sink` Spark Python data source: rows written to a Kafka topic, batch and streaming.

Input columns (by name; only `value` is required):
  key        binary       the record key (null: no key)
  value      binary       the record value (null: a tombstone); or, with the value.avro.*
                          options, a struct of the fields the writer encodes as Avro
  headers    array<struct<key string, value binary>>   record headers, in order
  timestamp  timestamp    the record timestamp (null or absent: the producer's clock; 0 is
                          written as 0, by `zero_time`, as librdkafka reads 0 as "none given")
  partition  int          the target partition (null or absent: the producer's partitioner,
                          or the windowed partitioner below)

Options (strings):
  bootstrap.servers   required
  topic               required
  flushTimeout        seconds a task waits for its records to be acknowledged (default 120)
  kafka.<setting>     passed to the producer (e.g. kafka.security.protocol)
  value.avro.schemaId, value.avro.types, value.avro.bare
                      the value is a struct of optional primitives (types: one Avro primitive per
                      field, comma-separated) written as Confluent-framed Avro with that schema
                      id (sinks.avro_columns), in the writer's own Python worker
  partition.windowBytes, partition.count
                      the keys are windowed keys ending with that many bytes of window: each
                      record goes to the partition of its inner key (murmur2 of the key without
                      the window, over `count` partitions), as Kafka Streams' windowed
                      partitioner places them (kafka.partitioner.windowed_partition)
  secret.kafka.<setting>  the same, for secrets (sasl.password): Spark masks option names
                      containing "secret"

Records are produced on the executors, one idempotent producer (`acks=all`) per task, and
flushed before the task returns: a record the broker did not acknowledge fails the task, so
the micro-batch fails and is retried from the checkpoint (at-least-once, never a silent drop).
The driver only sums the per-task counts.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Iterator, Mapping

from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)

from kafkasql_magic.clientconf import SECRET_OPTION

NAME = "kafkasql_sink"
DEFAULT_FLUSH_TIMEOUT = 120.0
PRODUCER_DEFAULTS = {
    "enable.idempotence": True,
    "acks": "all",
    "linger.ms": 5,
    "compression.type": "lz4",
    # Java's partitioner (ksqlDB, Kafka Streams): a key lands where they would put it, so topics
    # stay co-partitioned with theirs (librdkafka's default, CRC32, would scatter keys differently)
    "partitioner": "murmur2_random",
    # only failures call back into Python (a call per record costs as much as producing it);
    # a flush that leaves nothing outstanding and reported no failure means all were acknowledged
    "delivery.report.only.error": True,
}


@dataclass(frozen=True)
class SinkOptions:
    """The writer's options, parsed once on the driver and shipped to the tasks."""

    bootstrap: str
    topic: str
    flush_timeout: float = DEFAULT_FLUSH_TIMEOUT
    kafka_conf: Mapping[str, str] = field(default_factory=dict)
    value_avro: tuple[int, tuple[str, ...], bool] | None = None  # schema id, Avro primitives, bare
    windowed: tuple[int, int] | None = None  # window bytes at the key's end, partition count

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> "SinkOptions":
        for required in ("bootstrap.servers", "topic"):
            if not options.get(required):
                raise ValueError(f"The {NAME} data source needs the option {required!r}.")
        return cls(
            bootstrap=options["bootstrap.servers"],
            topic=options["topic"],
            flush_timeout=float(options.get("flushTimeout", DEFAULT_FLUSH_TIMEOUT)),
            kafka_conf={k[len(prefix):]: v for k, v in options.items()
                        for prefix in ("kafka.", SECRET_OPTION) if k.startswith(prefix)},
            value_avro=((int(options["value.avro.schemaId"]), tuple(options["value.avro.types"].split(",")),
                         options.get("value.avro.bare", "false") == "true")
                        if options.get("value.avro.schemaId") else None),
            windowed=((int(options["partition.windowBytes"]), int(options["partition.count"]))
                      if options.get("partition.windowBytes") else None),
        )

    def producer_conf(self) -> dict:
        return {**PRODUCER_DEFAULTS, **self.kafka_conf, "bootstrap.servers": self.bootstrap}


@dataclass
class SinkCommit(WriterCommitMessage):
    """What one task produced: how many records, all acknowledged."""

    records: int


class DeliveryFailed(RuntimeError):
    """The broker did not acknowledge a record: the task (so the micro-batch) fails."""


def _millis(column):
    """A timestamp column as epoch milliseconds (None stays None)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_timestamp(column.type):
        column = column.cast(pa.timestamp("ms", tz=column.type.tz), safe=False)
        column = pc.cast(column, pa.int64())
    return column


def _column(batch, name: str, missing=None) -> list:
    """A column's Python values, `missing` for NULL (and for a column the frame lacks)."""
    index = batch.schema.get_field_index(name)
    if index < 0:
        return [missing] * batch.num_rows
    column = batch.column(index)
    if name == "timestamp":
        column = _millis(column)
    if missing is not None:
        column = column.fill_null(missing)
    return column.to_pylist()


def _values(batch, options: SinkOptions) -> list:
    """The value column's bytes: as given, or a struct encoded as Avro here (value_avro)."""
    import pyarrow as pa

    index = batch.schema.get_field_index("value")
    column = batch.column(index) if index >= 0 else None
    if options.value_avro is None or column is None or not pa.types.is_struct(column.type):
        return _column(batch, "value")
    import struct

    import pyarrow.compute as pc

    from kafkasql_magic.sinks import avro_columns

    schema_id, types_, bare = options.value_avro
    fields = [column.field(i) for i in range(column.type.num_fields)]
    encoded = avro_columns.encode(fields, list(types_), struct.pack(">bI", 0, schema_id), bare)
    return pc.if_else(column.is_valid(), encoded, pa.scalar(None, pa.binary())).to_pylist()  # NULL: a tombstone


def _partitions(batch, keys: list, options: SinkOptions) -> list:
    """Each record's partition: the partition column's, else (windowed keys) the inner key's,
    else -1 (the producer's partitioner)."""
    if options.windowed is None or batch.schema.get_field_index("partition") >= 0:
        return _column(batch, "partition", -1)
    from kafkasql_magic.kafka.partitioner import windowed_partition

    window_bytes, count = options.windowed
    return [-1 if key is None else windowed_partition(key, window_bytes, count) for key in keys]


def _zero_times(batch) -> list | None:
    """Which records' timestamp is 0 as given (NULL is none given), or None when none is."""
    import pyarrow.compute as pc

    index = batch.schema.get_field_index("timestamp")
    if index < 0:
        return None
    zero = pc.equal(_millis(batch.column(index)), 0)
    return zero.fill_null(False).to_pylist() if pc.any(zero).as_py() else None


def _write_zero_run(producer, options: SinkOptions, run: list, failures: list) -> None:
    """Records of time 0 (`zero_time`), after every record produced before them is acknowledged,
    so a partition keeps the batch's order."""
    from kafkasql_magic.kafka.zero_time import NotAcknowledged, ZeroTimeFailed, write_in_order

    topic = options.topic
    rows = [(key, value, hdrs, part) for key, value, hdrs, _, part in run]
    try:
        write_in_order(producer, options.producer_conf(), topic, rows, options.flush_timeout, failures)
    except NotAcknowledged as exc:
        raise DeliveryFailed(f"records to topic {topic!r} were not acknowledged before {len(run)} record(s) of "
                             f"time 0 (bootstrap {options.bootstrap}){': ' + exc.failure if exc.failure else ''}"
                             ) from None
    except ZeroTimeFailed as exc:
        raise DeliveryFailed(f"Cannot write {len(run)} record(s) of time 0 to topic {topic!r} (bootstrap "
                             f"{options.bootstrap}): {exc}") from exc


def _produce_in_runs(producer, options: SinkOptions, rows, zeros: list, delivered, failures: list) -> None:
    """A batch holding records of time 0: runs of them written by `zero_time`, the rest by `producer`."""
    run: list = []
    for row, zero in zip(rows, zeros):
        if zero:
            run.append(row)
            continue
        if run:
            _write_zero_run(producer, options, run, failures)
            run = []
        key, value, hdrs, stamp, part = row
        _produce_when_room(producer, options.topic, value, key, part, delivered, stamp, hdrs)
    if run:
        _write_zero_run(producer, options, run, failures)


def _headers(cells: list) -> list:
    return [None if not cell else [(h["key"], h["value"]) for h in cell] for cell in cells]


def _produce_when_room(producer, topic, value, key, part, delivered, stamp, hdrs) -> None:
    from confluent_kafka import KafkaException

    while True:
        producer.poll(0.1)
        try:
            producer.produce(topic, value, key, part, on_delivery=delivered, timestamp=stamp, headers=hdrs)
            return
        except BufferError:
            continue
        except KafkaException as exc:
            raise DeliveryFailed(f"Cannot produce to topic {topic!r}: {exc}") from exc


def produce_batches(options: SinkOptions, batches: Iterator) -> SinkCommit:
    """Produce every row of `batches` to `options.topic`; return once all are acknowledged."""
    from confluent_kafka import KafkaException, Producer

    failures: list = []
    sent = 0

    def delivered(err, msg):
        if err is not None:
            failures.append(f"partition {msg.partition()}: {err}")

    producer = None  # made at the first row: a task with none (an empty partition) costs no connection
    topic = options.topic
    for batch in batches:
        if failures:
            break
        if batch.num_rows == 0:
            continue
        if producer is None:
            producer = Producer(options.producer_conf())
        keys, values = _column(batch, "key"), _values(batch, options)
        headers = _headers(_column(batch, "headers"))
        stamps, parts = _column(batch, "timestamp", 0), _partitions(batch, keys, options)
        produce = producer.produce
        sent += len(keys)
        zeros = _zero_times(batch)
        if zeros is not None:  # NULL became 0 above: `zeros` tells a 0 given from none given
            _produce_in_runs(producer, options, zip(keys, values, headers, stamps, parts), zeros, delivered,
                             failures)
            producer.poll(0)
            continue
        for key, value, hdrs, stamp, part in zip(keys, values, headers, stamps, parts):
            try:  # partition -1 and timestamp 0 (NULL: no record here is of time 0) mean none given
                produce(topic, value, key, part, on_delivery=delivered, timestamp=stamp, headers=hdrs)
            except BufferError:  # the local queue is full: serve deliveries, then retry this record
                _produce_when_room(producer, topic, value, key, part, delivered, stamp, hdrs)
            except KafkaException as exc:
                raise DeliveryFailed(f"Cannot produce to topic {topic!r}: {exc}") from exc
        producer.poll(0)
    if producer is None:
        return SinkCommit(0)
    deadline = time.monotonic() + options.flush_timeout
    remaining = producer.flush(options.flush_timeout)
    while remaining and time.monotonic() < deadline:
        remaining = producer.flush(max(0.1, deadline - time.monotonic()))
    if failures:
        raise DeliveryFailed(f"{len(failures)} record(s) to topic {topic!r} were not delivered "
                             f"(bootstrap {options.bootstrap}); first: {failures[0]}")
    if remaining:
        raise DeliveryFailed(f"{remaining} record(s) to topic {topic!r} were not acknowledged within "
                             f"{options.flush_timeout:g}s (bootstrap {options.bootstrap})")
    return SinkCommit(sent)


def total(messages) -> int:
    """Records the tasks of one batch produced (None messages are failed tasks)."""
    return sum(m.records for m in messages if m is not None)


class KafkaStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, options: SinkOptions):
        self.options = options
        self.records = 0

    def write(self, iterator) -> SinkCommit:
        return produce_batches(self.options, iterator)

    def commit(self, messages, batchId) -> None:
        self.records += total(messages)

    def abort(self, messages, batchId) -> None:
        pass


class KafkaBatchWriter(DataSourceArrowWriter):
    def __init__(self, options: SinkOptions):
        self.options = options

    def write(self, iterator) -> SinkCommit:
        return produce_batches(self.options, iterator)


class KafkaSinkDataSource(DataSource):
    """`df.writeStream.format("kafkasql_sink")` / `df.write.format("kafkasql_sink")`."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def writer(self, schema, overwrite: bool) -> KafkaBatchWriter:
        return KafkaBatchWriter(SinkOptions.parse(self.options))

    def streamWriter(self, schema, overwrite: bool) -> KafkaStreamWriter:
        return KafkaStreamWriter(SinkOptions.parse(self.options))


def register(spark) -> None:
    """Register the `kafkasql_sink` data source with `spark`."""
    spark.dataSource.register(KafkaSinkDataSource)
