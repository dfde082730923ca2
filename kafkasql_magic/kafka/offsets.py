"""Driver-side offset planning for the `kafkasql` source.

Offsets are dicts with string partition keys and the next offset to read as value, plus the
id of the topic they were planned on when the broker has topic ids, e.g.
`{"0": 123, "1": 40, "topicId": "q0PaBv..."}`; an offset range is [start, end). Spark keeps
these dicts in a stream's checkpoint, so the id tells a restarted query whether its topic is
still the one its checkpoint was made on (`kafka.identity`). Offsets without an id (older
checkpoints, brokers without topic ids) are read as before, unchecked.

End offsets and the high-watermark quirk
----------------------------------------
Apache Kafka's ListOffsets(latest) returns the high watermark: one past the last readable
record. Tansu (the embedded broker) returns the base offset of the *last record batch* + 1
instead, so when the last batch holds several records, the records after its first one are
invisible to a reader that plans up to that offset (1000 records produced in one batch: the
"end" says 1). Tansu's Fetch responses do carry the true high watermark.

Fix (`EndOffsets.latest`): when a broker is suspected of the quirk, the end of each non-empty
partition is learnt by fetching from `listed - 1` (the last record ListOffsets admits) and
reading the partition-EOF event, whose offset is the Fetch response's high watermark. Every
offset below it is readable, so planning up to it stays exact (never beyond data that
exists); the probe's answer is cached per partition together with the listed value it was
learnt from, and a partition is probed again only when its listed value moves (on Tansu it
moves with every new batch), so an idle stream costs no probes.

Detection is free on Apache Kafka: it answers ListOffsets(latest) with timestamp -1
(`NO_TIMESTAMP`), while Tansu answers with a real timestamp for every non-empty partition -
the very response we need anyway carries the tell. As a second signal, the cluster id is
checked once per `EndOffsets` ("tansu..." is Tansu's default). An empty partition needs no
probe (its end is exact). A false positive only costs probes, never correctness. So on real
Kafka: no extra request per plan (one DescribeCluster per query start), no probes. The
`endOffsetProbe` option (`auto` | `always` | `never`) overrides the detection.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Iterable, Mapping

from kafkasql_magic.errors import KafkaError
from kafkasql_magic.kafka import admin

LOG = logging.getLogger("kafkasql_magic.kafka.offsets")
PROBE_GROUP = "kafkasql-magic-probe"
EARLIEST, LATEST = -2, -1


class EndOffsets:
    """Earliest and (quirk-corrected) latest offsets of a topic's partitions."""

    def __init__(self, bootstrap: str, conf: Mapping[str, object] | None = None, *,
                 mode: str = "auto", timeout: float = admin.DEFAULT_TIMEOUT):
        mode = (mode or "auto").lower()
        if mode not in ("auto", "always", "never"):
            raise KafkaError(f"endOffsetProbe must be auto, always or never, not {mode!r}")
        self.bootstrap = bootstrap
        self.conf = dict(conf or {})
        self.mode = mode
        self.timeout = timeout
        self.quirk_seen = False  # a probe found records beyond the listed end
        self.probes = 0  # partitions probed so far (for tests and diagnostics)
        self._tansu_cluster: bool | None = None
        self._learnt: dict[tuple[str, int], tuple[int, int]] = {}  # -> (listed, true end)

    def earliest(self, topic: str, partitions: Iterable[int]) -> dict[int, int]:
        listed = admin.list_offsets(self.bootstrap, topic, partitions, "earliest",
                                    conf=self.conf, timeout=self.timeout)
        return {p: off for p, (off, _ts) in listed.items()}

    def latest(self, topic: str, partitions: Iterable[int]) -> dict[int, int]:
        listed = admin.list_offsets(self.bootstrap, topic, partitions, "latest",
                                    conf=self.conf, timeout=self.timeout)
        ends = {p: off for p, (off, _ts) in listed.items()}
        if self.mode == "never":
            return ends
        nonempty = [p for p, off in ends.items() if off > 0]
        if not nonempty or not self._suspect(listed):
            return ends
        todo = []
        for p in nonempty:
            known = self._learnt.get((topic, p))
            if known is not None and known[0] == ends[p]:
                ends[p] = max(ends[p], known[1])
            else:
                todo.append(p)
        if todo:
            found = self._probe(topic, {p: ends[p] for p in todo})
            for p in todo:
                true_end = max(ends[p], found.get(p, ends[p]))
                if true_end > ends[p]:
                    self.quirk_seen = True
                self._learnt[(topic, p)] = (ends[p], true_end)
                ends[p] = true_end
        return ends

    def watermarks(self, topic: str, partitions: Iterable[int] | None = None) -> dict[int, tuple[int, int]]:
        parts = list(partitions) if partitions is not None else admin.topic_partitions(
            self.bootstrap, topic, conf=self.conf, timeout=self.timeout)
        lows = self.earliest(topic, parts)
        highs = self.latest(topic, parts)
        return {p: (lows[p], highs[p]) for p in parts}

    def _suspect(self, listed: Mapping[int, tuple[int, int]]) -> bool:
        if self.mode == "always" or self.quirk_seen:
            return True
        if any(off > 0 and ts >= 0 for off, ts in listed.values()):
            return True
        if self._tansu_cluster is None:
            try:
                cid = admin.cluster_id(self.bootstrap, conf=self.conf, timeout=self.timeout)
            except KafkaError:
                cid = ""
            self._tansu_cluster = cid.lower().startswith("tansu")
        return self._tansu_cluster

    def _probe(self, topic: str, listed: Mapping[int, int]) -> dict[int, int]:
        """True ends of `listed` partitions: fetch from listed-1, read to the partition EOF."""
        from confluent_kafka import Consumer, TopicPartition
        from confluent_kafka import KafkaError as CKError

        self.probes += len(listed)
        settings = admin.client_conf(self.bootstrap, self.conf)
        settings.update({"group.id": PROBE_GROUP, "enable.auto.commit": False,
                         "enable.partition.eof": True, "auto.offset.reset": "latest",
                         "fetch.wait.max.ms": 10})
        found = dict(listed)
        pending = set(listed)
        consumer = Consumer(settings)
        deadline = time.monotonic() + self.timeout
        try:
            consumer.assign([TopicPartition(topic, p, off - 1) for p, off in listed.items()])
            while pending and time.monotonic() < deadline:
                for msg in consumer.consume(10000, 0.05):
                    p = msg.partition()
                    err = msg.error()
                    if err is None:
                        found[p] = max(found[p], msg.offset() + 1)
                    elif err.code() == CKError._PARTITION_EOF:
                        found[p] = max(found[p], msg.offset())
                        pending.discard(p)
        finally:
            consumer.close()
        if pending:
            LOG.warning("End-offset probe of topic %r partitions %s timed out (bootstrap %s)",
                        topic, sorted(pending), self.bootstrap)
        return found


# ---------------------------------------------------------------------------- lookups
def watermarks(
    bootstrap: str,
    topic: str,
    *,
    conf: Mapping[str, object] | None = None,
    timeout: float = admin.DEFAULT_TIMEOUT,
) -> dict[int, tuple[int, int]]:
    """{partition: (low, high)} with the high watermark corrected for brokers that under-report
    it (see `kafkasql_magic.kafka.offsets.EndOffsets`)."""
    return EndOffsets(bootstrap, conf, timeout=timeout).watermarks(topic)


def offsets_for_time(
    bootstrap: str,
    topic: str,
    partitions: Iterable[int],
    timestamp_ms: int,
    *,
    conf: Mapping[str, object] | None = None,
    timeout: float = admin.DEFAULT_TIMEOUT,
) -> dict[int, int]:
    """The first offset per partition whose record timestamp is >= `timestamp_ms` (the
    broker's offsets-for-times index); the partition's end when no record is that recent."""
    from confluent_kafka import KafkaException, TopicPartition
    from confluent_kafka.admin import OffsetSpec

    parts = list(partitions)
    if not parts:
        return {}
    request = {TopicPartition(topic, p): OffsetSpec.for_timestamp(timestamp_ms) for p in parts}
    try:
        futures = admin.admin_client(bootstrap, conf).list_offsets(request, request_timeout=timeout)
    except KafkaException as exc:
        raise admin._unreachable(bootstrap, timeout, exc) from exc
    found = {tp.partition: admin._result(fut, bootstrap, timeout + 1).offset for tp, fut in futures.items()}
    missing = [p for p, off in found.items() if off < 0]
    if missing:  # no record that recent: start at the (quirk-corrected) end
        found.update(EndOffsets(bootstrap, conf, timeout=timeout).latest(topic, missing))
    return found


# ---------------------------------------------------------------------------- options
def parse_offsets(value: str | None, name: str, default: str) -> str | dict[int, int]:
    """`earliest`, `latest` or a JSON object {"partition": offset} (-2 earliest, -1 latest)."""
    text = (value if value is not None else default).strip()
    if text.lower() in ("earliest", "latest"):
        return text.lower()
    try:
        raw = json.loads(text)
        if not isinstance(raw, dict):
            raise ValueError
        parsed = {int(k): int(v) for k, v in raw.items()}
    except (ValueError, TypeError):
        raise KafkaError(
            f"Invalid {name} {text!r}: expected earliest, latest or JSON like "
            '{"0": 42, "1": -2} (-2 = earliest, -1 = latest)'
        ) from None
    bad = {p: o for p, o in parsed.items() if o < -2 or p < 0}
    if bad:
        raise KafkaError(f"Invalid {name} {text!r}: offsets must be >= 0, -1 (latest) or -2 (earliest)")
    return parsed


#: The key of the topic id in a stream's offsets (never a partition: those are digits).
TOPIC_ID = "topicId"


def to_json(offsets: Mapping[int, int], topic_id: str | None = None) -> dict[str, int | str]:
    """A stream's offsets as Spark keeps them: partitions in order, then the topic id if known."""
    out: dict[str, int | str] = {str(p): int(o) for p, o in sorted(offsets.items())}
    if topic_id is not None:
        out[TOPIC_ID] = topic_id
    return out


def from_json(offsets: Mapping[str, object] | None) -> dict[int, int]:
    """The partitions' offsets of `to_json`'s dict (the topic id left out)."""
    return {int(p): int(o) for p, o in (offsets or {}).items() if p != TOPIC_ID}


def topic_id_of(offsets: Mapping[str, object] | None) -> str | None:
    """The topic id `to_json` put in, or None (offsets from before ids were kept, or a broker
    without topic ids)."""
    found = (offsets or {}).get(TOPIC_ID)
    return found if isinstance(found, str) and found else None


def progress_offsets(value) -> dict[str, int] | None:
    """{partition: offset} of a source's offsets in a Spark progress report (JSON text or a
    dict), the topic id left out; None when there are none."""
    parsed = json.loads(value) if isinstance(value, str) else value
    if not isinstance(parsed, dict):
        return None
    return {str(p): int(o) for p, o in from_json(parsed).items()}


def resolve(spec: str | Mapping[int, int], partitions: Iterable[int], lows: Mapping[int, int],
            highs: Mapping[int, int], *, unlisted: int) -> dict[int, int]:
    """Concrete offsets for `partitions` from a parsed startingOffsets/endingOffsets value.

    `unlisted` is what a partition missing from a JSON spec gets (EARLIEST, LATEST, or None to
    leave it out)."""
    out = {}
    for p in partitions:
        if spec == "earliest":
            want = EARLIEST
        elif spec == "latest":
            want = LATEST
        else:
            want = spec.get(p, unlisted)
            if want is None:
                continue
        if want == EARLIEST:
            out[p] = lows[p]
        elif want == LATEST:
            out[p] = highs[p]
        else:
            out[p] = want
    return out


def fair_share(available: Mapping[int, int], budget: int) -> dict[int, int]:
    """Split `budget` records across partitions (max-min fair, water-filling).

    Partitions with little to read get all of it, the rest share what is left equally; the
    remainder of the integer division goes to the partitions with most left to read.
    """
    take = {p: 0 for p in available}
    left = max(0, int(budget))
    order = sorted((n, p) for p, n in available.items() if n > 0)
    count = len(order)
    for i, (n, p) in enumerate(order):
        share = left // (count - i)
        got = min(n, share)
        take[p] = got
        left -= got
    for n, p in sorted(order, key=lambda np_: (-(np_[0] - take[np_[1]]), np_[1])):
        if left <= 0:
            break
        if take[p] < n:
            take[p] += 1
            left -= 1
    return take


def split_ranges(partition: int, start: int, end: int, max_records: int) -> list[tuple[int, int, int]]:
    """[start, end) cut into ceil(n / max_records) near-equal ranges."""
    n = end - start
    if n <= 0:
        return []
    pieces = max(1, -(-n // max(1, max_records)))
    bounds = [start + (n * i) // pieces for i in range(pieces + 1)]
    return [(partition, bounds[i], bounds[i + 1]) for i in range(pieces) if bounds[i + 1] > bounds[i]]
