"""Materialize-style sources on a real broker: INCLUDE metadata, envelopes, views, both dialects."""

import datetime as dt
import json
import uuid

import pytest

import kafkasql_magic as ks
from kafkasql_magic.kafka.producer import produce

MZ = {"dialect": "materialize"}


@pytest.fixture
def topic(broker):
    name = f"mz_{uuid.uuid4().hex[:8]}"
    produce(broker.bootstrap_servers, name, [
        {"key": b"k1", "value": json.dumps({"id": 1, "b": "x"}), "partition": 0, "timestamp": 1_700_000_000_000,
         "headers": [("h", b"one"), ("h", b"two"), ("bin", b"\xff\x00"), ("n", None)]},
        {"key": b"k2", "value": json.dumps({"id": 2, "b": "y"}), "partition": 1, "timestamp": 1_700_000_000_001},
    ], create_partitions=2)
    return name


def test_text_key_json_value_and_every_include_in_order(session, topic):
    session.sql(f"""CREATE SOURCE src FROM KAFKA BROKER '{session.bootstrap_servers}' TOPIC '{topic}'
        KEY FORMAT TEXT VALUE FORMAT JSON
        INCLUDE KEY, PARTITION, OFFSET AS o, TIMESTAMP AS ts, TOPIC, HEADERS, HEADER 'h' AS h,
                HEADER 'bin' AS hb BYTES""", **MZ)
    with pytest.raises(ks.StatementError, match="^A header with key 'h' was not found in the message headers"):
        session.sql("SELECT * FROM src", **MZ)  # the second record has no header 'h': Materialize fails
    df = session.sql("SELECT * FROM src;").sort_values("KEY").reset_index(drop=True)  # ksql logs it and goes on
    df.columns = [c.lower() for c in df.columns]
    assert list(df.columns) == ["key", "data", "partition", "o", "ts", "topic", "headers", "h", "hb"]
    first = df.iloc[0]
    assert first.key == "k1" and json.loads(first.data) == {"id": 1, "b": "x"}
    assert (first.partition, first.o, first.topic) == (0, 0, topic)
    assert first.ts.replace(tzinfo=None) == dt.datetime(2023, 11, 14, 22, 13, 20)
    assert [(h["key"], h["value"]) for h in first.headers] == [("h", b"one"), ("h", b"two"), ("bin", b"\xff\x00"), ("n", None)]
    assert first.h == "two" and first.hb == b"\xff\x00"  # the last value for a repeated header
    assert len(df) == 1


def test_bytes_and_csv_default_names_and_explicit_column_list(session, broker):
    name = f"mzc_{uuid.uuid4().hex[:8]}"
    produce(broker.bootstrap_servers, name, [{"key": b"\x01", "value": b"a,1", "partition": 0}], create_partitions=1)
    session.sql(f"CREATE SOURCE raw FROM KAFKA TOPIC '{name}' KEY FORMAT BYTES VALUE FORMAT BYTES INCLUDE KEY", **MZ)
    assert session.sql("SELECT * FROM raw", **MZ).to_dict("records") == [{"key": b"\x01", "data": b"a,1"}]
    session.sql(f"CREATE SOURCE csv (letter, number, p) FROM KAFKA TOPIC '{name}' FORMAT CSV WITH 2 COLUMNS "
                "INCLUDE PARTITION", **MZ)
    assert session.sql("SELECT * FROM csv", **MZ).to_dict("records") == [{"letter": "a", "number": "1", "p": 0}]
    session.sql(f"CREATE SOURCE txt FROM KAFKA TOPIC '{name}' FORMAT TEXT", **MZ)
    assert list(session.sql("SELECT text FROM txt", **MZ).text) == ["a,1"]
    shown = session.sql("SHOW COLUMNS FROM raw", **MZ)  # Materialize: `data bytea NOT NULL`, the key nullable
    assert list(zip(shown.name, shown.nullable)) == [("key", True), ("data", False)]
    shown = session.sql("SHOW COLUMNS FROM csv", **MZ)
    assert list(zip(shown.name, shown.nullable)) == [("letter", False), ("number", False), ("p", False)]


def test_collisions_and_include_key_with_bare_format(session, topic):
    with pytest.raises(ks.StatementError) as info:
        session.sql(f"CREATE SOURCE c1 FROM KAFKA TOPIC '{topic}' KEY FORMAT TEXT VALUE FORMAT TEXT "
                    "INCLUDE KEY AS text", **MZ)
    assert str(info.value).startswith('column "text" specified more than once') and "AS <name>" in str(info.value)
    with pytest.raises(ks.StatementError, match='^column "partition" specified more than once'):
        session.sql(f"CREATE SOURCE c2 FROM KAFKA TOPIC '{topic}' FORMAT TEXT INCLUDE PARTITION, OFFSET AS partition",
                    **MZ)
    with pytest.raises(ks.StatementError) as info:
        session.sql(f"CREATE SOURCE c3 FROM KAFKA TOPIC '{topic}' FORMAT TEXT INCLUDE KEY", **MZ)
    assert str(info.value) == "INCLUDE KEY requires specifying KEY FORMAT .. VALUE FORMAT, got bare FORMAT"
    session.sql(f"CREATE SOURCE c4 (k, text) FROM KAFKA TOPIC '{topic}' KEY FORMAT TEXT VALUE FORMAT TEXT "
                "INCLUDE KEY AS text", **MZ)  # an explicit column list resolves it
    assert set(session.sql("SELECT k FROM c4", **MZ).k) == {"k1", "k2"}


def test_upsert_envelope_latest_value_wins_and_null_deletes(session, broker):
    name = f"mzu_{uuid.uuid4().hex[:8]}"
    produce(broker.bootstrap_servers, name, [
        {"key": b"a", "value": b"1", "partition": 0}, {"key": b"b", "value": b"2", "partition": 0},
        {"key": b"a", "value": b"3", "partition": 0}, {"key": b"b", "value": None, "partition": 0},
        {"key": None, "value": b"9", "partition": 0}, {"key": b"c", "value": b"4", "partition": 0},
    ], create_partitions=1)
    session.sql(f"CREATE SOURCE u FROM KAFKA TOPIC '{name}' KEY FORMAT TEXT VALUE FORMAT TEXT ENVELOPE UPSERT", **MZ)
    with pytest.raises(ks.StatementError, match=r"^Envelope error: Upsert: Null key: record with NULL key in UPSERT source; "
                       r"to retract this error, produce a record upstream with a NULL key and NULL value \(topic"):
        session.sql("SELECT key, text FROM u", **MZ)
    rows = session.sql("SELECT key, text FROM u;").sort_values("KEY")  # ksql: logged, the rest read
    assert list(zip(rows.KEY, rows.TEXT)) == [("a", "3"), ("c", "4")]
    log = session.processing_log()
    assert log[log.TOPIC == name].MESSAGE.str.contains("record with NULL key in UPSERT source; to retract").sum() == 2


def test_envelope_none_key_without_value_is_an_error_and_empty_records_are_skipped(session, broker):
    name = f"mzn_{uuid.uuid4().hex[:8]}"
    produce(broker.bootstrap_servers, name, [
        {"key": b"a", "value": b"1", "partition": 0}, {"key": b"b", "value": None, "partition": 0},
        {"key": None, "value": None, "partition": 0}, {"key": None, "value": b"2", "partition": 0},
    ], create_partitions=1)
    session.sql(f"CREATE SOURCE n FROM KAFKA TOPIC '{name}' FORMAT TEXT INCLUDE OFFSET", **MZ)
    with pytest.raises(ks.StatementError, match=r"^Envelope error: Flat: Value not present for message \(topic"):
        session.sql('SELECT text, "offset" FROM n', **MZ)
    assert session.sql('SELECT text, "offset" FROM n;').to_dict("records") == [
        {"TEXT": "1", "offset": 0}, {"TEXT": "2", "offset": 3}]  # ksql logs it and goes on; "offset" keeps its case
    log = session.processing_log()
    assert list(log[log.TOPIC == name].OFFSET) == [1, 1]


def test_views_subscribe_helpers_and_both_dialects(session, topic):
    session.sql(f"""CREATE SOURCE hs FROM KAFKA TOPIC '{topic}' FORMAT JSON INCLUDE HEADERS, PARTITION""", **MZ)
    session.sql("""CREATE VIEW hv AS SELECT convert_from(headers_to_map(headers)['h'], 'utf8') AS h,
                   extractjsonfield(data, '$.id') AS id, partition FROM hs WHERE partition = 0""", **MZ)
    assert session.sql("SELECT * FROM hv", **MZ).to_dict("records") == [{"h": "one", "id": "1", "partition": 0}]
    handle = session.sql("SUBSCRIBE (SELECT id FROM hv)", **MZ)
    assert handle.is_active
    import time
    deadline = time.monotonic() + 60
    while len(handle.rows()) < 1 and time.monotonic() < deadline:
        time.sleep(0.2)
    handle.stop()
    assert list(handle.rows().id) == ["1"]
    # a ksql stream queried from Materialize and a Materialize source from ksql
    session.sql(f"CREATE STREAM ks_side (id INT, b STRING) WITH (kafka_topic='{topic}', value_format='JSON');")
    assert sorted(session.sql("SELECT id, b FROM ks_side", **MZ).columns) == ["b", "id"]
    assert list(session.sql("SELECT PARTITION FROM hs;").columns) == ["PARTITION"]
    shown = session.sql("SHOW SOURCES", **MZ)
    assert {"hs", "KS_SIDE"} <= set(shown.name)
    # a table is read from a source of a dialect whose tables come from sources, not from a ksql stream
    with pytest.raises(ks.StatementError, match=r"^ks_side is not a Kafka source created with CREATE SOURCE \.\.\. FROM KAFKA$"):
        session.sql("CREATE TABLE from_ksql FROM SOURCE ks_side FORMAT JSON", **MZ)
    session.sql("CREATE TABLE from_hs FROM SOURCE hs FORMAT JSON", **MZ)
    assert "from_hs" in set(session.sql("SHOW TABLES", **MZ).name)


AVRO_VALUE = {"type": "record", "name": "V", "fields": [{"name": "Id", "type": "long"}, {"name": "b", "type": "string"}]}
AVRO_KEY = {"type": "record", "name": "K", "fields": [{"name": "region", "type": "string"}, {"name": "n", "type": "int"}]}


def test_avro_inline_schema_reads_unframed_records(session, broker):
    import io

    import fastavro

    parsed = fastavro.parse_schema(AVRO_VALUE)
    name = f"mza_{uuid.uuid4().hex[:8]}"

    def encoded(record):
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed, record)
        return out.getvalue()

    produce(broker.bootstrap_servers, name, [{"key": b"k", "value": encoded({"Id": 7, "b": "seven"}), "partition": 0},
                                             {"key": b"k", "value": b"\x02", "partition": 0}], create_partitions=1)
    schema = json.dumps(AVRO_VALUE).replace("'", "''")
    session.sql(f"CREATE SOURCE av FROM KAFKA TOPIC '{name}' KEY FORMAT TEXT VALUE FORMAT AVRO USING SCHEMA "
                f"'{schema}' (CONFLUENT WIRE FORMAT = false) INCLUDE KEY", **MZ)
    with pytest.raises(ks.StatementError, match=r"\(topic .*, partition 0, offset 1\)$"):
        session.sql("SELECT * FROM av", **MZ)  # a truncated record puts the source in an error state
    assert session.sql("SELECT * FROM av;").to_dict("records") == [{"KEY": "k", "ID": 7, "B": "seven"}]
    log = session.processing_log()
    assert list(log[log.TOPIC == name].OFFSET) == [1, 1]  # logged by both queries


def test_avro_registry_record_key_flattened_or_one_column(session, broker):
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    url = broker.endpoints["schema.registry.url"]
    name = f"mzr_{uuid.uuid4().hex[:8]}"
    client = SchemaRegistryClient({"url": url})
    key_ser, value_ser = AvroSerializer(client, json.dumps(AVRO_KEY)), AvroSerializer(client, json.dumps(AVRO_VALUE))
    produce(broker.bootstrap_servers, name, [{
        "key": key_ser({"region": "eu", "n": 1}, SerializationContext(name, MessageField.KEY)),
        "value": value_ser({"Id": 1, "b": "x"}, SerializationContext(name, MessageField.VALUE)), "partition": 0}],
        create_partitions=1)
    session.sql(f"CREATE SOURCE flat FROM KAFKA TOPIC '{name}' FORMAT AVRO USING CONFLUENT SCHEMA REGISTRY '{url}' "
                "INCLUDE KEY", **MZ)
    assert session.sql("SELECT * FROM flat", **MZ).to_dict("records") == [{"region": "eu", "n": 1, "id": 1, "b": "x"}]
    session.sql(f"CREATE SOURCE whole FROM KAFKA TOPIC '{name}' FORMAT AVRO USING CONFLUENT SCHEMA REGISTRY '{url}' "
                "INCLUDE KEY AS k", **MZ)
    assert session.sql("SELECT (k).region AS r, b FROM whole", **MZ).to_dict("records") == [{"r": "eu", "b": "x"}]


def test_text_header_with_invalid_utf8_is_a_record_error_naming_it(session, topic):
    session.sql(f"CREATE SOURCE badh FROM KAFKA TOPIC '{topic}' FORMAT JSON INCLUDE HEADER 'bin' AS b", **MZ)
    rows = session.sql("SELECT b FROM badh;")  # ksql: the bad record is logged
    assert list(rows.B) == []  # and the other record has no header 'bin': in Materialize an error too
    log = session.processing_log()
    assert sorted(log[log.TOPIC == topic].MESSAGE) == [
        "A header with key 'bin' was not found in the message headers",
        "Found ill-formed byte sequence in header 'bin' that cannot be decoded as valid utf-8 "
        "(original bytes: [ff, 00])"]
