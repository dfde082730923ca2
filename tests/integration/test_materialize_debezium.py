"""Materialize's ENVELOPE DEBEZIUM on the real broker and registry: change events produced with
confluent-kafka's own Avro serializer, applied as upserts of `after`, deletes retracted."""

from __future__ import annotations

import json
import uuid

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

import kafkasql_magic as ks
from kafkasql_magic.kafka.producer import produce

MZ = {"dialect": "materialize"}
KEY = {"type": "record", "name": "K", "fields": [{"name": "id", "type": "int"}]}
ROW = {"type": "record", "name": "Row", "fields": [{"name": "id", "type": "int"}, {"name": "Name", "type": "string"}]}
ENVELOPE = {"type": "record", "name": "Envelope", "fields": [
    {"name": "before", "type": ["null", ROW], "default": None},
    {"name": "after", "type": ["null", "Row"], "default": None},
    {"name": "op", "type": "string"}]}


def test_debezium_changes_are_upserts_of_after_and_deletes_retract(session, broker, registry):
    topic = f"dbz_{uuid.uuid4().hex[:10]}"
    client = SchemaRegistryClient({"url": registry})
    key, value = AvroSerializer(client, json.dumps(KEY)), AvroSerializer(client, json.dumps(ENVELOPE))
    kctx, vctx = SerializationContext(topic, MessageField.KEY), SerializationContext(topic, MessageField.VALUE)

    def event(i, before, after, op):
        return {"key": key({"id": i}, kctx), "value": value({"before": before, "after": after, "op": op}, vctx)}

    produce(broker.bootstrap_servers, topic, [
        event(1, None, {"id": 1, "Name": "a"}, "c"),
        event(2, None, {"id": 2, "Name": "b"}, "c"),
        event(3, None, {"id": 3, "Name": "c"}, "c"),
        event(1, {"id": 1, "Name": "a"}, {"id": 1, "Name": "a2"}, "u"),
        event(2, {"id": 2, "Name": "b"}, None, "d"),          # a delete event
        {"key": key({"id": 3}, kctx), "value": None},          # a tombstone
    ], create_partitions=1)
    session.sql(f"CREATE SOURCE dbz FROM KAFKA TOPIC '{topic}' FORMAT AVRO USING CONFLUENT SCHEMA REGISTRY "
                f"'{registry}' ENVELOPE DEBEZIUM", **MZ)
    assert session.sql("SELECT * FROM dbz", **MZ).to_dict("records") == [{"id": 1, "name": "a2"}]
    shown = session.sql("SHOW COLUMNS FROM dbz", **MZ)
    assert list(zip(shown.name, shown.type)) == [("id", "int4"), ("name", "text")]
    with pytest.raises(ks.StatementError, match="^Cannot use INCLUDE KEY with ENVELOPE DEBEZIUM: Debezium values "
                                                 "include all keys."):
        session.sql(f"CREATE SOURCE dbz2 FROM KAFKA TOPIC '{topic}' FORMAT AVRO USING CONFLUENT SCHEMA REGISTRY "
                    f"'{registry}' INCLUDE KEY ENVELOPE DEBEZIUM", **MZ)
    with pytest.raises(ks.StatementError, match="^ENVELOPE DEBEZIUM requires that KEY FORMAT be specified"):
        session.sql(f"CREATE SOURCE dbz3 FROM KAFKA TOPIC '{topic}' FORMAT JSON ENVELOPE DEBEZIUM", **MZ)
