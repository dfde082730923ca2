"""Executor-side reading: one Kafka offset range -> Arrow record batches.

Runs in Spark's Python workers (possibly on other machines): only plain data comes in (a
`KafkaRange`), confluent-kafka is imported here, and nothing is shared with the driver.

Speed: per-message Python is what costs. Columns are built with `map` over the C method
descriptors of `confluent_kafka.Message` (a C loop, no Python frame per message); offsets
are computed arithmetically when a batch is contiguous (the usual case). The cyclic
garbage collector is paused while a range is read: every consumed message is a GC-tracked
object, and the collections they trigger cost as much as the reading itself.
Converting headers is the most expensive step (confluent-kafka builds a list of tuples per
message, which pyarrow converts in one pass); `include_headers=False` skips it and leaves the
headers column out of the read's schema, and `header_keys`
(the keys a query's HEADER('k') columns read) keeps only each listed key's last header, so
Spark takes in one small entry per key instead of every header; `metadata` names the metadata
columns (topic, partition, offset, timestamp) a read carries, the others left out of its
schema: the JVM takes in every column a Python source emits. A record whose
header key is not UTF-8 cannot be read by confluent-kafka (`headers()` raises); its headers
column is NULL (never otherwise), which the decoding logs as an error naming the record.
"""

from __future__ import annotations

import gc
import sys
import time
from operator import itemgetter

from pyspark.sql.datasource import InputPartition

READ_GROUP = "kafkasql-magic-reader"
BATCH_ROWS = 10000  # smaller batches reuse the allocator's memory: fewer page faults, same CPU
IDLE_TIMEOUT = 60.0
#: The metadata columns a record has, in the schema's order.
METADATA = ("topic", "partition", "offset", "timestamp")

CONSUMER_DEFAULTS = {
    "group.id": READ_GROUP,
    "enable.auto.commit": False,
    "enable.auto.offset.store": False,
    "enable.partition.eof": True,
    "auto.offset.reset": "earliest",
    "isolation.level": "read_uncommitted",
    "fetch.wait.max.ms": 100,
    "fetch.max.bytes": 64 * 1024 * 1024,
    "max.partition.fetch.bytes": 4 * 1024 * 1024,
    # A short queue with a short back-off: librdkafka stops fetching a partition while its queue
    # holds `queued.min.messages` and looks again after `fetch.queue.backoff.ms`. Its default
    # back-off (1 s) stalls the read; no back-off (0) spins the fetch thread whenever the queue
    # is full (+0.5 us CPU per record); a long queue keeps tens of MB of fetched records in
    # flight, whose buffers are faulted in afresh (bench/source_cpu.py measures all three).
    "queued.min.messages": 20000,
    "fetch.queue.backoff.ms": 5,
}


class KafkaRange(InputPartition):
    """Offsets [start, end) of one Kafka partition, plus how to reach the broker."""

    def __init__(self, topic: str, partition: int, start: int, end: int, bootstrap: str,
                 conf: dict | None = None, batch_rows: int = BATCH_ROWS,
                 idle_timeout: float = IDLE_TIMEOUT, include_headers: bool = True,
                 header_keys: tuple[str, ...] | None = None, decoding=None,
                 metadata: tuple[str, ...] = METADATA):
        super().__init__((topic, partition, start, end))
        self.topic = topic
        self.partition = partition
        self.start = start
        self.end = end
        self.bootstrap = bootstrap
        self.conf = dict(conf or {})
        self.batch_rows = batch_rows
        self.idle_timeout = idle_timeout
        self.include_headers = include_headers
        self.header_keys = header_keys  # None: every header
        self.decoding = decoding  # what is decoded in the worker (kafka.worker_decoding.WorkerDecoding)
        self.metadata = metadata  # the metadata columns read

    def __repr__(self) -> str:
        return f"KafkaRange({self.topic!r}, {self.partition}, [{self.start}, {self.end}))"


def arrow_schema(decoding=None, metadata: tuple[str, ...] = METADATA, headers: bool = True):
    import pyarrow as pa

    header = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
    types = {"topic": pa.string(), "partition": pa.int32(), "offset": pa.int64(),
             "timestamp": pa.timestamp("us", tz="UTC")}
    return pa.schema([
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        *([pa.field("headers", pa.list_(pa.field("element", header)))] if headers else []),
        *[pa.field(name, types[name]) for name in METADATA if name in metadata],
        *(decoding.arrow_fields() if decoding else []),
    ])


def _fail(rng: KafkaRange, what: str):
    from kafkasql_magic.errors import KafkaError

    return KafkaError(f"{what} (topic {rng.topic!r}, partition {rng.partition}, "
                      f"offsets [{rng.start}, {rng.end}), bootstrap {rng.bootstrap})")


def read_range(rng: KafkaRange, watch=None):
    """Yield `pyarrow.RecordBatch`es holding exactly the records of [start, end); `watch`
    (kafka.identity.StallWatch) is told while the read waits and where the log ends."""
    if rng is None or getattr(rng, "end", 0) <= getattr(rng, "start", 0):
        return
    from confluent_kafka import Consumer, Message, TopicPartition
    from confluent_kafka import KafkaError as CKError

    settings = dict(CONSUMER_DEFAULTS)
    # Prefetch no more than the range needs: what is fetched beyond `end` is wasted work.
    settings["queued.min.messages"] = max(1000, min(CONSUMER_DEFAULTS["queued.min.messages"],
                                                    rng.end - rng.start))
    settings.update(rng.conf)
    settings["bootstrap.servers"] = rng.bootstrap
    consumer = Consumer(settings)
    decoding = getattr(rng, "decoding", None)
    metadata = getattr(rng, "metadata", METADATA)
    schema = arrow_schema(decoding, metadata, rng.include_headers)
    decoder = decoding.decoders() if decoding else None
    end = rng.end
    nxt = rng.start
    pending: list = []
    error = Message.error
    headers = rng.include_headers
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        consumer.assign([TopicPartition(rng.topic, rng.partition, rng.start)])
        last_progress = time.monotonic()
        while nxt < end:
            # Never ask for more than the range still needs: consume() waits for `want`.
            msgs = consumer.consume(min(rng.batch_rows - len(pending), end - nxt), 1.0)
            if msgs:
                last_progress = time.monotonic()
                eof_at = None
                if any(map(error, msgs)):
                    msgs, eof_at = _drop_events(msgs, rng, CKError)
                if msgs:
                    msgs, nxt, done = _clip(msgs, nxt, end)
                    pending.extend(msgs)
                    if done:
                        nxt = end
                if eof_at is not None and eof_at >= end:
                    nxt = end  # the log ends at or after `end`: gaps (txn markers, compaction)
                elif eof_at is not None and watch is not None:
                    watch.log_end(eof_at, nxt)
            else:
                pos = consumer.position([TopicPartition(rng.topic, rng.partition)])[0].offset
                idle = time.monotonic() - last_progress
                if pos >= end:
                    nxt = end
                elif idle > rng.idle_timeout:
                    raise _fail(rng, f"No record arrived for {rng.idle_timeout:g}s at offset {nxt}")
                elif watch is not None:
                    watch.waiting(idle)
            if pending and (len(pending) >= rng.batch_rows or nxt >= end):
                yield to_record_batch(pending, rng.topic, rng.partition, schema, headers, rng.header_keys,
                                      decoder, metadata)
                pending = []
    finally:
        if gc_was_enabled:
            gc.enable()
        consumer.close()
    _freeze_long_lived()


_frozen = False


def _in_spark_daemon() -> bool:
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    return getattr(spec, "name", None) == "pyspark.daemon"


def _freeze_long_lived() -> None:
    """Once per worker process, after its first range: collect, then move what survived
    (modules, pyspark, pyarrow) out of the collector's sight.

    Spark's Python daemon runs a full `gc.collect()` after every task; in a worker that has
    imported pyspark, pyarrow and the reader (~85,000 objects) that costs 15-30 ms of CPU per
    task, 0.1-0.3 us per record of a bounded read and far more per micro-batch of a stream.
    Frozen objects are still freed by reference counting; only cycles among them stay, and
    the collection just before leaves none but the running task's own (once per process).
    Only in a worker forked by that daemon: a notebook kernel or a test reading in-process
    keeps its collector as it was."""
    global _frozen
    if not _frozen and _in_spark_daemon():
        _frozen = True
        gc.collect()
        gc.freeze()


def _drop_events(msgs, rng, CKError):
    """Remove error events; raise on real errors; return (messages, EOF offset or None)."""
    kept, eof_at = [], None
    for m in msgs:
        err = m.error()
        if err is None:
            kept.append(m)
        elif err.code() == CKError._PARTITION_EOF:
            eof_at = m.offset()
        elif err.code() in (CKError.UNKNOWN_TOPIC_OR_PART, CKError._UNKNOWN_TOPIC,
                            CKError._UNKNOWN_PARTITION):
            raise _fail(rng, f"Topic {rng.topic!r} does not exist")
        elif err.fatal() or not err.retriable():
            raise _fail(rng, f"Kafka read failed: {err}")
    return kept, eof_at


def _clip(msgs, nxt: int, end: int):
    """Keep messages with nxt <= offset < end; return (kept, next offset, reached end)."""
    first = msgs[0].offset()
    last = msgs[-1].offset()
    n = len(msgs)
    if first >= nxt and last - first == n - 1:  # contiguous: pure arithmetic
        if last >= end:
            return msgs[: end - first], end, True
        return msgs, last + 1, last + 1 >= end
    kept = [m for m in msgs if nxt <= m.offset() < end]
    done = last >= end - 1
    new_next = kept[-1].offset() + 1 if kept else nxt
    return kept, (end if done else new_next), done


def to_record_batch(msgs, topic: str, partition: int, schema=None, include_headers: bool = True,
                    header_keys: tuple[str, ...] | None = None, decoder=None,
                    metadata: tuple[str, ...] = METADATA):
    """Arrow columns for a list of (non-error) confluent_kafka Messages; with `header_keys`,
    the headers column holds only the last header of each of those keys (empty lists without
    `include_headers`, no column when `schema` has none); with `decoder` ((keys, values) ->
    (keys, values, columns): kafka.worker_decoding), the keys and values decoded too; only the
    `metadata` columns named."""
    import numpy as np
    import pyarrow as pa
    from confluent_kafka import Message

    schema = schema or arrow_schema(metadata=metadata)
    n = len(msgs)
    keys = pa.array(list(map(Message.key, msgs)), pa.binary())
    values = pa.array(list(map(Message.value, msgs)), pa.binary())
    headers = []
    if "headers" in schema.names:
        hs, unreadable = _read_headers(msgs) if include_headers else ([None] * n, None)
        headers = [_headers(hs, n, schema.field("headers").type, unreadable, header_keys)]
    keys, values, decoded = decoder(keys, values) if decoder else (keys, values, [])
    builders = {"topic": lambda: pa.repeat(topic, n),
                "partition": lambda: pa.array(np.full(n, partition, dtype=np.int32)),
                "offset": lambda: _offsets(msgs), "timestamp": lambda: _timestamps(msgs, schema.field("timestamp").type)}
    return pa.RecordBatch.from_arrays(
        [keys, values, *headers, *[builders[name]() for name in METADATA if name in metadata], *decoded],
        schema=schema,
    )


def _offsets(msgs):
    import numpy as np
    import pyarrow as pa
    from confluent_kafka import Message

    first, last = msgs[0].offset(), msgs[-1].offset()
    if last - first == len(msgs) - 1:
        return pa.array(np.arange(first, last + 1, dtype=np.int64))
    return pa.array(list(map(Message.offset, msgs)), pa.int64())


def _timestamps(msgs, tstype):
    import numpy as np
    import pyarrow as pa
    from confluent_kafka import Message

    ts = np.fromiter(map(itemgetter(1), map(Message.timestamp, msgs)), dtype=np.int64, count=len(msgs))
    mask = ts < 0
    ts *= 1000
    return pa.array(ts, tstype, mask=mask) if mask.any() else pa.array(ts, tstype)


def _read_headers(msgs):
    """(each message's headers, None) or, when some cannot be read, (headers with None for
    those, a mask marking them).

    A failed `headers()` leaves a half-built list cached in the message, which a second call
    returns without an error (and touching it crashes the interpreter): so each message is
    asked once. `extend` keeps what `map` produced before it raised, which tells which
    message failed."""
    from confluent_kafka import Message

    hs: list = []
    failed: list[int] = []
    while len(hs) < len(msgs):
        try:
            hs.extend(map(Message.headers, msgs[len(hs):]))
        except (SystemError, UnicodeDecodeError):
            failed.append(len(hs))
            hs.append(None)
    if not failed:
        return hs, None
    mask = [False] * len(msgs)
    for i in failed:
        mask[i] = True
    return hs, mask


def _headers(hs: list, n: int, list_type, unreadable: list[bool] | None = None,
             keys: tuple[str, ...] | None = None):
    """The headers column (only the last header of each of `keys` when given); rows marked
    in `unreadable` are NULL, rows without headers empty lists.

    pyarrow converts confluent-kafka's lists of (key, value) tuples in one C++ pass (about
    four times faster than flattening them in Python first); a record without headers comes
    as None, a NULL whose offsets are empty, so rebuilding the list from the offsets (which
    carry no validity) turns it into [] and only `unreadable` marks NULLs."""
    import numpy as np
    import pyarrow as pa

    nested = pa.array(hs, list_type)
    offs = nested.offsets.to_numpy()
    items = nested.values
    if keys is not None:
        items, offs = _last_of_keys(items, items.field("key"), np.diff(offs), keys)
    mask = pa.array(unreadable, pa.bool_()) if unreadable is not None else None
    return pa.ListArray.from_arrays(pa.array(offs), items, type=list_type, mask=mask)


def _last_of_keys(items, hkeys, lens, keys: tuple[str, ...]):
    """Only the last header of each of `keys` per record, in record order: (items, list offsets).

    Vectorised over the flat header arrays: an entry is kept when its key is listed and no
    later entry of the same record has the same key."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(lens)
    rows = np.repeat(np.arange(n, dtype=np.int64), lens)
    keep = np.zeros(len(rows), dtype=bool)
    for key in dict.fromkeys(keys):
        at = np.flatnonzero(pc.equal(hkeys, pa.scalar(key, pa.string())).fill_null(False).to_numpy(zero_copy_only=False))
        if len(at):
            owner = rows[at]
            last = np.ones(len(at), dtype=bool)
            last[:-1] = owner[1:] != owner[:-1]  # `at` ascends, so each record's entries are adjacent
            keep[at[last]] = True
    kept = np.flatnonzero(keep)
    offs = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(np.bincount(rows[kept], minlength=n), out=offs[1:])
    return items.take(pa.array(kept)), offs
