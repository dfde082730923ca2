"""A Schema Registry that goes away while a query runs: the query waits (and says so), resumes
when the registry is back without losing or logging a record, and fails with a clear message
once the outage lasts longer than its limit."""

from __future__ import annotations

import json
import time
import uuid

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

import kafkasql_magic as ks
from kafkasql_magic.local.producer import produce
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
        time.sleep(5)  # records arrived long ago: they wait, neither delivered nor logged
        assert query.is_active and len(query.rows()) == 0 and s.processing_log().empty
        back = RegistryServer(broker.bootstrap_servers, port=down.port, topic=down.topic).start()
        try:
            until(lambda: len(query.rows()) == COUNT, 90, "every record after the registry came back")
            assert query.rows().N.tolist() == list(range(COUNT))
            assert s.processing_log().empty
            time.sleep(2.5)  # the driver's view is refreshed every 2 s
            assert query.waiting_for is None
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
