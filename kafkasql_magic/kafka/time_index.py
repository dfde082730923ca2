"""The first offset per partition whose record timestamp is >= t, checked against the records.

The broker's offsets-for-times answer is exact on Apache Kafka but only a lower bound on
brokers with a coarser index (the embedded Tansu broker answers its earliest offset for any
time). So the answer is confirmed by reading forward from it until the first record at or
after t, or the partition's end: on Kafka that is one record per partition, elsewhere a scan.
"""

from __future__ import annotations

import time
from typing import Mapping, Sequence

from . import admin, offsets
from .offsets import EndOffsets

SCAN_GROUP = "kafkasql-magic-time-index"


def first_offsets_at_or_after(bootstrap: str, topic: str, partitions: Sequence[int], timestamp_ms: int, *,
                              conf: Mapping[str, object] | None = None,
                              timeout: float = admin.DEFAULT_TIMEOUT) -> dict[int, int]:
    """{partition: first offset with timestamp >= timestamp_ms} (the partition's end if none)."""
    from confluent_kafka import Consumer, TopicPartition

    starts = offsets.offsets_for_time(bootstrap, topic, partitions, timestamp_ms, conf=conf, timeout=timeout)
    ends = EndOffsets(bootstrap, conf, timeout=timeout).latest(topic, partitions)
    found = {p: ends[p] for p in partitions}
    pending = {p for p in partitions if starts[p] < ends[p]}
    if not pending:
        return found
    settings = admin.client_conf(bootstrap, conf)
    settings.update({"group.id": SCAN_GROUP, "enable.auto.commit": False, "fetch.wait.max.ms": 10})
    consumer = Consumer(settings)
    deadline = time.monotonic() + timeout
    try:
        consumer.assign([TopicPartition(topic, p, starts[p]) for p in pending])
        while pending and time.monotonic() < deadline:
            for msg in consumer.consume(10000, 0.05):
                p = msg.partition()
                if msg.error() is not None or p not in pending:
                    continue
                if msg.timestamp()[1] >= timestamp_ms:
                    found[p] = msg.offset()
                    pending.discard(p)
                elif msg.offset() + 1 >= ends[p]:
                    pending.discard(p)
    finally:
        consumer.close()
    return found
