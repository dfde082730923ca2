"""A Schema Registry or a broker that goes away while a query runs: the query waits (and says
so), resumes when it is back without losing or logging a record, and fails with a clear message
once the outage lasts longer than its limit."""

from __future__ import annotations

import json
import os
import signal
import time
import uuid

import pytest

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

import kafkasql_magic as ks
from kafkasql_magic.kafka.producer import produce
from kafkasql_magic.registry import RegistryServer

SCHEMA = {"type": "record", "name": "V", "fields": [{"name": "n", "type": "long"}]}
COUNT = 20


def registry_then_records(broker) -> tuple[RegistryServer, str]:
    """A registry of its own (stopped again) and a topic of COUNT records framed with its schema id."""
    reg = RegistryServer(broker.bootstrap_servers, topic=f"_schemas_outage_{uuid.uuid4().hex[:6]}").start()
    topic = f"outage_{uuid.uuid4().hex[:10]}"
    serialize = AvroSerializer(SchemaRegistryClient({"url": reg.url}), json.dumps(SCHEMA))
    ctx = SerializationContext(topic, MessageField.VALUE)
    produce(broker.bootstrap_servers, topic, [{"value": serialize({"n": i}, ctx), "partition": 0}
                                              for i in range(COUNT)], create_partitions=1)
    reg.stop()
    return reg, topic


def session_over(spark, broker, url: str, topic: str):
    s = ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark, schema_registry_url=url, timeout=90)
    s.sql("SET 'auto.offset.reset'='earliest';")
    s.sql(f"CREATE STREAM a (n BIGINT) WITH (kafka_topic='{topic}', value_format='AVRO');")
    return s


def until(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.25)


def test_query_waits_for_the_registry_and_resumes(spark, broker):
    down, topic = registry_then_records(broker)
    s = session_over(spark, broker, down.url, topic)
    query = s.sql("SELECT n FROM a EMIT CHANGES;")
    try:
        until(lambda: query.waiting_for is not None, 30, "the query to report the outage")
        assert query.waiting_for.startswith(f"waiting for the schema registry at {down.url} (not answering since ")
        until(lambda: query.model.snapshot().message == query.waiting_for, 10, "the widget to say so")
        assert query.waiting_for in query.model.to_html()
        time.sleep(5)  # records arrived long ago: they wait, neither delivered nor logged
        assert query.is_active and len(query.rows()) == 0 and s.processing_log().empty
        back = RegistryServer(broker.bootstrap_servers, port=down.port, topic=down.topic).start()
        try:
            until(lambda: len(query.rows()) == COUNT, 90, "every record after the registry came back")
            assert query.rows().N.tolist() == list(range(COUNT))
            assert s.processing_log().empty
            until(lambda: query.waiting_for is None, 10, "the outage to clear")  # refreshed every 2 s
            until(lambda: query.model.snapshot().message is None, 10, "the widget to stop saying it waits")
        finally:
            back.stop()
    finally:
        query.stop()


def test_query_fails_clearly_after_the_outage_limit(spark, broker):
    down, topic = registry_then_records(broker)
    s = session_over(spark, broker, down.url, topic)
    s.sql("SET 'schema.registry.outage.timeout.ms'='3000';")
    query = s.sql("SELECT n FROM a EMIT CHANGES;")
    try:
        assert query.wait(60), "the query did not end"
        assert query.state == "FAILED"
        message = query.model.snapshot().message
        assert f"Schema registry at {down.url} did not answer for" in message, message
        assert len(query.rows()) == 0 and s.processing_log().empty  # nothing skipped as undecodable
    finally:
        query.stop()


def test_a_limit_query_timing_out_during_the_outage_says_what_it_waited_for(spark, broker):
    from kafkasql_magic.errors import QueryTimeout

    down, topic = registry_then_records(broker)
    s = session_over(spark, broker, down.url, topic)
    with pytest.raises(QueryTimeout) as caught:
        s.sql("SELECT n FROM a EMIT CHANGES LIMIT 5;", timeout=6)
    message = str(caught.value)
    assert f"returned 0 of 5 rows within 6 seconds; stopped while waiting for the schema registry at {down.url} " \
           "(not answering since " in message, message
    assert len(caught.value.rows) == 0 and s.processing_log().empty


# ---------------------------------------------------------------- the broker
# Tansu keeps topics in memory only, so a restarted broker has lost them. A broker that stops
# answering and comes back with its data is a paused process (SIGSTOP / SIGCONT): to clients it
# is a network partition or a stalled host, which is what librdkafka must ride out.
@pytest.fixture
def own_broker():
    from kafkasql_magic.local.broker import Broker

    with Broker() as b:
        yield b
        os.kill(b.pid, signal.SIGCONT)


def json_records(broker, topic, numbers):
    produce(broker.bootstrap_servers, topic, [{"value": b'{"n": %d}' % n, "partition": 0} for n in numbers],
            create_partitions=1)


def test_query_waits_for_a_paused_broker_and_resumes(spark, own_broker):
    topic = f"pause_{uuid.uuid4().hex[:10]}"
    json_records(own_broker, topic, range(5))
    s = ks.connect(bootstrap_servers=own_broker.bootstrap_servers, spark=spark, timeout=90)
    s.sql("SET 'auto.offset.reset'='earliest';")
    s.sql("SET 'kafkasql.broker.outage.timeout.ms'='120000';")
    s.sql(f"CREATE STREAM j (n INT) WITH (kafka_topic='{topic}', value_format='JSON');")
    query = s.sql("SELECT n FROM j EMIT CHANGES;")
    try:
        until(lambda: len(query.rows()) == 5, 90, "the first records")
        os.kill(own_broker.pid, signal.SIGSTOP)
        until(lambda: query.waiting_for is not None, 30, "the query to report the outage")
        assert query.waiting_for.startswith(f"waiting for the Kafka broker at {own_broker.bootstrap_servers}")
        until(lambda: (query.model.snapshot().message or "").startswith("waiting for the Kafka broker"), 10,
              "the widget to say so")
        time.sleep(15)  # longer than one offset request's timeout: the stream had to wait, not fail
        assert query.is_active and query.state != "FAILED"
        os.kill(own_broker.pid, signal.SIGCONT)
        json_records(own_broker, topic, range(5, 10))
        until(lambda: len(query.rows()) == 10, 90, "the records produced after the broker came back")
        assert query.rows().N.tolist() == list(range(10)) and s.processing_log().empty
    finally:
        os.kill(own_broker.pid, signal.SIGCONT)
        query.stop()


def test_query_fails_clearly_when_the_broker_stays_away(spark, own_broker):
    topic = f"pause_{uuid.uuid4().hex[:10]}"
    json_records(own_broker, topic, range(3))
    s = ks.connect(bootstrap_servers=own_broker.bootstrap_servers, spark=spark, timeout=90)
    s.sql("SET 'auto.offset.reset'='earliest';")
    s.sql("SET 'kafkasql.broker.outage.timeout.ms'='5000';")
    s.sql(f"CREATE STREAM j (n INT) WITH (kafka_topic='{topic}', value_format='JSON');")
    query = s.sql("SELECT n FROM j EMIT CHANGES;")
    try:
        until(lambda: len(query.rows()) == 3, 90, "the first records")
        os.kill(own_broker.pid, signal.SIGSTOP)
        assert query.wait(90), "the query did not give up"
        message = query.model.snapshot().message
        assert query.state == "FAILED" and f"Kafka broker at {own_broker.bootstrap_servers} did not answer" in message
        assert "kafkasql.broker.outage.timeout.ms" in message, message
    finally:
        os.kill(own_broker.pid, signal.SIGCONT)
        query.stop()


def test_transient_push_query_leaves_nothing_behind(session, broker):
    """A transient push query keeps its checkpoint in a temporary directory deleted when it ends,
    and commits no offsets to Kafka: the next query starts where 'auto.offset.reset' says."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient

    from kafkasql_magic.kafka.arrow_batch import READ_GROUP
    from kafkasql_magic.kafka.offsets import PROBE_GROUP

    topic = f"transient_{uuid.uuid4().hex[:10]}"
    json_records(broker, topic, range(4))
    session.sql(f"CREATE STREAM j (n INT) WITH (kafka_topic='{topic}', value_format='JSON');")
    query = session.sql("SELECT n FROM j EMIT CHANGES;")
    until(lambda: len(query.rows()) == 4, 90, "the records")
    checkpoint = query._checkpoint
    assert os.path.isdir(checkpoint)
    query.stop()
    until(lambda: not os.path.exists(checkpoint), 30, "the temporary checkpoint to be deleted")
    client = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    for group in (READ_GROUP, PROBE_GROUP):
        request = [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0)])]
        (future,) = client.list_consumer_group_offsets(request).values()
        committed = future.result(timeout=10).topic_partitions
        assert [tp.offset for tp in committed] == [-1001], (group, committed)  # OFFSET_INVALID: none
    assert session.sql("SELECT n FROM j EMIT CHANGES LIMIT 4;").N.tolist() == [0, 1, 2, 3]


def test_snapshot_over_a_registry_that_stays_away_is_a_clear_error(spark, broker):
    from kafkasql_magic.errors import KafkaError

    down, topic = registry_then_records(broker)
    s = session_over(spark, broker, down.url, topic)
    s.sql("SET 'schema.registry.outage.timeout.ms'='2000';")
    with pytest.raises(KafkaError, match=f"Schema registry at {down.url} did not answer for"):
        s.sql("SELECT n FROM a;")
    assert s.processing_log().empty
