"""The registry's state as a compacted Kafka topic (`_schemas`, as Confluent's).

Keys and values are JSON, shaped like Confluent Schema Registry's own records:
`{"keytype":"SCHEMA","subject":s,"version":v,"magic":1}` -> the version (a null value is a
permanent delete) and `{"keytype":"CONFIG","subject":s|null,"magic":0}` ->
`{"compatibilityLevel":L}`.

Reading to the end: some brokers (Tansu, the embedded one) report the base offset of the
*last record batch* + 1 as the high watermark, so records after the first of the last batch
look absent to a reader that stops at it. Two defences: `append` flushes every record on its
own, so each batch holds one record; and `read_all` stops at the partition-EOF event, whose
offset is the high watermark of the Fetch response (exact on Tansu too), and never before the
listed watermark.
"""

from __future__ import annotations

import json
import time

from kafkasql_magic.errors import KafkaError
from kafkasql_magic.kafka import admin

PRODUCER_CONF = {"acks": "all", "linger.ms": 0, "enable.idempotence": False,
                 "max.in.flight.requests.per.connection": 1}


def encode(obj) -> bytes | None:
    return None if obj is None else json.dumps(obj, separators=(",", ":")).encode()


class SchemaLog:
    """Append-and-replay access to the registry topic on `bootstrap`."""

    def __init__(self, bootstrap: str, topic: str = "_schemas", *, conf: dict | None = None,
                 timeout: float = 30.0):
        self.bootstrap = bootstrap
        self.topic = topic
        self.conf = dict(conf or {})
        self.timeout = timeout
        self._producer = None

    def open(self) -> list[tuple[dict, dict | None]]:
        """Create the topic if missing, then return every (key, value) in it, in order."""
        admin.create_topic(self.bootstrap, self.topic, 1, exist_ok=True, conf=self.conf,
                           config={"cleanup.policy": "compact"}, timeout=self.timeout)
        records = self.read_all()
        from confluent_kafka import Producer

        settings = dict(PRODUCER_CONF, **{"message.timeout.ms": int(self.timeout * 1000)})
        settings.update(self.conf)
        self._producer = Producer(admin.client_conf(self.bootstrap, settings))
        return records

    def read_all(self) -> list[tuple[dict, dict | None]]:
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
        from confluent_kafka import KafkaError as CKError

        parts = admin.topic_partitions(self.bootstrap, self.topic, conf=self.conf,
                                       timeout=self.timeout)
        settings = admin.client_conf(self.bootstrap, self.conf)
        settings.update({"group.id": "kafkasql-magic-registry", "enable.auto.commit": False,
                         "enable.partition.eof": True, "fetch.wait.max.ms": 10,
                         "auto.offset.reset": "earliest"})
        consumer = Consumer(settings)
        out: list[tuple[dict, dict | None]] = []
        deadline = time.monotonic() + self.timeout
        try:
            listed = {}
            for p in parts:
                _low, high = consumer.get_watermark_offsets(TopicPartition(self.topic, p),
                                                            timeout=self.timeout)
                listed[p] = high
            position = {p: 0 for p in parts}
            pending = set(parts)
            consumer.assign([TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in parts])
            while pending:
                if time.monotonic() > deadline:
                    raise KafkaError(f"Reading the schema registry topic {self.topic!r} did not "
                                     f"finish within {self.timeout:g}s (bootstrap "
                                     f"{self.bootstrap})")
                for msg in consumer.consume(1000, 0.1):
                    p = msg.partition()
                    err = msg.error()
                    if err is not None:
                        if err.code() == CKError._PARTITION_EOF:
                            if msg.offset() >= listed[p] and position[p] >= msg.offset():
                                pending.discard(p)
                            continue
                        if err.fatal() or not err.retriable():
                            raise KafkaError(f"Cannot read the schema registry topic "
                                             f"{self.topic!r} (bootstrap {self.bootstrap}): {err}")
                        continue
                    position[p] = msg.offset() + 1
                    if msg.key() is None:
                        continue
                    try:
                        key = json.loads(msg.key())
                        value = None if msg.value() is None else json.loads(msg.value())
                    except ValueError:
                        continue  # not ours: skip, as Confluent skips unknown records
                    out.append((key, value))
        finally:
            consumer.close()
        return out

    def append(self, key: dict, value: dict | None) -> None:
        """Write one record and wait until the broker acknowledged it."""
        producer = self._producer
        if producer is None:
            raise KafkaError("The schema registry log is not open")
        errors = []

        def delivered(err, _msg):
            if err is not None:
                errors.append(err)

        producer.produce(self.topic, key=encode(key), value=encode(value), partition=0,
                         on_delivery=delivered)
        left = producer.flush(self.timeout)
        if left:  # never let a reply we failed be written later behind our back
            producer.purge(in_queue=True, in_flight=False)
        if left or errors:
            why = errors[0] if errors else f"not acknowledged within {self.timeout:g}s"
            raise KafkaError(f"Cannot write to the schema registry topic {self.topic!r} "
                             f"(bootstrap {self.bootstrap}): {why}")

    def close(self) -> None:
        producer, self._producer = self._producer, None
        if producer is not None:
            producer.flush(min(self.timeout, 5.0))
