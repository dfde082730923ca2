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


def test_debezium_json_with_and_without_the_schema_wrapper(session, broker):
    topic = f"dbzj_{uuid.uuid4().hex[:10]}"

    def event(i, before, after, op, wrapped=False):
        change = {"before": before, "after": after, "op": op, "source": {"db": "shop"}, "ts_ms": 1}
        value = {"schema": {"type": "struct"}, "payload": change} if wrapped else change
        return {"key": json.dumps({"id": i}), "value": json.dumps(value), "partition": 0}

    produce(broker.bootstrap_servers, topic, [
        event(1, None, {"id": 1, "name": "a"}, "r"),
        event(2, None, {"id": 2, "name": "b"}, "c", wrapped=True),
        event(3, None, {"id": 3, "name": "c"}, "c"),
        event(1, {"id": 1, "name": "a"}, {"id": 1, "name": "a2"}, "u", wrapped=True),
        event(2, {"id": 2, "name": "b"}, None, "d"),             # a delete event
        {"key": json.dumps({"id": 3}), "value": None, "partition": 0},  # a tombstone
        event(4, None, {"id": 4, "name": "d"}, "c"),
    ], create_partitions=1)
    session.sql(f"CREATE SOURCE dbzj FROM KAFKA TOPIC '{topic}' KEY FORMAT JSON VALUE FORMAT JSON "
                "ENVELOPE DEBEZIUM", **MZ)
    rows = session.sql("SELECT data FROM dbzj ORDER BY data", **MZ)
    assert [json.loads(d) for d in rows.data] == [{"id": 1, "name": "a2"}, {"id": 4, "name": "d"}]
    shown = session.sql("SHOW COLUMNS FROM dbzj", **MZ)
    assert list(zip(shown.name, shown.type)) == [("data", "text")]  # as FORMAT JSON's data
    produce(broker.bootstrap_servers, topic, [event(4, None, None, "c"), event(1, None, {"id": 1}, "t")])
    with pytest.raises(ks.StatementError, match=rf"^Debezium change event has neither a 'before' nor an 'after' row "
                                                 rf"\(topic {topic}, partition 0, offset 7\)"):
        session.sql("SELECT data FROM dbzj", **MZ)
    log = session.processing_log()
    assert list(log[log.TOPIC == topic].OFFSET) == [7, 8]
    assert 'unsupported Debezium operation "t"' in log[log.TOPIC == topic].MESSAGE.iloc[1]
    with pytest.raises(ks.StatementError, match="^ENVELOPE DEBEZIUM requires that VALUE FORMAT is set to AVRO or JSON"):
        session.sql(f"CREATE SOURCE dbzt FROM KAFKA TOPIC '{topic}' KEY FORMAT TEXT VALUE FORMAT TEXT "
                    "ENVELOPE DEBEZIUM", **MZ)
