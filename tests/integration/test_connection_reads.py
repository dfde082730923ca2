"""A Materialize Kafka connection's client properties and START OFFSET / START TIMESTAMP read
a real broker through the kafkasql source: the pieces the dialect wires together."""

from __future__ import annotations

import time

from kafkasql_magic.dialects.connections import Connections
from kafkasql_magic.kafka.offsets import watermarks
from kafkasql_magic.kafka.time_index import first_offsets_at_or_after
from kafkasql_magic.kafka.producer import produce
from kafkasql_magic.sql.materialize_parser import MATERIALIZE
from kafkasql_magic.kafka.reads import bounded
from kafkasql_magic.kafka.start_position import start_offsets


def connection(bootstrap):
    registry = Connections()
    registry.create_connection(MATERIALIZE.parse_statement(
        f"CREATE CONNECTION k TO KAFKA (BROKER '{bootstrap}', SECURITY PROTOCOL = 'PLAINTEXT')"))
    return registry.kafka_properties("k")


def read(spark, props, topic, start):
    """The topic read as a source with first offsets `start` is (kafka.reads)."""
    options = bounded(props["bootstrap.servers"], topic, start=start).options()
    options.update({f"kafka.{k}": v for k, v in props.items() if k != "bootstrap.servers"})
    df = spark.read.format("kafkasql").options(**options).load()
    return sorted((r.partition, r.offset, r.value.decode()) for r in df.collect())


def test_start_offset_through_a_connection(spark, broker, new_topic):
    topic = new_topic(2)
    produce(broker.bootstrap_servers, topic,
            [{"partition": p, "value": f"p{p}-{i}"} for p in (0, 1) for i in range(4)])
    props = connection(broker.bootstrap_servers)
    statement = MATERIALIZE.parse_statement(
        f"CREATE SOURCE s FROM KAFKA CONNECTION k (TOPIC '{topic}', START OFFSET (2))")
    marks = watermarks(props["bootstrap.servers"], topic)
    offsets = start_offsets(statement.topic, sorted(marks), {p: lo for p, (lo, _) in marks.items()},
                            start_offsets=statement.start_offsets)
    assert offsets == {0: 2, 1: 0}
    assert read(spark, props, topic, offsets) == [
        (0, 2, "p0-2"), (0, 3, "p0-3"), (1, 0, "p1-0"), (1, 1, "p1-1"), (1, 2, "p1-2"), (1, 3, "p1-3")]


def test_relative_start_timestamp(spark, broker, new_topic):
    topic = new_topic(1)
    now = int(time.time() * 1000)
    produce(broker.bootstrap_servers, topic, [
        {"value": "two hours ago", "timestamp": now - 7_200_000},
        {"value": "an hour ago", "timestamp": now - 3_600_000},
        {"value": "a minute ago", "timestamp": now - 60_000},
        {"value": "late, out of order", "timestamp": now - 9_000_000},  # after the start: read
    ])
    props = connection(broker.bootstrap_servers)
    statement = MATERIALIZE.parse_statement(
        f"CREATE SOURCE s FROM KAFKA CONNECTION k (TOPIC '{topic}', START TIMESTAMP = -5400000)")

    def offsets_for_time(partitions, ts):
        return first_offsets_at_or_after(props["bootstrap.servers"], topic, partitions, ts)

    offsets = start_offsets(topic, [0], {0: 0}, start_timestamp=statement.start_timestamp,
                            now_ms=int(time.time() * 1000), offsets_for_time=offsets_for_time)
    assert offsets == {0: 1}
    assert [v for _, _, v in read(spark, props, topic, offsets)] == [
        "an hour ago", "a minute ago", "late, out of order"]


def test_start_timestamp_after_every_record_starts_at_the_end(broker, new_topic):
    topic = new_topic(2)
    produce(broker.bootstrap_servers, topic, [{"partition": p, "value": "x", "timestamp": 1000} for p in (0, 1)])
    produce(broker.bootstrap_servers, topic, [{"partition": 1, "value": "y", "timestamp": 5000}])
    assert first_offsets_at_or_after(broker.bootstrap_servers, topic, [0, 1], 2000) == {0: 1, 1: 1}
    assert first_offsets_at_or_after(broker.bootstrap_servers, topic, [0, 1], 9000) == {0: 1, 1: 2}
    assert first_offsets_at_or_after(broker.bootstrap_servers, topic, [0, 1], 0) == {0: 0, 1: 0}
