"""Materialize's ENVELOPE UPSERT (VALUE DECODING ERRORS = INLINE) and SUBSCRIBE over a bad
record, on the real broker: an inline error is a row's column, a bad record fails a SUBSCRIBE."""

from __future__ import annotations

import time

import pytest

import kafkasql_magic as ks
from kafkasql_magic.kafka.producer import produce

MZ = {"dialect": "materialize"}


def test_value_decoding_errors_inline(session, broker, new_topic):
    topic = new_topic(1)
    produce(broker.bootstrap_servers, topic, [
        {"key": "k1", "value": '{"a": 1}'}, {"key": "k2", "value": "not json"}, {"key": "k3", "value": "{bad"},
        {"key": "k2", "value": '{"a": 2}'}])  # a later good value replaces k2's error
    session.sql(f"CREATE SOURCE up FROM KAFKA TOPIC '{topic}' KEY FORMAT TEXT VALUE FORMAT JSON INCLUDE KEY "
                "ENVELOPE UPSERT (VALUE DECODING ERRORS = INLINE)", **MZ)
    rows = session.sql("SELECT key, data::text AS d, (error).description AS e FROM up ORDER BY key", **MZ)
    assert [(r.key, r.d) for r in rows.itertuples()] == [("k1", '{"a":1}'), ("k2", '{"a":2}'), ("k3", None)]
    assert rows.e[0] is None and rows.e[1] is None  # k3's message, not a failure, in Materialize's words:
    assert rows.e[2] == ('Failed to decode JSON: key must be a string at line 1 column 2 '
                         '(original text: {bad, original bytes: "7b626164")')
    assert session.processing_log().empty or topic not in set(session.processing_log().TOPIC)
    session.sql(f"CREATE SOURCE up2 FROM KAFKA TOPIC '{topic}' KEY FORMAT TEXT VALUE FORMAT JSON INCLUDE KEY "
                "ENVELOPE UPSERT (VALUE DECODING ERRORS = (INLINE AS decode_error))", **MZ)
    shown = session.sql("SHOW COLUMNS FROM up2", **MZ)
    assert list(zip(shown.name, shown.type)) == [("key", "text"), ("decode_error", "record"), ("data", "text")]
    with pytest.raises(ks.StatementError, match='^column "error" specified more than once'):
        session.sql(f"CREATE SOURCE up3 FROM KAFKA TOPIC '{topic}' KEY FORMAT TEXT VALUE FORMAT JSON "
                    "INCLUDE KEY AS error ENVELOPE UPSERT (VALUE DECODING ERRORS = INLINE)", **MZ)


def test_subscribe_over_a_bad_record_fails_naming_it(session, broker, new_topic):
    topic = new_topic(1)
    produce(broker.bootstrap_servers, topic, [{"value": '{"a": 1}'}, {"value": "{bad"}, {"value": '{"a": 3}'}])
    session.sql(f"CREATE SOURCE js FROM KAFKA TOPIC '{topic}' FORMAT JSON", **MZ)
    handle = session.sql("SUBSCRIBE js", **MZ)
    deadline = time.monotonic() + 60
    while handle.is_active and time.monotonic() < deadline:
        time.sleep(0.2)
    assert handle.state == "FAILED"
    assert f"(topic {topic}, partition 0, offset 1)" in str(handle.failure)
    log = session.processing_log()
    assert list(log[log.TOPIC == topic].OFFSET) == [1]
    with pytest.raises(ks.KStreamError, match=rf"\(topic {topic}, partition 0, offset 1\)$"):
        session.sql("SUBSCRIBE (SELECT data FROM js)", **MZ).result(60)


def test_subscribe_fails_on_a_bad_record_found_before_an_aggregation(session, broker, new_topic):
    topic = new_topic(1)
    produce(broker.bootstrap_servers, topic, [{"value": '{"a": 1}'}, {"value": "{bad"}, {"value": '{"a": 3}'}])
    session.sql(f"CREATE SOURCE agg_js FROM KAFKA TOPIC '{topic}' FORMAT JSON", **MZ)
    handle = session.sql("SUBSCRIBE (SELECT count(*) AS n FROM agg_js)", **MZ)
    assert handle.wait(90)
    assert handle.state == "FAILED"
    assert str(handle.failure).startswith("Failed to deserialize value") and str(handle.failure).endswith(
        f"(topic {topic}, partition 0, offset 1)")
    log = session.processing_log()
    assert list(log[log.TOPIC == topic].OFFSET) == [1]  # logged once, as well
    rows = session.sql("SELECT count(*) AS n FROM agg_js;")  # the ksql dialect logs and goes on
    assert rows.values.tolist() == [[2]]


def test_avro_value_decoding_errors_inline_in_materializes_words(session, broker, new_topic):
    import json

    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    topic, url = new_topic(1), broker.endpoints["schema.registry.url"]
    schema = {"type": "record", "name": "V", "fields": [{"name": "a", "type": "long"}, {"name": "b", "type": "string"}]}
    good = AvroSerializer(SchemaRegistryClient({"url": url}), json.dumps(schema))(
        {"a": 1, "b": "x"}, SerializationContext(topic, MessageField.VALUE))
    schema_id = int.from_bytes(good[1:5], "big")
    truncated = good[:-1]
    produce(broker.bootstrap_servers, topic, [
        {"key": "k1", "value": good}, {"key": "k2", "value": b"not avro"}, {"key": "k3", "value": b"ab"},
        {"key": "k4", "value": truncated}])
    session.sql(f"CREATE SOURCE upa FROM KAFKA TOPIC '{topic}' KEY FORMAT TEXT VALUE FORMAT AVRO USING CONFLUENT "
                f"SCHEMA REGISTRY '{url}' INCLUDE KEY ENVELOPE UPSERT (VALUE DECODING ERRORS = INLINE)", **MZ)
    rows = session.sql("SELECT key, a, (error).description AS e FROM upa ORDER BY key", **MZ)
    assert list(rows.key) == ["k1", "k2", "k3", "k4"] and rows.a[0] == 1 and rows.a[1:].isna().all()
    assert rows.e[0] is None
    assert rows.e[1] == ('avro deserialization error: wrong Confluent-style avro serialization magic: expected 0, '
                         'got 110 (original text: not avro, original bytes: "6e6f74206176726f")')
    assert rows.e[2] == ('avro deserialization error: Confluent-style avro datum is too few bytes: expected at '
                         'least 5 bytes, got 2 (original text: ab, original bytes: "6162")')
    assert rows.e[3].startswith(f"avro deserialization error: unable to decode row (Avro schema id = {schema_id}): ")
    assert rows.e[3].endswith(f'original bytes: "{truncated.hex()}")')
