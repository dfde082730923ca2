"""Which topic a name stands for right now: its partitions and its topic id.

A topic deleted and re-created under the same name gets a new topic id (Kafka 2.8+, Tansu).
Offsets of the old topic mean nothing in the new one: a stream that carried on from its old
position would skip the new topic's first records without a word. So the stream reader
compares the id on every trigger (it describes the topic anyway) and stops with a clear error
when it changed. Brokers without topic ids report none, and the check is skipped.
"""

from __future__ import annotations

from typing import Mapping, NamedTuple

from kafkasql_magic.errors import KafkaError
from kafkasql_magic.kafka import admin

#: librdkafka's rendering of the all-zero id a broker without topic ids reports.
NO_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAA"


class TopicIdentity(NamedTuple):
    partitions: tuple[int, ...]
    topic_id: str | None


def describe(bootstrap: str, topic: str, *, conf: Mapping[str, object] | None = None,
             timeout: float = admin.DEFAULT_TIMEOUT) -> TopicIdentity:
    """Partitions and topic id of `topic` (one DescribeTopics request)."""
    from confluent_kafka import KafkaError as CKError
    from confluent_kafka import KafkaException, TopicCollection

    try:
        futures = admin.admin_client(bootstrap, conf).describe_topics(TopicCollection([topic]), request_timeout=timeout)
        desc = admin._result(futures[topic], bootstrap, timeout + 1)
    except KafkaException as exc:
        if admin._code(exc) == CKError.UNKNOWN_TOPIC_OR_PART:
            raise admin.missing_topic(topic, bootstrap) from None
        if admin._is_unreachable(exc):
            raise admin._unreachable(bootstrap, timeout, exc) from None
        raise KafkaError(f"Cannot describe topic {topic!r} (bootstrap {bootstrap}): {exc}") from None
    parts = tuple(sorted(p.id for p in desc.partitions))
    if not parts:
        raise admin.missing_topic(topic, bootstrap)
    topic_id = str(desc.topic_id) if getattr(desc, "topic_id", None) is not None else None
    return TopicIdentity(parts, None if topic_id in (None, "", NO_TOPIC_ID) else topic_id)


def recreated(topic: str, bootstrap: str, old_id: str, new_id: str, position: Mapping[int, int] | None) -> KafkaError:
    """The error a stream stops with when its topic was deleted and re-created."""
    where = ""
    if position:
        where = " after reading up to offsets " + ", ".join(f"partition {p}: {o}" for p, o in sorted(position.items()))
    return KafkaError(
        f"Topic {topic!r} was deleted and re-created while the query read it (topic id {old_id} is now "
        f"{new_id}); the query stopped{where} of the old topic rather than skip the new topic's records. "
        f"Run the query again to read the new topic (bootstrap {bootstrap})")
