"""Schema inference through CREATE statements: registry subjects become columns (ksqlDB rules)."""

import json
import uuid

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

import kafkasql_magic as ks
from kafkasql_magic.kafka.producer import produce

VALUE_V1 = {"type": "record", "name": "User", "fields": [
    {"name": "name", "type": "string"},
    {"name": "age", "type": ["null", "int"], "default": None},
    {"name": "tier", "type": {"type": "enum", "name": "Tier", "symbols": ["GOLD", "SILVER"]}}]}
VALUE_V2 = {**VALUE_V1, "fields": VALUE_V1["fields"] + [{"name": "email", "type": ["null", "string"], "default": None}]}
KEY = {"type": "record", "name": "UserKey", "fields": [{"name": "id", "type": "long"}, {"name": "org", "type": "string"}]}


@pytest.fixture
def session(broker, spark, registry):
    s = ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark, schema_registry_url=registry,
                   timeout=90)
    s.sql("SET 'auto.offset.reset'='earliest';")
    yield s
    s.stop()


@pytest.fixture
def users(broker, registry):
    """A topic with Avro record keys and values; the second record uses a newer value schema."""
    topic = f"users_{uuid.uuid4().hex[:8]}"
    client = SchemaRegistryClient({"url": registry})
    key_ser = AvroSerializer(client, json.dumps(KEY))
    v1, v2 = AvroSerializer(client, json.dumps(VALUE_V1)), AvroSerializer(client, json.dumps(VALUE_V2))
    kctx, vctx = SerializationContext(topic, MessageField.KEY), SerializationContext(topic, MessageField.VALUE)
    produce(broker.bootstrap_servers, topic, [
        {"key": key_ser({"id": 1, "org": "a"}, kctx), "value": v1({"name": "ann", "age": 31, "tier": "GOLD"}, vctx),
         "headers": [("src", b"x")], "partition": 0},
        {"key": key_ser({"id": 2, "org": "b"}, kctx),
         "value": v2({"name": "bob", "age": None, "tier": "SILVER", "email": "b@x"}, vctx), "partition": 0},
    ], create_partitions=1)
    return topic


def test_create_without_columns_reads_key_and_value_schemas(session, users):
    session.sql(f"CREATE STREAM u WITH (kafka_topic='{users}', key_format='AVRO', value_format='AVRO');")
    described = dict(session.sql("DESCRIBE u;").values)
    assert described["ROWKEY"] == "STRUCT<`ID` BIGINT, `ORG` STRING> (key)"
    assert described["NAME"] == "STRING" and described["AGE"] == "INTEGER" and described["TIER"] == "STRING"
    assert described["EMAIL"] == "STRING"  # the latest version of the subject
    rows = session.sql("SELECT ROWKEY->id AS id, name, age, tier, email FROM u EMIT CHANGES LIMIT 2;")
    assert rows.sort_values("ID").to_dict("records") == [
        {"ID": 1, "NAME": "ann", "AGE": 31, "TIER": "GOLD", "EMAIL": None},  # v1 record, projected onto v2 columns
        {"ID": 2, "NAME": "bob", "AGE": None, "TIER": "SILVER", "EMAIL": "b@x"}]


def test_partial_schemas_declared_key_or_headers_plus_inferred_parts(session, users):
    session.sql(f"CREATE STREAM p (h ARRAY<STRUCT<key STRING, value BYTES>> HEADERS) "
                f"WITH (kafka_topic='{users}', key_format='avro', value_format='avro');")
    assert list(session.sql("DESCRIBE p;").Field) == ["ROWKEY", "H", "NAME", "AGE", "TIER", "EMAIL"]
    session.sql(f"CREATE STREAM k (k STRUCT<id BIGINT, org STRING> KEY) "
                f"WITH (kafka_topic='{users}', key_format='AVRO', value_format='AVRO');")
    assert list(session.sql("DESCRIBE k;").Field)[:2] == ["K", "NAME"]
    df = session.sql("SELECT k->org AS org, name FROM k EMIT CHANGES LIMIT 2;")
    assert sorted(zip(df.ORG, df.NAME)) == [("a", "ann"), ("b", "bob")]


def test_default_key_format_avro_reads_the_key_schema_unless_none(session, users, broker):
    session.sql("SET 'ksql.persistence.default.format.key'='AVRO';")
    session.sql(f"CREATE STREAM d WITH (kafka_topic='{users}', value_format='AVRO');")
    assert list(session.sql("DESCRIBE d;").Field)[0] == "ROWKEY"
    session.sql(f"CREATE STREAM n WITH (kafka_topic='{users}', key_format='NONE', value_format='AVRO');")
    assert "ROWKEY" not in set(session.sql("DESCRIBE n;").Field)
    plain = f"plain_{uuid.uuid4().hex[:8]}"
    produce(broker.bootstrap_servers, plain, [{"value": b"{}", "partition": 0}], create_partitions=1)
    with pytest.raises(ks.StatementError) as info:
        session.sql(f"CREATE STREAM m (v STRING) WITH (kafka_topic='{plain}', value_format='JSON');")
    assert f"{plain}-key" in str(info.value) and session.schema_registry_url in str(info.value)
    session.sql("UNSET 'ksql.persistence.default.format.key';")
    session.sql(f"CREATE STREAM keyless (v STRING) WITH (kafka_topic='{plain}', value_format='JSON');")
    assert list(session.sql("DESCRIBE keyless;").Field) == ["V"]


def test_missing_subject_and_registry_down_are_clear_errors(session, broker, spark, users):
    plain = f"none_{uuid.uuid4().hex[:8]}"
    produce(broker.bootstrap_servers, plain, [{"value": b"x", "partition": 0}], create_partitions=1)
    with pytest.raises(ks.StatementError) as info:
        session.sql(f"CREATE STREAM x WITH (kafka_topic='{plain}', value_format='AVRO');")
    assert f"{plain}-value" in str(info.value)
    down = ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark,
                      schema_registry_url="http://127.0.0.1:9")
    with pytest.raises(ks.StatementError) as info:
        down.sql(f"CREATE STREAM y WITH (kafka_topic='{users}', value_format='AVRO');")
    assert "http://127.0.0.1:9" in str(info.value)


def test_schema_pane_from_the_magic(broker, spark, users):
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "kafkasql_magic")
    shell.run_line_magic("config", f"KStreamMagics.bootstrap_servers = '{broker.bootstrap_servers}'")
    shell.run_line_magic("config", f"KStreamMagics.schema_registry_url = '{broker.endpoints['schema.registry.url']}'")
    import kafkasql_magic.magic as magic

    magic._sessions.clear()
    widget = shell.run_line_magic("kstream", f"schema {users}")
    assert widget is not None and hasattr(widget, "children")
