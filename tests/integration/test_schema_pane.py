"""`%kstream schema`'s pane over the real embedded broker and registry, headless.

Schemas are registered with confluent-kafka's own SchemaRegistryClient and records written by
its AvroSerializer; the pane is driven through its widgets (filter, select, toggles, insert)."""

from __future__ import annotations

import json
import socket
import struct
import time
import uuid

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from kafkasql_magic.errors import StatementError
from kafkasql_magic.live.schema_model import SchemaBrowser
from kafkasql_magic.live.schema_pane import SchemaPane
from kafkasql_magic.kafka.producer import produce
from kafkasql_magic.registry import inference as inf

KEY = {"type": "record", "name": "OrderKey", "fields": [{"name": "id", "type": "long"}]}
VALUE_V1 = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "item", "type": "string"}, {"name": "qty", "type": "int"}]}
VALUE_V2 = {**VALUE_V1, "fields": VALUE_V1["fields"] + [
    {"name": "price", "type": ["null", {"type": "bytes", "logicalType": "decimal", "precision": 8, "scale": 2}],
     "default": None},
    {"name": "tags", "type": {"type": "array", "items": "string"}, "default": []}]}


@pytest.fixture(scope="module")
def client(registry):
    return SchemaRegistryClient({"url": registry})


def name(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


def ctx(topic, role="value"):
    return SerializationContext(topic, MessageField.KEY if role == "key" else MessageField.VALUE)


@pytest.fixture(scope="module")
def avro_topic(broker, client):
    """Key and value subjects registered; value has two versions; records written with v2."""
    from decimal import Decimal

    topic = name("pane_avro")
    client.register_schema(f"{topic}-value", Schema(json.dumps(VALUE_V1), "AVRO"))
    key_ser = AvroSerializer(client, json.dumps(KEY), conf={"auto.register.schemas": True})
    value_ser = AvroSerializer(client, json.dumps(VALUE_V2), conf={"auto.register.schemas": True})
    produce(broker.bootstrap_servers, topic, [
        {"key": key_ser({"id": i}, ctx(topic, "key")),
         "value": value_ser({"item": f"item{i}", "qty": i, "price": Decimal("1.50") * i, "tags": ["a"]}, ctx(topic))}
        for i in range(1, 4)], create_partitions=1)
    return topic


@pytest.fixture(scope="module")
def json_topic(broker):
    """No schema: KAFKA INT keys and JSON values."""
    topic = name("pane_json")
    produce(broker.bootstrap_servers, topic, [
        {"key": struct.pack(">i", i), "value": json.dumps({"id": i, "name": f"n{i}", "score": i * 1.5})}
        for i in range(3)] + [{"key": struct.pack(">i", 9), "value": json.dumps({"id": 9, "extra": True})}],
        create_partitions=1)
    return topic


@pytest.fixture(scope="module")
def shared_id_topic(broker, client):
    """Records framed with a schema id registered under another subject (RecordNameStrategy)."""
    topic = name("pane_shared")
    schema = {"type": "record", "name": "Shared", "namespace": f"ns{uuid.uuid4().hex[:6]}",
              "fields": [{"name": "flag", "type": "boolean"}]}
    ser = AvroSerializer(client, json.dumps(schema), conf={
        "auto.register.schemas": True, "subject.name.strategy": lambda c, record_name: record_name})
    produce(broker.bootstrap_servers, topic, [{"key": b"k", "value": ser({"flag": True}, ctx(topic))}],
            create_partitions=1)
    return topic


@pytest.fixture
def inserted():
    return []


@pytest.fixture
def pane(broker, registry, inserted, avro_topic, json_topic, shared_id_topic):
    browser = SchemaBrowser(registry, broker.bootstrap_servers, sample_timeout=5.0)
    return SchemaPane(browser, on_insert=inserted.append, background=False)


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_filter_lists_topics_with_their_subjects(pane, avro_topic, json_topic):
    labels = [label for label, _ in pane.topics.options]
    assert any(avro_topic in label for label in labels) and any(json_topic in label for label in labels)
    pane.filter.value = avro_topic
    assert [v for _, v in pane.topics.options] == [avro_topic]
    (label, _), = pane.topics.options
    assert f"{avro_topic}-key" in label and f"{avro_topic}-value" in label
    pane.filter.value = f"{json_topic}-value"  # a subject that does not exist matches nothing
    assert pane.topics.options == ()
    pane.filter.value = json_topic
    assert "no registered schema" in pane.topics.options[0][0]
    assert "subject(s)" in pane.status.value


def test_select_registry_topic_shows_schemas_columns_and_statement(pane, avro_topic, client, inserted):
    pane.filter.value = avro_topic
    pane.select(avro_topic)
    details = pane.details.value
    value_id = client.get_latest_version(f"{avro_topic}-value").schema_id
    assert f"subject {avro_topic}-value version 2" in details and f"schema id {value_id}" in details
    assert f"subject {avro_topic}-key version 1" in details and "GUESS" not in details
    for column in ("ROWKEY", "STRUCT&lt;`ID` BIGINT&gt;", "ITEM", "QTY", "PRICE", "DECIMAL(8, 2)", "ARRAY&lt;STRING&gt;"):
        assert column in details
    assert "&quot;namespace&quot;: &quot;shop&quot;" in details  # the schema text
    name = inf.source_name(avro_topic)
    assert pane.statement.value == (
        f"CREATE STREAM {name} (\n  ROWKEY STRUCT<`ID` BIGINT> KEY,\n  ITEM STRING,\n  QTY INTEGER,\n"
        f"  PRICE DECIMAL(8, 2),\n  TAGS ARRAY<STRING>\n) WITH (KAFKA_TOPIC='{avro_topic}', KEY_FORMAT='AVRO', "
        "VALUE_FORMAT='AVRO');")
    pane.explicit.value = False
    assert pane.statement.value == (
        f"CREATE STREAM {name} WITH (KAFKA_TOPIC='{avro_topic}', KEY_FORMAT='AVRO', VALUE_FORMAT='AVRO');")
    pane.kind.value = "TABLE"
    assert pane.statement.value.startswith(f"CREATE TABLE {name} WITH (")
    pane.explicit.value = True
    assert "ROWKEY STRUCT<`ID` BIGINT> PRIMARY KEY" in pane.statement.value
    assert not pane.insert.disabled
    pane.insert.click()
    assert inserted == [pane.statement.value]
    pane.statement.value += "\n-- edited"
    pane.insert.click()
    assert inserted[-1].endswith("-- edited")


def test_statement_from_the_pane_reads_the_topic(pane, avro_topic, broker, registry, spark):
    import kafkasql_magic as ks

    pane.select(avro_topic)
    s = ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark, schema_registry_url=registry, timeout=90)
    try:
        s.sql(pane.statement.value)
        df = s.sql(f"SELECT ROWKEY->ID AS K, ITEM, QTY, TAGS FROM {inf.source_name(avro_topic)};")
    finally:
        s.stop()
    assert sorted(df["K"].tolist()) == [1, 2, 3]
    assert sorted(df["ITEM"].tolist()) == ["item1", "item2", "item3"]


def test_topic_without_schema_shows_a_guess(pane, json_topic, inserted):
    pane.select(json_topic)
    details = pane.details.value
    assert "GUESS" in details and "Guess from 4 sampled record(s)" in details
    assert "guessed from sampled records" in details and "4-byte binary: KAFKA INT" in details
    name = inf.source_name(json_topic)
    assert pane.statement.value == (
        f"CREATE STREAM {name} (\n  ROWKEY INTEGER KEY,\n  ID BIGINT,\n  NAME STRING,\n  SCORE DOUBLE,\n"
        f"  EXTRA BOOLEAN\n) WITH (KAFKA_TOPIC='{json_topic}', KEY_FORMAT='KAFKA', VALUE_FORMAT='JSON');")
    pane.insert.click()
    assert inserted == [pane.statement.value]


def test_framed_records_use_the_schema_id_they_carry(pane, shared_id_topic):
    pane.select(shared_id_topic)
    details = pane.details.value
    assert "schema id found in the records" in details and "FLAG" in details
    listed = pane.statement.value  # explicit columns: no schema id beside them (ksqlDB refuses both)
    assert "VALUE_FORMAT='AVRO'" in listed and "FLAG BOOLEAN" in listed and "VALUE_SCHEMA_ID=" not in listed
    pane.explicit.value = False  # ksqlDB inference: the columns left to the id the records carry
    inferred = pane.statement.value
    assert "VALUE_SCHEMA_ID=" in inferred and "FLAG BOOLEAN" not in inferred


def test_empty_topic_without_subject_says_so(pane, new_topic, registry):
    topic = new_topic(prefix="pane_empty")
    pane.reload()
    pane.select(topic)
    assert f"No registered schema for subject {topic}-value and no records to sample" in pane.details.value
    assert pane.statement.value == "" and pane.insert.disabled
    with pytest.raises(StatementError) as err:
        inf.infer(registry, topic, key_format="KAFKA", value_format="AVRO")
    assert f"Subject: {topic}-value" in str(err.value) and registry in str(err.value)


def test_registry_down_is_a_clear_message_not_a_hang(broker, json_topic, avro_topic):
    url = closed_port_url()
    start = time.monotonic()
    pane = SchemaPane(SchemaBrowser(url, broker.bootstrap_servers, sample_timeout=5.0), background=False)
    assert f"Schema registry at {url} is not reachable" in pane.status.value
    assert json_topic in [v for _, v in pane.topics.options]  # the broker still lists topics
    pane.select(json_topic)
    assert f"Schema registry at {url} is not reachable" in pane.details.value
    assert "GUESS" in pane.details.value and "ID BIGINT" in pane.statement.value
    pane.select(avro_topic)  # framed records, but no registry to ask for the columns
    assert "Schema Registry framing with schema id(s)" in pane.details.value
    assert pane.insert.disabled  # no on_insert callback
    assert time.monotonic() - start < 20
    with pytest.raises(StatementError, match=f"Schema registry at {url} is not reachable"):
        inf.latest_schema_of(url, avro_topic, "value")


def test_background_mode_fills_the_widgets(broker, registry, avro_topic, inserted):
    pane = SchemaPane(SchemaBrowser(registry, broker.bootstrap_servers), on_insert=inserted.append)
    assert pane.wait(30)
    pane.select(avro_topic)
    assert pane.wait(30)
    assert f"{avro_topic}-value" in pane.details.value
    assert pane.statement.value.startswith("CREATE STREAM")
    pane.insert.click()
    assert inserted == [pane.statement.value]


def test_browser_subjects_filter(registry, broker, avro_topic):
    browser = SchemaBrowser(registry, broker.bootstrap_servers)
    assert browser.subjects(avro_topic) == [f"{avro_topic}-key", f"{avro_topic}-value"]
    with pytest.raises(StatementError, match="is not reachable"):
        SchemaBrowser(closed_port_url(), None).subjects()
