"""A stream's offsets carry its topic's id, so a query resumed from a checkpoint made on an
earlier topic of the same name stops with a message saying so (and what to do); offsets from
before ids were kept still resume. A range read that waits asks the topic's id early."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from kafkasql_magic.errors import KafkaError
from kafkasql_magic.kafka import identity
from kafkasql_magic.kafka.offsets import from_json, progress_offsets, to_json, topic_id_of
from kafkasql_magic.kafka.source import KafkaStreamReader, SourceOptions

RESUMED = ("Topic 't' was re-created since this query's checkpoint was made (on topic id old; the id is "
           "now new): resuming from the checkpoint's offsets (partition 0 at offset 100, partition 1 at offset 7) "
           "would skip or re-read records, so the query stopped. To read the topic as it is now, create the query "
           "again (TERMINATE it, DROP the stream, table or sink it writes, run its CREATE statement again) or "
           "delete its checkpoint directory, which EXPLAIN <query id> shows (bootstrap b:9092)")


def test_offsets_json_carries_the_topic_id_beside_the_partitions():
    assert to_json({1: 7, 0: 100}, "abc") == {"0": 100, "1": 7, "topicId": "abc"}
    assert to_json({0: 5}) == {"0": 5}  # a broker without topic ids
    assert from_json({"0": 100, "1": 7, "topicId": "abc"}) == {0: 100, 1: 7}
    assert topic_id_of({"0": 100, "topicId": "abc"}) == "abc"
    assert topic_id_of({"0": 100}) is None and topic_id_of(None) is None  # an older checkpoint
    # progress reports (JSON text or a dict) as the persistent queries' lag reads them
    assert progress_offsets('{"0": 100, "1": 7, "topicId": "abc"}') == {"0": 100, "1": 7}
    assert progress_offsets({"0": 3}) == {"0": 3}
    assert progress_offsets("[]") is None


def topic_answering(monkeypatch, ids: list[str | None | bool]) -> list:
    """identity.lookup answers with these ids in turn (False: no such topic); returns the calls."""
    answers, calls = iter(ids), []

    def lookup(*_a, **_k):
        calls.append(1)
        topic_id = next(answers)
        return None if topic_id is False else identity.TopicIdentity((0, 1), topic_id)

    monkeypatch.setattr(identity, "lookup", lookup)
    return calls


def fresh_reader() -> KafkaStreamReader:
    """A stream reader as Spark makes one when a query restarts: nothing described yet."""
    reader = KafkaStreamReader(SourceOptions.parse({"bootstrap.servers": "b:9092", "topic": "t"}, streaming=True))
    reader.planner.latest = lambda parts: {0: 300, 1: 7}
    reader.planner.earliest = lambda parts: {p: 0 for p in parts}
    return reader


CHECKPOINTED = {"0": 100, "1": 7, "topicId": "old"}


def test_a_checkpoint_of_an_earlier_topic_stops_the_resumed_query(monkeypatch):
    topic_answering(monkeypatch, ["new"] * 4)
    with pytest.raises(KafkaError) as info:
        fresh_reader().latestOffset(dict(CHECKPOINTED))
    assert str(info.value) == RESUMED
    # a batch Spark re-runs from the checkpoint is planned without asking latestOffset first
    with pytest.raises(KafkaError) as info:
        fresh_reader().partitions({"0": 90, "1": 7, "topicId": "old"}, dict(CHECKPOINTED))
    assert str(info.value) == RESUMED


def test_a_checkpoint_of_the_same_topic_resumes_and_is_checked_once(monkeypatch):
    calls = topic_answering(monkeypatch, ["old"] * 3)
    reader = fresh_reader()
    end = reader.latestOffset(dict(CHECKPOINTED))
    assert end == {"0": 300, "1": 7, "topicId": "old"}
    assert len(calls) == 2  # the checkpoint's id once, then the planning's own look-up
    ranges = reader.partitions(dict(CHECKPOINTED), end)
    assert [(r.partition, r.start, r.end, r.topic_id) for r in ranges] == [(0, 100, 300, "old")]
    assert len(calls) == 2  # offsets this reader made are not checked again


def test_a_checkpoint_that_read_nothing_goes_on_with_the_new_topic(monkeypatch):
    topic_answering(monkeypatch, ["new", "new"])
    end = fresh_reader().latestOffset({"0": 0, "1": 0, "topicId": "old"})
    assert end == {"0": 300, "1": 7, "topicId": "new"}


def test_a_checkpoint_whose_topic_is_gone_names_the_topic(monkeypatch):
    topic_answering(monkeypatch, [False, False])
    with pytest.raises(KafkaError, match=r"^Topic 't' does not exist \(bootstrap b:9092\)$"):
        fresh_reader().latestOffset(dict(CHECKPOINTED))


def test_offsets_from_before_topic_ids_were_kept_still_resume(monkeypatch):
    calls = topic_answering(monkeypatch, ["now"] * 3)
    reader = fresh_reader()
    end = reader.latestOffset({"0": 100, "1": 7})
    assert end == {"0": 300, "1": 7, "topicId": "now"}  # from here on the id is kept
    assert len(calls) == 1  # nothing to compare: only the planning's own look-up
    ranges = fresh_reader().partitions({"0": 90, "1": 7}, {"0": 100, "1": 7})  # an old batch re-run
    assert [(r.partition, r.start, r.end, r.topic_id) for r in ranges] == [(0, 90, 100, None)]


def range_of(topic_id):
    return SimpleNamespace(topic="t", partition=0, start=100, end=150, bootstrap="b:9092", conf={},
                           topic_id=topic_id)


def test_a_waiting_read_asks_the_topic_id_early_and_then_less_often(monkeypatch):
    calls = topic_answering(monkeypatch, ["old"] * 3 + ["new"])
    watch = identity.watch(range_of("old"))
    for idle in (0.5, 1.9):
        watch.waiting(idle)
    assert calls == []
    watch.waiting(2.1)  # asked: same topic, the read waits on
    watch.waiting(3.0)
    assert len(calls) == 1
    watch.waiting(4.3)  # next after twice as long
    assert len(calls) == 2
    watch.waiting(0.2)  # records came: start over
    watch.waiting(2.0)
    assert len(calls) == 3
    with pytest.raises(KafkaError, match=r"re-created while the query read it \(partition 0 at offset 100\)"):
        watch.waiting(5.0)
    assert identity.watch(range_of(None)) is None  # no id known: nothing to ask


def test_a_log_that_ends_before_the_read_asks_at_once(monkeypatch):
    calls = topic_answering(monkeypatch, ["old", "new"])
    watch = identity.watch(range_of("old"))
    watch.log_end(150, 120)  # the log goes on past the read: nothing to ask
    assert calls == []
    watch.log_end(20, 120)
    assert len(calls) == 1
    with pytest.raises(KafkaError, match="was deleted or re-created while the query read it"):
        watch.log_end(20, 120)
