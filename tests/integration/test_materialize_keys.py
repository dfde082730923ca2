"""Materialize's key naming and SHOW COLUMNS over registry-framed Avro keys (issue 20, section 2)."""

import json
import uuid

import pytest

from kafkasql_magic.kafka.producer import produce

MZ = {"dialect": "materialize"}
ONE_FIELD_KEY = {"type": "record", "name": "K", "fields": [{"name": "id", "type": "long"}]}
TWO_FIELD_KEY = {"type": "record", "name": "K2", "fields": [{"name": "region", "type": "string"},
                                                            {"name": "n", "type": "int"}]}
VALUE = {"type": "record", "name": "V", "fields": [{"name": "Id", "type": "long"}, {"name": "b", "type": "string"}]}


@pytest.fixture
def keyed_topic(broker, registry):
    """A topic of two records whose key is a one-field Avro record, both framed by the registry."""
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    name = f"mzk_{uuid.uuid4().hex[:8]}"
    client = SchemaRegistryClient({"url": registry})
    key_ser, value_ser = AvroSerializer(client, json.dumps(ONE_FIELD_KEY)), AvroSerializer(client, json.dumps(VALUE))
    produce(broker.bootstrap_servers, name, [
        {"key": key_ser({"id": k}, SerializationContext(name, MessageField.KEY)),
         "value": value_ser({"Id": 10 * k, "b": f"v{k}"}, SerializationContext(name, MessageField.VALUE)),
         "partition": 0}
        for k in (1, 2)], create_partitions=1)
    return name


def test_include_key_as_name_over_a_one_field_record_key_is_that_fields_value(session, keyed_topic, registry):
    session.sql(f"CREATE SOURCE k1 FROM KAFKA TOPIC '{keyed_topic}' FORMAT AVRO USING CONFLUENT SCHEMA REGISTRY "
                f"'{registry}' INCLUDE KEY AS kid", **MZ)
    rows = session.sql("SELECT * FROM k1", **MZ).sort_values("kid").to_dict("records")
    assert rows == [{"kid": 1, "id": 10, "b": "v1"}, {"kid": 2, "id": 20, "b": "v2"}]


def test_include_key_without_a_name_flattens_a_one_field_record_key(session, keyed_topic, registry):
    session.sql(f"CREATE SOURCE k2 (key_id, id, b) FROM KAFKA TOPIC '{keyed_topic}' FORMAT AVRO USING CONFLUENT "
                f"SCHEMA REGISTRY '{registry}' INCLUDE KEY", **MZ)
    rows = session.sql("SELECT key_id, id, b FROM k2", **MZ).sort_values("key_id").to_dict("records")
    assert rows == [{"key_id": 1, "id": 10, "b": "v1"}, {"key_id": 2, "id": 20, "b": "v2"}]


def test_a_column_list_renames_key_and_value_columns_in_order(session, keyed_topic, registry):
    session.sql(f"CREATE SOURCE k3 (k, a, c, o) FROM KAFKA TOPIC '{keyed_topic}' FORMAT AVRO USING CONFLUENT "
                f"SCHEMA REGISTRY '{registry}' INCLUDE KEY AS kid, OFFSET", **MZ)
    rows = session.sql("SELECT * FROM k3", **MZ).sort_values("k").to_dict("records")
    assert rows == [{"k": 1, "a": 10, "c": "v1", "o": 0}, {"k": 2, "a": 20, "c": "v2", "o": 1}]


def test_a_key_of_several_fields_named_stays_a_record(session, broker, registry):
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    name = f"mzk2_{uuid.uuid4().hex[:8]}"
    client = SchemaRegistryClient({"url": registry})
    key_ser, value_ser = AvroSerializer(client, json.dumps(TWO_FIELD_KEY)), AvroSerializer(client, json.dumps(VALUE))
    produce(broker.bootstrap_servers, name, [{
        "key": key_ser({"region": "eu", "n": 3}, SerializationContext(name, MessageField.KEY)),
        "value": value_ser({"Id": 1, "b": "x"}, SerializationContext(name, MessageField.VALUE)), "partition": 0}],
        create_partitions=1)
    session.sql(f"CREATE SOURCE k4 (whole, id, b) FROM KAFKA TOPIC '{name}' FORMAT AVRO USING CONFLUENT SCHEMA "
                f"REGISTRY '{registry}' INCLUDE KEY AS k", **MZ)
    assert session.sql("SELECT (whole).region AS r, (whole).n AS n, b FROM k4", **MZ).to_dict("records") == [
        {"r": "eu", "n": 3, "b": "x"}]


def test_show_columns_in_materializes_words(session, keyed_topic, registry):
    session.sql(f"CREATE SOURCE k5 FROM KAFKA TOPIC '{keyed_topic}' FORMAT AVRO USING CONFLUENT SCHEMA REGISTRY "
                f"'{registry}' INCLUDE KEY AS kid, PARTITION, OFFSET, TIMESTAMP AS ts, HEADERS, HEADER 'h' AS h BYTES",
                **MZ)
    shown = session.sql("SHOW COLUMNS FROM k5", **MZ)
    assert list(shown.columns) == ["name", "nullable", "type", "comment"]
    assert [tuple(r) for r in shown.itertuples(index=False)] == [
        ("kid", True, "int8", ""), ("id", True, "int8", ""), ("b", True, "text", ""),
        ("partition", False, "int4", ""), ("offset", False, "uint8", ""), ("ts", False, "timestamp", ""),
        ("headers", False, "list", ""), ("h", True, "bytea", "")]
    assert list(session.sql("DESCRIBE k5;").columns) == ["Field", "Type"]  # ksql keeps DESCRIBE's listing
