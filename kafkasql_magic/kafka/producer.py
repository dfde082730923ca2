"""Produce records: INSERT VALUES, and demos, tests and benchmarks.

A record is a dict with optional `key` and `value` (bytes, str or None), `headers` (a list of
(str, bytes | None) pairs; order and duplicates kept), `partition` (int) and `timestamp`
(milliseconds since the epoch; 0 is written as 0, by `zero_time`: librdkafka writes it as now).
"""

from __future__ import annotations

import atexit
import threading
from typing import Iterable, Mapping

from kafkasql_magic.errors import KafkaError
from kafkasql_magic.kafka import admin
from kafkasql_magic.kafka.headers import checked_headers

PRODUCER_CONF = {
    "linger.ms": 5,
    "batch.num.messages": 10000,
    "batch.size": 1_000_000,
    "queue.buffering.max.messages": 500_000,
    "queue.buffering.max.kbytes": 512 * 1024,
    "message.timeout.ms": 60_000,
    # Java's partitioner, as the sink writer's: INSERT VALUES puts a key where ksqlDB would
    "partitioner": "murmur2_random",
}

_PRODUCERS: dict[tuple, object] = {}
_LOCK = threading.Lock()
_FIELDS = frozenset({"key", "value", "headers", "partition", "timestamp"})


class _Delivery:
    __slots__ = ("error", "failed")

    def __init__(self):
        self.error = None
        self.failed = 0

    def __call__(self, err, msg):
        if err is not None:
            self.failed += 1
            if self.error is None:
                self.error = err


def producer(bootstrap: str, conf: Mapping[str, object] | None = None):
    """A cached Producer per (bootstrap, conf); flushed at interpreter exit."""
    from confluent_kafka import Producer

    settings = admin.client_conf(bootstrap, {**PRODUCER_CONF, **(conf or {})})
    key = (bootstrap, tuple(sorted((k, str(v)) for k, v in settings.items() if k != "logger")))
    with _LOCK:
        prod = _PRODUCERS.get(key)
        if prod is None:
            prod = _PRODUCERS[key] = Producer(settings)
        return prod


def drop_producers(bootstrap: str) -> None:
    """Forget the cached producers of `bootstrap` (unflushed records are dropped)."""
    with _LOCK:
        for key in [k for k in _PRODUCERS if k[0] == bootstrap]:
            del _PRODUCERS[key]


@atexit.register
def _flush_all() -> None:
    for prod in list(_PRODUCERS.values()):
        try:
            prod.flush(10)
        except Exception:
            pass


def create_topic(bootstrap: str, topic: str, partitions: int = 1, **kwargs) -> bool:
    """Create `topic` (if missing) and wait until its metadata shows it."""
    kwargs.setdefault("exist_ok", True)
    return admin.create_topic(bootstrap, topic, partitions, **kwargs)


def _write_time_zero(prod, settings: Mapping[str, object], topic: str, record: Mapping, timeout: float) -> None:
    """A record of time 0, after the records before it are acknowledged (`zero_time`)."""
    from .zero_time import NotAcknowledged, ZeroTimeFailed, write_in_order

    def raw(data):
        return data.encode() if isinstance(data, str) else data

    row = (raw(record.get("key")), raw(record.get("value")), record.get("headers"), record.get("partition", -1))
    try:
        write_in_order(prod, settings, topic, [row], timeout)
    except NotAcknowledged:
        raise KafkaError(f"records to topic {topic!r} were not acknowledged within {timeout:g}s") from None
    except ZeroTimeFailed as exc:
        raise KafkaError(f"Cannot write a record of time 0 to topic {topic!r}: {exc}") from exc


def produce(
    bootstrap_servers: str,
    topic: str,
    records: Iterable[Mapping],
    *,
    create_partitions: int | None = None,
    flush: bool = True,
    conf: Mapping[str, object] | None = None,
    timeout: float = 60.0,
) -> int:
    """Produce `records` to `topic`; returns how many were queued.

    With `create_partitions`, the topic is created first (with that many partitions) if it does
    not exist. With `flush` (default) the call returns once every record is acknowledged and
    raises KafkaError if any failed; without it records may still be in flight (they are
    flushed by the next flushing call or at exit).
    """
    if create_partitions is not None:
        create_topic(bootstrap_servers, topic, create_partitions, conf=conf)
    prod = producer(bootstrap_servers, conf)
    settings = admin.client_conf(bootstrap_servers, {**PRODUCER_CONF, **(conf or {})})
    delivery = _Delivery()
    send = prod.produce
    poll = prod.poll
    count = 0
    for rec in records:
        kwargs = dict(rec)
        if kwargs.keys() - _FIELDS:
            raise ValueError(f"Unknown record fields: {sorted(kwargs.keys() - _FIELDS)}")
        if kwargs.get("partition") is None:
            kwargs.pop("partition", None)
        if kwargs.get("timestamp") is None:
            kwargs.pop("timestamp", None)
        if not kwargs.get("headers"):
            kwargs.pop("headers", None)
        else:
            kwargs["headers"] = checked_headers(kwargs["headers"])
        if kwargs.get("timestamp") == 0:
            _write_time_zero(prod, settings, topic, kwargs, timeout)
            count += 1
            continue
        while True:
            try:
                send(topic, on_delivery=delivery, **kwargs)
                break
            except BufferError:  # local queue full: let deliveries drain
                poll(0.05)
        count += 1
        if count % 10000 == 0:
            poll(0)
    poll(0)
    if flush:
        left = prod.flush(timeout)
        if left:
            raise KafkaError(
                f"{left} record(s) to topic {topic!r} were not acknowledged within {timeout:g}s "
                f"(bootstrap {bootstrap_servers})"
            )
        if delivery.error is not None:
            raise KafkaError(
                f"{delivery.failed} record(s) to topic {topic!r} failed (bootstrap "
                f"{bootstrap_servers}): {delivery.error}"
            )
    return count
