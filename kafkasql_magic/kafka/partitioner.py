"""The partition Kafka's default partitioner gives a key: murmur2 of the key bytes, as the
Java producer (so ksqlDB and Kafka Streams) and our own producers (`murmur2_random`) place keyed
records. A pull query looks a key up in that one partition only.

Kafka Streams places a windowed record (so every windowed table ksqlDB writes) with its
`WindowedStreamPartitioner`: murmur2 of the inner key's bytes only, never the window after them,
so every window of a key is in the key's partition."""

from __future__ import annotations

_MASK, _M, _SEED = 0xFFFFFFFF, 0x5BD1E995, 0x9747B28C


def murmur2(key: bytes) -> int:
    """Kafka's murmur2 hash of `key` (its `Utils.murmur2`), as a signed 32-bit int."""
    h = (_SEED ^ len(key)) & _MASK
    whole = len(key) - len(key) % 4
    for i in range(0, whole, 4):
        k = (int.from_bytes(key[i:i + 4], "little") * _M) & _MASK
        k = ((k ^ (k >> 24)) * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    tail = key[whole:]
    if tail:
        for i in reversed(range(len(tail))):
            h ^= tail[i] << (8 * i)
        h = (h * _M) & _MASK
    h = ((h ^ (h >> 13)) * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def default_partition(key: bytes, partitions: int) -> int:
    """The partition of a record with key bytes `key` in a topic of `partitions` partitions."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


def windowed_partition(key: bytes, window_bytes: int, partitions: int) -> int:
    """The partition of a windowed record whose key ends with `window_bytes` bytes of window
    (8 for TUMBLING/HOPPING, 16 for SESSION): the inner key's, as Kafka Streams places it."""
    return default_partition(key[:len(key) - window_bytes], partitions)
