"""The stream reader stops when its topic is deleted and re-created (the topic id changes)."""

from __future__ import annotations

import pytest

from kafkasql_magic.errors import KafkaError
from kafkasql_magic.kafka import identity
from kafkasql_magic.kafka.source import SourceOptions, _Planner


def planner_over(monkeypatch, ids: list[str | None]) -> _Planner:
    answers = iter(ids)
    monkeypatch.setattr(identity, "describe", lambda *a, **k: identity.TopicIdentity((0, 1), next(answers)))
    return _Planner(SourceOptions.parse({"bootstrap.servers": "b:9092", "topic": "t"}, streaming=True))


def test_a_new_topic_id_stops_the_stream_naming_where_it_was(monkeypatch):
    planner = planner_over(monkeypatch, ["old", "old", "new"])
    assert planner.topic_partitions() == [0, 1]
    assert planner.topic_partitions(position={0: 100, 1: 7}) == [0, 1]
    with pytest.raises(KafkaError) as info:
        planner.topic_partitions(position={0: 100, 1: 7})
    assert str(info.value) == (
        "Topic 't' was deleted and re-created while the query read it (topic id old is now new); the query "
        "stopped after reading up to offsets partition 0: 100, partition 1: 7 of the old topic rather than skip "
        "the new topic's records. Run the query again to read the new topic (bootstrap b:9092)")


def test_a_stream_that_read_nothing_goes_on_with_the_new_topic(monkeypatch):
    planner = planner_over(monkeypatch, ["old", "new", "new", "newer"])
    assert planner.topic_partitions() == [0, 1]
    assert planner.topic_partitions(position={0: 0, 1: 0}) == [0, 1]  # nothing read: nothing skipped
    assert planner.topic_partitions(position={0: 3, 1: 0}) == [0, 1]
    with pytest.raises(KafkaError, match="topic id new is now newer"):
        planner.topic_partitions(position={0: 3, 1: 0})


def test_brokers_without_topic_ids_are_not_checked(monkeypatch):
    planner = planner_over(monkeypatch, [None, None, None])
    for _ in range(3):
        assert planner.topic_partitions() == [0, 1]
