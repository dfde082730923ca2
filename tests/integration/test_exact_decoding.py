"""Every decoder accounts for every byte of a record, in both dialects.

Each case writes a good record, the same record one byte too long, one byte too short, and
another good record. The good ones come back with their values; the two bad ones are logged
with their offsets and never turn into plausible values.
"""

from __future__ import annotations

import io
import json
import uuid

import fastavro
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

import kafkasql_magic as ks
from kafkasql_magic.kafka.producer import produce

MZ = {"dialect": "materialize"}
VALUE_SCHEMA = {"type": "record", "name": "V", "fields": [{"name": "n", "type": "long"}, {"name": "s", "type": "string"}]}


@pytest.fixture
def session(broker, spark, registry):
    s = ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark, schema_registry_url=registry, timeout=90)
    s.sql("SET 'auto.offset.reset'='earliest';")
    yield s
    s.stop()


def write(broker, values: list[bytes]) -> str:
    topic = f"exact_{uuid.uuid4().hex[:10]}"
    produce(broker.bootstrap_servers, topic, [{"value": v, "partition": 0} for v in values], create_partitions=1)
    return topic


def long_and_short(good: bytes, other: bytes, longer: bytes | None = None, shorter: bytes | None = None):
    """good, good + one byte (or `longer`), good less its last byte (or `shorter`), other."""
    return [good, good + b"\x00" if longer is None else longer, good[:-1] if shorter is None else shorter, other]


def materialize_read(session, query: str, first_bad: int):
    """Materialize fails a snapshot over a bad record, naming it (and logs every bad one); the
    good records still read through `dataframe()`."""
    with pytest.raises(ks.StatementError, match=rf"\(topic exact_\w+, partition 0, offset {first_bad}\)$"):
        session.sql(query, **MZ)
    return session.dataframe(query, **MZ).toPandas()


def logged_offsets(session, topic):
    log = session.processing_log()
    mine = log[log.TOPIC == topic].sort_values("OFFSET")
    return mine.OFFSET.tolist(), mine.MESSAGE.tolist()


def bare_avro(record) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(VALUE_SCHEMA), record)
    return out.getvalue()


def confluent_avro(registry, topic, record) -> bytes:
    serializer = AvroSerializer(SchemaRegistryClient({"url": registry}), json.dumps(VALUE_SCHEMA))
    return serializer(record, SerializationContext(topic, MessageField.VALUE))


KSQL_CASES = {
    # format: (declared columns, WITH options, good, other, longer, shorter); the good rows hold 7 and 8
    "KAFKA": ("(N BIGINT)", "value_format='KAFKA'", (7).to_bytes(8, "big"), (8).to_bytes(8, "big"), None, None),
    "DELIMITED": ("(N BIGINT, S STRING)", "value_format='DELIMITED'", b"7,a", b"8,b", b"7,a,", b"7"),
    "JSON": ("(N BIGINT, S STRING)", "value_format='JSON'", b'{"n": 7, "s": "a"}', b'{"n": 8, "s": "b"}',
             b'{"n": 7, "s": "a"}}', None),
}


@pytest.mark.parametrize("fmt", sorted(KSQL_CASES))
def test_ksql_formats_refuse_a_byte_too_many_or_too_few(session, broker, fmt):
    columns, options, good, other, longer, shorter = KSQL_CASES[fmt]
    topic = write(broker, long_and_short(good, other, longer, shorter))
    session.sql(f"CREATE STREAM s {columns} WITH (kafka_topic='{topic}', {options});")
    rows = session.sql("SELECT N, ROWOFFSET AS O FROM s EMIT CHANGES LIMIT 2;")
    assert list(zip(rows.N, rows.O)) == [(7, 0), (8, 3)]
    offsets, messages = logged_offsets(session, topic)
    assert offsets == [1, 2], messages


def test_json_value_followed_by_other_text_is_an_error_not_a_row(session, broker):
    topic = write(broker, [b'{"n": 2} trailing', b'{"n": 3} {"n": 4}', b'[1] x', b'{"n": 5}  ', b'{"n": 6}'])
    session.sql(f"CREATE STREAM j (N BIGINT) WITH (kafka_topic='{topic}', value_format='JSON');")
    session.sql(f"CREATE STREAM a (N ARRAY<INT>) WITH (kafka_topic='{topic}', value_format='JSON', "
                "wrap_single_value=false);")
    assert session.sql("SELECT N FROM j;").N.tolist() == [5, 6]  # trailing blanks are fine
    offsets, messages = logged_offsets(session, topic)
    assert offsets == [0, 1, 2]
    assert messages[0] == "Failed to deserialize value: Invalid JSON: text after the end of the value"
    session.sql("SELECT N FROM a;")
    offsets, _ = logged_offsets(session, topic)
    assert 2 in offsets[3:]  # `[1] x` is not the array [1]


def test_json_sr_refuses_trailing_and_truncated_payloads(session, broker, registry):
    schema = json.dumps({"type": "object", "properties": {"n": {"type": "integer"}}})
    topic = f"exact_{uuid.uuid4().hex[:10]}"
    serializer = JSONSerializer(schema, SchemaRegistryClient({"url": registry}))
    good = serializer({"n": 7}, SerializationContext(topic, MessageField.VALUE))
    produce(broker.bootstrap_servers, topic, [{"value": v, "partition": 0} for v in
                                              long_and_short(good, good, good + b"}")], create_partitions=1)
    session.sql(f"CREATE STREAM s (N BIGINT) WITH (kafka_topic='{topic}', value_format='JSON_SR');")
    assert session.sql("SELECT N, ROWOFFSET AS O FROM s EMIT CHANGES LIMIT 2;").O.tolist() == [0, 3]
    assert logged_offsets(session, topic)[0] == [1, 2]


def test_registry_avro_refuses_a_byte_too_many_or_too_few(session, broker, registry):
    topic = f"exact_{uuid.uuid4().hex[:10]}"
    good = confluent_avro(registry, topic, {"n": 7, "s": "a"})
    other = confluent_avro(registry, topic, {"n": 8, "s": "b"})
    produce(broker.bootstrap_servers, topic, [{"value": v, "partition": 0} for v in long_and_short(good, other)],
            create_partitions=1)
    session.sql(f"CREATE STREAM s (N BIGINT, S STRING) WITH (kafka_topic='{topic}', value_format='AVRO');")
    rows = session.sql("SELECT N, S, ROWOFFSET AS O FROM s EMIT CHANGES LIMIT 2;")
    assert list(zip(rows.N, rows.S, rows.O)) == [(7, "a", 0), (8, "b", 3)]
    offsets, messages = logged_offsets(session, topic)
    assert offsets == [1, 2]
    assert "1 bytes left over after the record" in messages[0]
    assert "truncated" in messages[1] or "EOFError" in messages[1]
    # The same topic through Materialize's registry-backed source.
    session.sql(f"CREATE SOURCE m FROM KAFKA TOPIC '{topic}' FORMAT AVRO USING CONFLUENT SCHEMA REGISTRY "
                f"'{registry}'", **MZ)
    assert materialize_read(session, "SELECT n, s FROM m", 1).to_dict("records") == [
        {"n": 7, "s": "a"}, {"n": 8, "s": "b"}]


def test_inline_avro_schema_reads_confluent_framed_records_by_default(session, broker, registry):
    topic = f"exact_{uuid.uuid4().hex[:10]}"
    good = confluent_avro(registry, topic, {"n": 7, "s": "a"})
    other = confluent_avro(registry, topic, {"n": 8, "s": "b"})
    produce(broker.bootstrap_servers, topic, [{"value": v, "partition": 0} for v in
                                              long_and_short(good, other) + [bare_avro({"n": 9, "s": "c"})]],
            create_partitions=1)
    schema = json.dumps(VALUE_SCHEMA).replace("'", "''")
    session.sql(f"CREATE SOURCE framed FROM KAFKA TOPIC '{topic}' FORMAT AVRO USING SCHEMA '{schema}'", **MZ)
    assert materialize_read(session, "SELECT n, s FROM framed", 1).to_dict("records") == [
        {"n": 7, "s": "a"}, {"n": 8, "s": "b"}]
    offsets, messages = logged_offsets(session, topic)
    assert offsets == [1, 2, 4]
    assert "1 bytes left over" in messages[0]
    assert messages[2].endswith("Unknown magic byte! (got 0x12, expected 0x00)")  # the bare record (long 9 zigzags to 0x12)


def test_inline_avro_schema_without_the_wire_format_reads_bare_records(session, broker):
    good, other = bare_avro({"n": 7, "s": "a"}), bare_avro({"n": 8, "s": "b"})
    topic = write(broker, long_and_short(good, other))
    schema = json.dumps(VALUE_SCHEMA).replace("'", "''")
    session.sql(f"CREATE SOURCE bare FROM KAFKA TOPIC '{topic}' FORMAT AVRO USING SCHEMA '{schema}' "
                "(CONFLUENT WIRE FORMAT = false)", **MZ)
    assert materialize_read(session, "SELECT n, s FROM bare", 1).to_dict("records") == [
        {"n": 7, "s": "a"}, {"n": 8, "s": "b"}]
    assert logged_offsets(session, topic)[0] == [1, 2]


def test_materialize_json_and_csv_refuse_a_byte_too_many_or_too_few(session, broker):
    topic = write(broker, long_and_short(b'{"n": 7}', b'{"n": 8}', b'{"n": 7}}'))
    session.sql(f"CREATE SOURCE j FROM KAFKA TOPIC '{topic}' FORMAT JSON INCLUDE OFFSET", **MZ)
    rows = materialize_read(session, "SELECT data, \"offset\" FROM j", 1)
    assert [json.loads(d) for d in rows.data] == [{"n": 7}, {"n": 8}] and rows["offset"].tolist() == [0, 3]
    assert logged_offsets(session, topic)[0] == [1, 2]
    topic = write(broker, long_and_short(b"7,a", b"8,b", b"7,a,", b"7"))
    session.sql(f"CREATE SOURCE c FROM KAFKA TOPIC '{topic}' FORMAT CSV WITH 2 COLUMNS", **MZ)
    rows = materialize_read(session, "SELECT column1, column2 FROM c", 1)
    assert list(zip(rows.column1, rows.column2)) == [("7", "a"), ("8", "b")]
    assert logged_offsets(session, topic)[0] == [1, 2]
