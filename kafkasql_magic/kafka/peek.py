"""Read a few records directly in the driver: ksqlDB's `PRINT` and schema sampling.

No Spark involved: one short-lived confluent-kafka consumer, partitions assigned directly.
"""

from __future__ import annotations

import time
from typing import Iterable, Mapping

from kafkasql_magic.errors import KafkaError
from kafkasql_magic.kafka import admin
from kafkasql_magic.kafka.offsets import EndOffsets

PEEK_GROUP = "kafkasql-magic-peek"


def _record(msg) -> dict:
    return {
        "key": msg.key(),
        "value": msg.value(),
        "headers": list(msg.headers() or ()),
        "topic": msg.topic(),
        "partition": msg.partition(),
        "offset": msg.offset(),
        "timestamp": msg.timestamp()[1],
    }


def fetch_records(
    bootstrap: str,
    topic: str,
    *,
    from_beginning: bool,
    limit: int | None,
    timeout_s: float,
    partitions: Iterable[int] | None = None,
    start_offsets: Mapping[int, int] | None = None,
    until_end: bool | None = None,
    conf: Mapping[str, object] | None = None,
) -> list[dict]:
    """Records of `topic` as dicts: key, value (bytes or None), headers (list of (str, bytes or
    None) pairs), topic, partition, offset, timestamp (ms).

    `from_beginning=True` starts at the earliest offsets (or `start_offsets`, {partition:
    offset}); `False` only returns records that arrive during the `timeout_s` window. The call
    returns after `limit` records, after `timeout_s` seconds, or - with `until_end` (default:
    when reading from the beginning or from `start_offsets`) - once every partition reached the
    end offsets it had when the call started.
    """
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka import KafkaError as CKError

    wait = max(2.0, min(float(timeout_s), admin.DEFAULT_TIMEOUT))
    parts = (sorted(partitions) if partitions is not None
             else admin.topic_partitions(bootstrap, topic, conf=conf, timeout=wait))
    if limit is not None and limit <= 0:
        return []
    offsets = EndOffsets(bootstrap, conf, timeout=wait)
    ends = offsets.latest(topic, parts)
    if start_offsets:
        starts = {p: int(start_offsets.get(p, start_offsets.get(str(p), -2))) for p in parts}
    elif from_beginning:
        starts = {p: -2 for p in parts}  # OFFSET_BEGINNING
    else:
        starts = dict(ends)
    if until_end is None:
        until_end = bool(from_beginning or start_offsets)
    lows = offsets.earliest(topic, parts) if until_end else {}
    pending = set(parts)
    if until_end:
        for p in parts:
            start = starts[p]
            start = lows[p] if start < 0 else start
            if start >= ends[p]:
                pending.discard(p)
        if not pending:
            return []

    settings = admin.client_conf(bootstrap, conf)
    settings.update({"group.id": PEEK_GROUP, "enable.auto.commit": False,
                     "enable.partition.eof": True, "auto.offset.reset": "earliest",
                     "fetch.wait.max.ms": 100})
    consumer = Consumer(settings)
    out: list[dict] = []
    deadline = time.monotonic() + timeout_s
    try:
        consumer.assign([TopicPartition(topic, p, starts[p]) for p in parts])
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or (limit is not None and len(out) >= limit) or (until_end and not pending):
                break
            want = 500 if limit is None else min(500, limit - len(out))
            for msg in consumer.consume(want, min(0.1, left)):
                err = msg.error()
                p = msg.partition()
                if err is not None:
                    if err.code() == CKError._PARTITION_EOF:
                        if until_end and msg.offset() >= ends.get(p, 0):
                            pending.discard(p)
                        continue
                    if err.code() in (CKError.UNKNOWN_TOPIC_OR_PART, CKError._UNKNOWN_TOPIC,
                                      CKError._UNKNOWN_PARTITION):
                        raise admin.missing_topic(topic, bootstrap)
                    if err.fatal():
                        raise KafkaError(f"Cannot read topic {topic!r} (bootstrap {bootstrap}): {err}")
                    continue
                if until_end and p not in pending:
                    continue  # beyond this partition's end when the call started
                off = msg.offset()
                if until_end and off >= ends[p]:
                    pending.discard(p)
                    continue
                out.append(_record(msg))
                if until_end and off + 1 >= ends[p]:
                    pending.discard(p)
                if limit is not None and len(out) >= limit:
                    break
    finally:
        consumer.close()
    return out
