"""A stream stops with one error when its topic is deleted or re-created under it (the topic is
gone or has a new id), whichever step sees it first: planning a batch or reading a range."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from kafkasql_magic.errors import KafkaError
from kafkasql_magic.kafka import identity
from kafkasql_magic.kafka.source import KafkaStreamReader, SourceOptions, _Planner

DELETED = ("Topic 't' was deleted or re-created while the query read it ({where}): the topic's offsets "
           "started again, so reading on would skip or re-read records. The query stopped; run it again "
           "to read the topic as it is now (bootstrap b:9092)")


def answering(monkeypatch, ids: list[str | None | bool]) -> None:
    """identity.lookup answers with these ids in turn (False: the topic does not exist)."""
    answers = iter(ids)

    def lookup(*_a, **_k):
        topic_id = next(answers)
        return None if topic_id is False else identity.TopicIdentity((0, 1), topic_id)

    monkeypatch.setattr(identity, "lookup", lookup)


def planner() -> _Planner:
    return _Planner(SourceOptions.parse({"bootstrap.servers": "b:9092", "topic": "t"}, streaming=True))


def test_a_new_topic_id_stops_the_stream_naming_where_it_was(monkeypatch):
    answering(monkeypatch, ["old", "old", "new"])
    planned = planner()
    assert planned.topic_partitions() == [0, 1]
    assert planned.topic_partitions(position={0: 100, 1: 7}) == [0, 1]
    with pytest.raises(KafkaError) as info:
        planned.topic_partitions(position={0: 100, 1: 7})
    assert str(info.value) == DELETED.format(where="partition 0 at offset 100, partition 1 at offset 7")


def test_a_topic_gone_after_records_were_read_is_the_same_error(monkeypatch):
    answering(monkeypatch, ["old", False])
    planned = planner()
    planned.topic_partitions()
    with pytest.raises(KafkaError) as info:
        planned.topic_partitions(position={0: 100, 1: 0})
    assert str(info.value) == DELETED.format(where="partition 0 at offset 100")


def test_a_stream_that_read_nothing_goes_on_with_the_new_topic(monkeypatch):
    answering(monkeypatch, ["old", "new", "new", "newer", False])
    planned = planner()
    assert planned.topic_partitions() == [0, 1]
    assert planned.topic_partitions(position={0: 0, 1: 0}) == [0, 1]  # nothing read: nothing skipped
    assert planned.topic_partitions(position={0: 3, 1: 0}) == [0, 1]
    with pytest.raises(KafkaError, match=r"\(partition 0 at offset 3\)"):
        planned.topic_partitions(position={0: 3, 1: 0})
    with pytest.raises(KafkaError, match=r"^Topic 't' does not exist \(bootstrap b:9092\)$"):
        planned.topic_partitions(position={0: 0, 1: 0})


def test_brokers_without_topic_ids_are_not_checked(monkeypatch):
    answering(monkeypatch, [None, None, None])
    planned = planner()
    for _ in range(3):
        assert planned.topic_partitions() == [0, 1]


def stream_over(monkeypatch, ids, highs):
    """A stream reader whose topic answers `ids` and whose end offsets are `highs` in turn."""
    answering(monkeypatch, ids)
    reader = KafkaStreamReader(SourceOptions.parse({"bootstrap.servers": "b:9092", "topic": "t"}, streaming=True))
    ends = iter(highs)
    reader.planner.latest = lambda parts: next(ends)
    reader.planner.earliest = lambda parts: {p: 0 for p in parts}
    return reader


@pytest.mark.parametrize("then", ["new", False])
def test_offsets_that_went_back_are_told_apart_from_a_recreated_topic(monkeypatch, then):
    # Planning raced the deletion: the old id was described, then the offsets of the new
    # (or no) topic were listed. The id is asked again, and the error says what happened.
    reader = stream_over(monkeypatch, ["old", "old", "old", then], [{0: 100, 1: 0}] * 2 + [{0: 0, 1: 0}])
    start = reader.initialOffset()
    end = reader.latestOffset(start)
    assert end == {"0": 100, "1": 0, "topicId": "old"}
    with pytest.raises(KafkaError) as info:
        reader.latestOffset(end)
    assert str(info.value) == DELETED.format(where="partition 0 at offset 100")


def test_offsets_that_went_back_under_the_same_topic_keep_their_own_message(monkeypatch):
    reader = stream_over(monkeypatch, ["old", "old", "old", "old"], [{0: 100, 1: 0}] * 2 + [{0: 5, 1: 0}])
    end = reader.latestOffset(reader.initialOffset())
    with pytest.raises(KafkaError, match="partition 0: the end offset went back from 100 to 5"):
        reader.latestOffset(end)


def range_of(topic_id):
    return SimpleNamespace(topic="t", partition=0, start=40, end=60, bootstrap="b:9092", conf={},
                           topic_id=topic_id)


def test_a_range_read_across_a_recreation_fails_after_its_last_batch(monkeypatch):
    answering(monkeypatch, ["new"])
    batches = identity.verified(range_of("old"), iter(["batch 1", "batch 2"]))
    assert next(batches) == "batch 1"
    assert next(batches) == "batch 2"
    with pytest.raises(KafkaError) as info:
        next(batches)
    assert str(info.value) == DELETED.format(where="partition 0 at offset 40")


def test_a_failed_read_is_named_by_its_cause(monkeypatch):
    def failing():
        yield "batch 1"
        raise KafkaError("No record arrived for 60s at offset 50")

    answering(monkeypatch, [False, "old"])
    with pytest.raises(KafkaError, match="was deleted or re-created"):
        list(identity.verified(range_of("old"), failing()))
    with pytest.raises(KafkaError, match="^No record arrived"):  # same topic: the read's own error
        list(identity.verified(range_of("old"), failing()))
    assert list(identity.verified(range_of(None), iter(["b"]))) == ["b"]  # no id known: not checked


def spark_failure(exc: BaseException) -> Exception:
    """The exception as Spark hands it over: its message is the Python traceback's text."""
    import traceback

    return Exception("[PYTHON_STREAMING_DATA_SOURCE_RUNTIME_ERROR] Failed when Python streaming data source "
                     "perform latestOffset: " + "".join(traceback.format_exception(exc)))


def test_the_query_message_is_the_recreation_not_the_step_that_failed_first(monkeypatch):
    # Planning raced the re-creation: the end offsets went back, then the new id was found.
    # The query's message is the traceback's first KafkaError, so that must be the cause.
    from kafkasql_magic.runtime import failure_message

    reader = stream_over(monkeypatch, ["old", "old", "old", "new"], [{0: 100, 1: 0}] * 2 + [{0: 0, 1: 0}])
    end = reader.latestOffset(reader.initialOffset())
    with pytest.raises(KafkaError) as info:
        reader.latestOffset(end)
    assert failure_message(spark_failure(info.value)) == DELETED.format(where="partition 0 at offset 100")

    def idle():
        yield "batch 1"
        raise KafkaError("No record arrived for 60s at offset 50")

    answering(monkeypatch, ["new"])
    with pytest.raises(KafkaError) as info:
        list(identity.verified(range_of("old"), idle()))
    assert failure_message(spark_failure(info.value)) == DELETED.format(where="partition 0 at offset 40")


def test_a_broker_gone_during_a_step_is_an_outage_whose_message_names_the_broker(monkeypatch):
    # The listing of end offsets fails, then the topic's description does not answer either:
    # the stream waits (plans nothing new) and, after the limit, fails naming the broker.
    from kafkasql_magic.errors import BrokerUnreachable
    from kafkasql_magic.runtime import failure_message

    reader = stream_over(monkeypatch, ["old", "old"], [{0: 100, 1: 0}] * 2)
    end = reader.latestOffset(reader.initialOffset())

    def listing_fails(parts):
        raise KafkaError("Listing offsets failed: Local: Timed out")

    def unanswered(*_a, **_k):
        raise BrokerUnreachable("Kafka broker at b:9092 did not answer within 10s: Local: Timed out")

    reader.planner.latest = listing_fails
    monkeypatch.setattr(identity, "lookup", unanswered)
    clock = iter([0.0, 3.0, 6.0])
    reader.outage._clock = lambda: next(clock)
    reader.outage.limit_s = 5.0
    assert reader.latestOffset(end) == end  # waiting: nothing new planned
    assert reader.latestOffset(end) == end
    with pytest.raises(KafkaError) as info:
        reader.latestOffset(end)
    assert failure_message(spark_failure(info.value)).startswith(
        "Kafka broker at b:9092 did not answer within 10s: Local: Timed out; gave up after waiting 6s")
