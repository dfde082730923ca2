"""Which topic a name stands for right now: its partitions and its topic id.

A topic deleted and re-created under the same name gets a new topic id (Kafka 2.8+, Tansu).
Offsets of the old topic mean nothing in the new one: a stream that carried on from its old
position would skip the new topic's first records (or read some twice) without a word. So a
running stream stops with one error, `deleted`, whichever of its steps sees it first:
planning (the topic is gone, has a new id, lost partitions, or its offsets went back: the
id is read again to tell re-creation from anything else) or reading (`verified`: the id is
read again after a range was read, so a range read across a re-creation fails instead of
passing the new topic's records off as the old one's; `StallWatch`: a range the new topic
cannot fill asks the id within seconds rather than waiting out the read's idle timeout).

A stream's offsets carry the id (`kafka.offsets.to_json`), so they do in its checkpoint: a
query restarted from a checkpoint made on an earlier topic of the same name stops with
`resumed_elsewhere` (`check_resumed`). Brokers without topic ids report none, and the id
checks are skipped; so are offsets from before ids were kept.
"""

from __future__ import annotations

import logging
from typing import Iterator, Mapping, NamedTuple

from kafkasql_magic.errors import BrokerUnreachable, KafkaError
from kafkasql_magic.kafka import admin

LOG = logging.getLogger("kafkasql_magic.kafka.identity")
#: librdkafka's rendering of the all-zero id a broker without topic ids reports.
NO_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAA"


class TopicIdentity(NamedTuple):
    partitions: tuple[int, ...]
    topic_id: str | None


def lookup(bootstrap: str, topic: str, *, conf: Mapping[str, object] | None = None,
           timeout: float = admin.DEFAULT_TIMEOUT) -> TopicIdentity | None:
    """Partitions and topic id of `topic` (one DescribeTopics request); None when it does not exist."""
    from confluent_kafka import KafkaError as CKError
    from confluent_kafka import KafkaException, TopicCollection

    try:
        futures = admin.admin_client(bootstrap, conf).describe_topics(TopicCollection([topic]), request_timeout=timeout)
        desc = admin._result(futures[topic], bootstrap, timeout + 1)
    except KafkaException as exc:
        if admin._code(exc) == CKError.UNKNOWN_TOPIC_OR_PART:
            return None
        if admin._is_unreachable(exc):
            raise admin._unreachable(bootstrap, timeout, exc) from None
        raise KafkaError(f"Cannot describe topic {topic!r} (bootstrap {bootstrap}): {exc}") from None
    parts = tuple(sorted(p.id for p in desc.partitions))
    if not parts:
        return None
    topic_id = str(desc.topic_id) if getattr(desc, "topic_id", None) is not None else None
    return TopicIdentity(parts, None if topic_id in (None, "", NO_TOPIC_ID) else topic_id)


def describe(bootstrap: str, topic: str, *, conf: Mapping[str, object] | None = None,
             timeout: float = admin.DEFAULT_TIMEOUT) -> TopicIdentity:
    """`lookup`, with KafkaError naming the topic when it does not exist."""
    found = lookup(bootstrap, topic, conf=conf, timeout=timeout)
    if found is None:
        raise admin.missing_topic(topic, bootstrap)
    return found


def replaced(known_id: str | None, found: TopicIdentity | None) -> bool:
    """Whether the topic first seen with `known_id` is gone (deleted, maybe re-created since)."""
    if known_id is None:
        return False
    return found is None or (found.topic_id is not None and found.topic_id != known_id)


def _replaced_error(text: str) -> KafkaError:
    """KafkaError marked `topic_replaced` (the traceback keeps showing "KafkaError: ", where
    the query's message is found), so a read does not ask the topic's id again."""
    error = KafkaError(text)
    error.topic_replaced = True
    return error


def is_replaced(error: BaseException) -> bool:
    """Whether `error` is `deleted`'s or `resumed_elsewhere`'s."""
    return getattr(error, "topic_replaced", False)


def deleted(topic: str, bootstrap: str, position: Mapping[int, int]) -> KafkaError:
    """The one error a query stops with when its topic was deleted (and maybe re-created) while
    it read it; `position` holds the partitions read and the offset each had reached."""
    where = ", ".join(f"partition {p} at offset {o}" for p, o in sorted(position.items()))
    return _replaced_error(
        f"Topic {topic!r} was deleted or re-created while the query read it"
        f"{f' ({where})' if where else ''}: the topic's offsets started again, so reading on would "
        f"skip or re-read records. The query stopped; run it again to read the topic as it is now "
        f"(bootstrap {bootstrap})")


def resumed_elsewhere(topic: str, bootstrap: str, kept_id: str, now_id: str,
                      position: Mapping[int, int]) -> KafkaError:
    """The error a query stops with when it resumes from a checkpoint made on an earlier topic
    of the same name (`kept_id`; the topic's id is `now_id` now)."""
    where = ", ".join(f"partition {p} at offset {o}" for p, o in sorted(position.items()))
    return _replaced_error(
        f"Topic {topic!r} was re-created since this query's checkpoint was made (on topic id {kept_id}; "
        f"the id is now {now_id}): resuming from the checkpoint's offsets ({where}) would skip or "
        f"re-read records, so the query stopped. To read the topic as it is now, create the query "
        f"again (TERMINATE it, DROP the stream, table or sink it writes, run its CREATE statement "
        f"again) or delete its checkpoint directory, which EXPLAIN <query id> shows (bootstrap {bootstrap})")


def check_resumed(bootstrap: str, topic: str, conf: Mapping[str, object] | None, kept_id: str,
                  position: Mapping[int, int]) -> str | None:
    """The topic id a stream resumed from offsets planned on `kept_id` (a checkpoint's) goes on
    with: `kept_id` when the topic still has it, the new id when nothing was read yet
    (`position` holds the partitions read and their offsets: nothing can be skipped), else
    `resumed_elsewhere`. A missing topic is KafkaError naming it."""
    found = describe(bootstrap, topic, conf=conf)
    if not replaced(kept_id, found):
        return kept_id if found.topic_id is None else found.topic_id
    if position:
        raise resumed_elsewhere(topic, bootstrap, kept_id, found.topic_id, position)
    return found.topic_id


#: Seconds a range read waits for records before it first asks whether its topic was re-created.
STALL_CHECK_S = 2.0


class StallWatch:
    """What a range read (`kafka.arrow_batch.read_range`) tells while it waits for records:
    after `first` seconds without one (then after twice as long each time), or at once when
    the partition's log ends before the read's position, the topic's id is asked, so a range
    the re-created topic cannot fill stops with `deleted` within seconds instead of after the
    read's idle timeout. Plain data (the range): it runs in the worker."""

    def __init__(self, rng, first: float = STALL_CHECK_S):
        self.rng = rng
        self.first = first
        self._next = first
        self._idle = 0.0

    def waiting(self, idle_s: float) -> None:
        """No record for `idle_s` seconds."""
        if idle_s < self._idle:  # records came meanwhile: start over
            self._next = self.first
        self._idle = idle_s
        if idle_s >= self._next:
            self._next = 2 * idle_s
            _check_range(self.rng)

    def log_end(self, end: int, position: int) -> None:
        """The partition's log ends at `end` while the read is at `position`."""
        if end < position:
            _check_range(self.rng)


def watch(rng) -> StallWatch | None:
    """A `StallWatch` for a range planned on a known topic id, else None (nothing to check)."""
    return StallWatch(rng) if getattr(rng, "topic_id", None) is not None else None


def verified(rng, batches: Iterator) -> Iterator:
    """`batches` (the records of the range `rng`), then a check that the topic read is still
    the one the range was planned on (`rng.topic_id`); a read that failed is checked too, so
    its cause is named when the topic was replaced under it (without the read's error as its
    context: a query's message is the traceback's first KafkaError)."""
    try:
        yield from batches
    except KafkaError as exc:
        if not is_replaced(exc):  # else found while the read waited (StallWatch)
            try:
                _check_range(rng)
            except KafkaError as cause:
                raise cause from None
        raise
    _check_range(rng)


def _check_range(rng) -> None:
    known = getattr(rng, "topic_id", None)
    if known is None:
        return
    try:
        found = lookup(rng.bootstrap, rng.topic, conf=rng.conf)
    except BrokerUnreachable as exc:  # the read itself went through: no reason to fail it
        LOG.warning("Could not confirm topic %r after reading it: %s", rng.topic, exc)
        return
    if replaced(known, found):
        raise deleted(rng.topic, rng.bootstrap, {rng.partition: rng.start})
