"""The `kafkasql_sink` Spark Python data source: rows written to a Kafka topic, batch and streaming.

Input columns (by name; only `value` is required):
  key        binary       the record key (null: no key)
  value      binary       the record value (null: a tombstone)
  headers    array<struct<key string, value binary>>   record headers, in order
  timestamp  timestamp    the record timestamp (null or absent: the producer's clock)
  partition  int          the target partition (null or absent: the producer's partitioner)

Options (strings):
  bootstrap.servers   required
  topic               required
  flushTimeout        seconds a task waits for its records to be acknowledged (default 120)
  kafka.<setting>     passed to the producer (e.g. kafka.security.protocol)
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
}


@dataclass(frozen=True)
class SinkOptions:
    """The writer's options, parsed once on the driver and shipped to the tasks."""

    bootstrap: str
    topic: str
    flush_timeout: float = DEFAULT_FLUSH_TIMEOUT
    kafka_conf: Mapping[str, str] = field(default_factory=dict)

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
        )

    def producer_conf(self) -> dict:
        return {**PRODUCER_DEFAULTS, **self.kafka_conf, "bootstrap.servers": self.bootstrap}


@dataclass
class SinkCommit(WriterCommitMessage):
    """What one task produced: records per partition."""

    records: dict


class DeliveryFailed(RuntimeError):
    """The broker did not acknowledge a record: the task (so the micro-batch) fails."""


def _millis(column) -> list:
    """A timestamp column as epoch milliseconds (None stays None)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_timestamp(column.type):
        column = column.cast(pa.timestamp("ms", tz=column.type.tz), safe=False)
        column = pc.cast(column, pa.int64())
    return column.to_pylist()


def _column(batch, name: str) -> list:
    index = batch.schema.get_field_index(name)
    if index < 0:
        return [None] * batch.num_rows
    if name == "timestamp":
        return _millis(batch.column(index))
    return batch.column(index).to_pylist()


def _headers(cells: list) -> list:
    return [None if cell is None else [(h["key"], h["value"]) for h in cell] for cell in cells]


def produce_batches(options: SinkOptions, batches: Iterator) -> SinkCommit:
    """Produce every row of `batches` to `options.topic`; return once all are acknowledged."""
    from confluent_kafka import KafkaException, Producer

    failures: list = []
    counts: dict[int, int] = {}

    def delivered(err, msg):
        if err is not None:
            failures.append(f"partition {msg.partition()}: {err}")
        else:
            counts[msg.partition()] = counts.get(msg.partition(), 0) + 1

    producer = Producer(options.producer_conf())
    topic = options.topic
    for batch in batches:
        if failures:
            break
        keys, values = _column(batch, "key"), _column(batch, "value")
        headers = _headers(_column(batch, "headers"))
        stamps, parts = _column(batch, "timestamp"), _column(batch, "partition")
        for key, value, hdrs, stamp, part in zip(keys, values, headers, stamps, parts):
            kwargs = {"key": key, "value": value, "on_delivery": delivered}
            if hdrs:
                kwargs["headers"] = hdrs
            if stamp is not None:
                kwargs["timestamp"] = stamp
            if part is not None:
                kwargs["partition"] = part
            while True:
                try:
                    producer.produce(topic, **kwargs)
                    break
                except BufferError:
                    producer.poll(0.1)
                except KafkaException as exc:
                    raise DeliveryFailed(f"Cannot produce to topic {topic!r}: {exc}") from exc
        producer.poll(0)
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
    return SinkCommit(counts)


def total(messages) -> int:
    """Records the tasks of one batch produced (None messages are failed tasks)."""
    return sum(sum(m.records.values()) for m in messages if m is not None)


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
