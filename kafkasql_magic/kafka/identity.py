"""Which topic a name stands for right now: its partitions and its topic id.

A topic deleted and re-created under the same name gets a new topic id (Kafka 2.8+, Tansu).
Offsets of the old topic mean nothing in the new one: a stream that carried on from its old
position would skip the new topic's first records (or read some twice) without a word. So a
running stream stops with one error, `deleted`, whichever of its steps sees it first:
planning (the topic is gone, has a new id, lost partitions, or its offsets went back: the
id is read again to tell re-creation from anything else) or reading (`verified`: the id is
read again after a range was read, so a range read across a re-creation fails instead of
passing the new topic's records off as the old one's). Brokers without topic ids report
none, and the id checks are skipped.
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


def deleted(topic: str, bootstrap: str, position: Mapping[int, int]) -> KafkaError:
    """The one error a query stops with when its topic was deleted (and maybe re-created) while
    it read it; `position` holds the partitions read and the offset each had reached."""
    where = ", ".join(f"partition {p} at offset {o}" for p, o in sorted(position.items()))
    return KafkaError(
        f"Topic {topic!r} was deleted or re-created while the query read it"
        f"{f' ({where})' if where else ''}: the topic's offsets started again, so reading on would "
        f"skip or re-read records. The query stopped; run it again to read the topic as it is now "
        f"(bootstrap {bootstrap})")


def verified(rng, batches: Iterator) -> Iterator:
    """`batches` (the records of the range `rng`), then a check that the topic read is still
    the one the range was planned on (`rng.topic_id`); a read that failed is checked too, so
    its cause is named when the topic was replaced under it."""
    try:
        yield from batches
    except KafkaError:
        _check_range(rng)
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
