"""Records whose timestamp is 0, produced as they are.

librdkafka (so confluent-kafka) reads a produce timestamp of 0 as "none given" and stamps the
record with the current time, and has no other way to ask for CreateTime 0. ksqlDB (the Java
producer) writes 0 as given, and records of time 0 are common in its tests and in replays. So a
sink writes such records itself: one Produce request (version 3, the oldest Kafka 4 brokers
take, `acks=all`) per run of them, to each partition's leader as the producer's metadata names
it, in Kafka's record batch format (magic 2, uncompressed, no producer id).

Only PLAINTEXT listeners: over SSL or SASL the record is refused with an error naming why,
never written with another time.
"""

from __future__ import annotations

import random
import socket
import struct
from typing import Iterable, Mapping, Sequence

PRODUCE, VERSION = 0, 3
CLIENT_ID = b"kafkasql_magic-zero-time"
PLAIN = "PLAINTEXT"


class ZeroTimeFailed(RuntimeError):
    """A record of time 0 could not be written (the task, so the micro-batch, fails)."""


class NotAcknowledged(ZeroTimeFailed):
    """Records produced before those of time 0 were not all acknowledged: writing them now
    would change a partition's order. `failure` is the first delivery error seen, if any."""

    def __init__(self, failure: str | None):
        super().__init__(failure or "not acknowledged in time")
        self.failure = failure


def _crc32c_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli), the checksum of Kafka's record batches."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def varint(n: int) -> bytes:
    """Kafka's zig-zag variable-length integer."""
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        if z < 0x80:
            out.append(z)
            return bytes(out)
        out.append((z & 0x7F) | 0x80)
        z >>= 7


def _sized(data: bytes | None) -> bytes:
    return varint(-1) if data is None else varint(len(data)) + data


def record_batch(records: Sequence[tuple[bytes | None, bytes | None, list | None, int]]) -> bytes:
    """(key, value, headers, timestamp) records as one uncompressed record batch (magic 2)."""
    base = records[0][3]
    body = bytearray()
    for delta, (key, value, headers, stamp) in enumerate(records):
        record = (b"\x00" + varint(stamp - base) + varint(delta) + _sized(key) + _sized(value)
                  + varint(len(headers or ())))
        for name, data in headers or ():
            record += _sized(name.encode() if isinstance(name, str) else name) + _sized(data)
        body += varint(len(record)) + record
    after_crc = (struct.pack(">hiqqqhii", 0, len(records) - 1, base, max(r[3] for r in records), -1, -1, -1,
                             len(records)) + bytes(body))
    after_length = struct.pack(">ib", -1, 2) + struct.pack(">I", crc32c(after_crc)) + after_crc
    return struct.pack(">qi", 0, len(after_length)) + after_length


def _string(text: str | None) -> bytes:
    if text is None:
        return struct.pack(">h", -1)
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def produce_request(correlation: int, topic: str, batches: Mapping[int, bytes], timeout_ms: int) -> bytes:
    """A Produce request (v3, acks=all) of one record batch per partition, size-prefixed."""
    body = struct.pack(">hhi", PRODUCE, VERSION, correlation) + struct.pack(">h", len(CLIENT_ID)) + CLIENT_ID
    body += _string(None) + struct.pack(">hi", -1, timeout_ms) + struct.pack(">i", 1) + _string(topic)
    body += struct.pack(">i", len(batches))
    for partition, batch in batches.items():
        body += struct.pack(">ii", partition, len(batch)) + batch
    return struct.pack(">i", len(body)) + body


def partition_errors(response: bytes, correlation: int) -> dict[int, int]:
    """A Produce response (v3, without its size) -> {partition: error code}."""
    (got,) = struct.unpack_from(">i", response, 0)
    if got != correlation:
        raise ZeroTimeFailed(f"unexpected Produce response (correlation id {got}, expected {correlation})")
    offset, errors = 4, {}
    (topics,) = struct.unpack_from(">i", response, offset)
    offset += 4
    for _ in range(topics):
        (length,) = struct.unpack_from(">h", response, offset)
        offset += 2 + length
        (count,) = struct.unpack_from(">i", response, offset)
        offset += 4
        for _ in range(count):
            partition, code = struct.unpack_from(">ih", response, offset)
            offset += 4 + 2 + 8 + 8  # base offset, log append time
            errors[partition] = code
    return errors


def _exchange(address: tuple[str, int], request: bytes, timeout: float) -> bytes:
    with socket.create_connection(address, timeout=timeout) as conn:
        conn.sendall(request)
        size = struct.unpack(">i", _read(conn, 4))[0]
        return _read(conn, size)


def _read(conn, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise ZeroTimeFailed("the broker closed the connection before answering")
        data += chunk
    return bytes(data)


def write_in_order(producer, conf: Mapping[str, object], topic: str,
                   records: Sequence[tuple[bytes | None, bytes | None, list | None, int]], timeout: float,
                   delivery_failures: Sequence[str] = ()) -> int:
    """`produce_zero_time`, once every record `producer` sent before is acknowledged (a partition
    keeps its order): NotAcknowledged when the flush leaves records or `delivery_failures` (the
    caller's delivery callbacks') holds one; a socket error is a ZeroTimeFailed too."""
    if producer.flush(timeout) or delivery_failures:
        raise NotAcknowledged(delivery_failures[0] if delivery_failures else None)
    try:
        return produce_zero_time(producer, conf, topic, records, timeout)
    except OSError as exc:
        raise ZeroTimeFailed(str(exc)) from exc


def produce_zero_time(producer, conf: Mapping[str, object], topic: str,
                      records: Iterable[tuple[bytes | None, bytes | None, list | None, int]],
                      timeout: float) -> int:
    """Write (key, value, headers, partition) records with CreateTime 0 to `topic`, in order,
    through `producer`'s metadata (its partition leaders); return once the leaders acknowledged
    them all (acks=all), else raise ZeroTimeFailed. Partition -1: the key's murmur2 partition
    (a random one without a key), as the producer's partitioner would choose."""
    from .partitioner import default_partition

    protocol = str(conf.get("security.protocol", PLAIN)).upper()
    if protocol != PLAIN:
        raise ZeroTimeFailed(f"the cluster listens with security.protocol={protocol}, and only PLAINTEXT "
                             "listeners take records of time 0 from kafkasql_magic (librdkafka writes 0 as "
                             "the current time)")
    metadata = producer.list_topics(topic, timeout=timeout)
    found = metadata.topics.get(topic)
    if found is None or found.error is not None or not found.partitions:
        raise ZeroTimeFailed(f"no metadata for topic {topic!r}: {None if found is None else found.error}")
    count = len(found.partitions)
    by_leader: dict[int, dict[int, list]] = {}
    written = 0
    for key, value, headers, partition in records:
        if partition is None or partition < 0:
            partition = random.randrange(count) if key is None else default_partition(key, count)
        leader = found.partitions[partition].leader
        by_leader.setdefault(leader, {}).setdefault(partition, []).append((key, value, headers, 0))
        written += 1
    for number, (leader, partitions) in enumerate(by_leader.items()):
        broker = metadata.brokers.get(leader)
        if broker is None:
            raise ZeroTimeFailed(f"partitions {sorted(partitions)} of topic {topic!r} have no leader now")
        request = produce_request(number + 1, topic, {p: record_batch(rs) for p, rs in partitions.items()},
                                  int(timeout * 1000))
        errors = partition_errors(_exchange((broker.host, broker.port), request, timeout), number + 1)
        failed = {p: code for p, code in errors.items() if code != 0}
        if failed or set(errors) != set(partitions):
            from confluent_kafka import KafkaError

            named = {p: KafkaError(code).name() for p, code in failed.items()}
            raise ZeroTimeFailed(f"the leader of topic {topic!r} refused records of time 0: {named or errors}")
    return written
