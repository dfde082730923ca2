"""PROTOBUF and PROTOBUF_NOSR end to end: messages written by confluent-kafka's own
ProtobufSerializer (message indexes, references to well-known types, base64 descriptors in the
registry) and by hand-registered `.proto` text, read back through the session."""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

import kafkasql_magic as ks
from kafkasql_magic.formats import protobuf_schema
from kafkasql_magic.formats import schema_registry as sr
from kafkasql_magic.kafka.producer import produce

UTC = dt.timezone.utc

ORDER_PROTO = """
syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";
import "google/type/date.proto";
import "confluent/type/decimal.proto";

message Ping { string at = 1; }
message Order {
  int32 id = 1;
  string item = 2;
  Address address = 3;
  repeated Line lines = 4;
  map<string, double> attrs = 5;
  google.protobuf.Timestamp ts = 6;
  google.type.Date day = 7;
  Status status = 8;
  oneof payment { string card = 9; int64 voucher = 10; }
  google.protobuf.StringValue note = 11;
  uint32 qty = 12;
  confluent.type.Decimal amount = 13;
  message Address { string city = 1; int32 zip = 2; }
  message Line { string sku = 1; int32 qty = 2; }
  enum Status { NEW = 0; SHIPPED = 1; }
}
"""


@pytest.fixture
def client(registry):
    return SchemaRegistryClient({"url": registry})


@pytest.fixture
def session(broker, spark, registry):
    s = ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark, schema_registry_url=registry, timeout=90)
    s.sql("SET 'auto.offset.reset'='earliest';")
    yield s
    s.stop()


@pytest.fixture
def topic():
    return f"pb_{uuid.uuid4().hex[:10]}"


def ctx(topic, role="value"):
    return SerializationContext(topic, MessageField.KEY if role == "key" else MessageField.VALUE)


def classes(text):
    schema = protobuf_schema.Schema(text)
    return {d.name: schema.message_class([i]) for i, d in enumerate(schema.file.message_types_by_name.values())}


def order(cls, i):
    m = cls(id=i, item=f"item {i}", status=i % 2, qty=4_000_000_000 + i)
    m.address.city, m.address.zip = f"Paris {i}", 75000 + i
    for j in range(i):
        m.lines.add(sku=f"sku-{i}-{j}", qty=j)
    m.attrs["w"] = 0.5
    m.ts.seconds, m.ts.nanos = 1704164645 + i, 678_000_000
    m.day.year, m.day.month, m.day.day = 2024, 2, 29
    if i == 0:
        m.card = "visa"
        m.note.value = "fragile"
        m.amount.value, m.amount.precision, m.amount.scale = (1234).to_bytes(2, "big", signed=True), 4, 2
    else:
        m.voucher = 77
    return m


def tuples(df, sort=0):
    clean = df.astype(object).where(df.notna(), None)
    return sorted(clean.itertuples(index=False, name=None), key=lambda r: r[sort])


def test_messages_from_the_confluent_serializer_with_nested_oneof_and_well_known_types(
        session, broker, client, topic):
    cls = classes(ORDER_PROTO)["Order"]  # the second message: index [1] in the framing
    ser = ProtobufSerializer(cls, client, conf={"auto.register.schemas": True})
    key_ser = ProtobufSerializer(classes('syntax = "proto3"; message K { string id = 1; }')["K"], client,
                                 conf={"auto.register.schemas": True})
    key_cls = key_ser._msg_class
    records = [{"key": key_ser(key_cls(id=f"k{i}"), ctx(topic, "key")), "value": ser(order(cls, i), ctx(topic))}
               for i in range(3)]
    assert records[0]["value"][5] != 0  # message indexes [1], not the single 0 byte
    produce(broker.bootstrap_servers, topic, records, create_partitions=1)
    session.sql(f"""CREATE STREAM orders (K STRING KEY, ID INT, ITEM STRING, ADDRESS STRUCT<CITY STRING, ZIP INT>,
        LINES ARRAY<STRUCT<SKU STRING, QTY INT>>, ATTRS MAP<STRING, DOUBLE>, TS TIMESTAMP, DAY DATE,
        STATUS STRING, PAYMENT_0 STRUCT<CARD STRING, VOUCHER BIGINT>, NOTE STRING, QTY BIGINT,
        AMOUNT DECIMAL(4, 2))
        WITH (kafka_topic='{topic}', key_format='PROTOBUF', value_format='PROTOBUF');""")
    rows = session.sql("SELECT * FROM orders EMIT CHANGES LIMIT 3;").sort_values("ID").to_dict("records")
    first, second = rows[0], rows[1]
    assert [r["K"] for r in rows] == ["k0", "k1", "k2"]
    assert first["ITEM"] == "item 0" and first["ADDRESS"] == {"CITY": "Paris 0", "ZIP": 75000}
    assert [dict(x) for x in rows[2]["LINES"]] == [{"SKU": "sku-2-0", "QTY": 0}, {"SKU": "sku-2-1", "QTY": 1}]
    assert dict(first["ATTRS"]) == {"w": 0.5}
    assert first["TS"].to_pydatetime() == dt.datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
    assert first["DAY"] == dt.date(2024, 2, 29)
    assert (first["STATUS"], second["STATUS"]) == ("NEW", "SHIPPED")
    assert first["PAYMENT_0"] == {"CARD": "visa", "VOUCHER": None}
    assert second["PAYMENT_0"] == {"CARD": None, "VOUCHER": 77}
    assert (first["NOTE"], second["NOTE"]) == ("fragile", None)
    assert first["QTY"] == 4_000_000_000
    assert first["AMOUNT"] == Decimal("12.34") and second["AMOUNT"] is None
    assert session.processing_log().empty


def test_columns_are_inferred_from_a_registered_proto(session, broker, client, topic):
    cls = classes(ORDER_PROTO)["Order"]
    ser = ProtobufSerializer(cls, client, conf={"auto.register.schemas": True})
    produce(broker.bootstrap_servers, topic, [{"value": ser(order(cls, 1), ctx(topic))}], create_partitions=1)
    # The serializer registered its file; inference reads the file's first message, so register
    # a text schema whose first message is the one written.
    text = ORDER_PROTO.replace("message Ping { string at = 1; }\n", "")
    client.register_schema(f"{topic}-value", Schema(text, "PROTOBUF"))
    session.sql(f"CREATE STREAM inferred WITH (kafka_topic='{topic}', value_format='PROTOBUF');")
    described = session.sql("DESCRIBE inferred;")
    columns = dict(zip(described.iloc[:, 0], described.iloc[:, 1]))
    assert columns["ID"] == "INTEGER" and columns["QTY"] == "BIGINT" and columns["TS"] == "TIMESTAMP"
    assert columns["PAYMENT_0"] == "STRUCT<`CARD` STRING, `VOUCHER` BIGINT>"
    assert columns["NOTE"] == "STRUCT<`VALUE` STRING>"
    assert columns["ATTRS"] == "MAP<STRING, DOUBLE>"
    rows = session.sql("SELECT ID, ADDRESS->CITY AS CITY, NOTE FROM inferred;")
    assert tuples(rows) == [(1, "Paris 1", None)]


def test_bad_bytes_and_unknown_indexes_go_to_the_processing_log(session, broker, client, topic):
    cls = classes('syntax = "proto3"; message V { int32 id = 1; string name = 2; }')["V"]
    ser = ProtobufSerializer(cls, client, conf={"auto.register.schemas": True})
    good = [ser(cls(id=i, name=f"n{i}"), ctx(topic)) for i in range(3)]
    schema_id = int.from_bytes(good[0][1:5], "big")
    produce(broker.bootstrap_servers, topic, [{"value": v} for v in [
        good[0],
        b'{"id": 1}',                                  # not framed
        sr.frame(schema_id, b"\x02\x0a" + good[1][6:]),  # indexes [5]: no such message
        sr.frame(schema_id, b"\x00\xff\xff"),          # not a message
        good[2],
    ]], create_partitions=1)
    session.sql(f"CREATE STREAM v (ID INT, NAME STRING) WITH (kafka_topic='{topic}', value_format='PROTOBUF');")
    assert tuples(session.sql("SELECT ID, NAME FROM v;")) == [(0, "n0"), (2, "n2")]
    log = session.processing_log().sort_values("OFFSET")
    assert log["OFFSET"].tolist() == [1, 2, 3]
    magic, index, garbage = log["MESSAGE"].tolist()
    assert magic == "Failed to deserialize value: Unknown magic byte! (got 0x7b, expected 0x00)"
    assert "Message index [5] does not exist" in index
    assert garbage.startswith(f"Failed to deserialize value: Error deserializing PROTOBUF message for id {schema_id}")


def test_insert_values_writes_what_the_confluent_deserializer_reads(session, broker, client, topic):
    session.sql(f"CREATE STREAM w (ID INT KEY, NAME STRING, TAGS ARRAY<STRING>, AT TIMESTAMP, "
                f"POS STRUCT<X DOUBLE>) WITH (kafka_topic='{topic}', partitions=1, "
                f"key_format='PROTOBUF', value_format='PROTOBUF');")
    session.sql("INSERT INTO w (ID, NAME) VALUES (7, 'ann');")
    df = session.sql("SELECT * FROM w;")
    assert tuples(df) == [(7, "ann", [], None, None)]  # protobuf has no NULL list: an empty one
    assert session.processing_log().empty
    latest = client.get_latest_version(f"{topic}-value").schema
    assert latest.schema_type == "PROTOBUF"


def test_insert_values_into_an_inferred_stream_writes_with_the_registered_schema(session, client, topic):
    proto = ORDER_PROTO.replace("message Ping { string at = 1; }\n", "")
    schema_id = client.register_schema(f"{topic}-value", Schema(proto, "PROTOBUF"))
    session.sql(f"CREATE STREAM o WITH (kafka_topic='{topic}', partitions=1, value_format='PROTOBUF');")
    session.sql("INSERT INTO o (ID, STATUS, TS) VALUES (5, 'SHIPPED', 1000);")
    assert client.get_versions(f"{topic}-value") == [1]  # no schema of our own registered
    rows = session.sql("SELECT ID, STATUS, PAYMENT_0, TS FROM o;").to_dict("records")
    assert [(r["ID"], r["STATUS"], r["PAYMENT_0"]) for r in rows] == [(5, "SHIPPED", {"CARD": None, "VOUCHER": None})]
    assert rows[0]["TS"].to_pydatetime() == dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC)
    assert schema_id == client.get_latest_version(f"{topic}-value").schema_id


def test_protobuf_nosr_needs_no_registry_and_reads_the_declared_message(broker, spark, topic):
    s = ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark, timeout=90)
    s.sql("SET 'auto.offset.reset'='earliest';")
    try:
        s.sql(f"CREATE STREAM n (ID BIGINT KEY, NAME STRING, SCORE DOUBLE) WITH (kafka_topic='{topic}', "
              f"partitions=1, key_format='PROTOBUF_NOSR', value_format='PROTOBUF_NOSR');")
        s.sql("INSERT INTO n (ID, NAME, SCORE) VALUES (1, 'x', 2.5);")
        cls = classes('syntax = "proto3"; message ConnectDefault1 { string NAME = 1; double SCORE = 2; }')[
            "ConnectDefault1"]
        produce(broker.bootstrap_servers, topic, [{"value": cls(NAME="y", SCORE=3.0).SerializeToString()},
                                                  {"value": b"\xff\xff"}])
        assert tuples(s.sql("SELECT NAME, SCORE FROM n;")) == [("x", 2.5), ("y", 3.0)]
        assert len(s.processing_log()) == 1
    finally:
        s.stop()


def test_the_confluent_deserializer_reads_our_protobuf(session, broker, client, topic):
    session.sql(f"CREATE STREAM d (ID INT, NAME STRING) WITH (kafka_topic='{topic}', partitions=1, "
                f"value_format='PROTOBUF');")
    session.sql("INSERT INTO d (ID, NAME) VALUES (3, 'c');")
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": topic,
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    msg = None
    for _ in range(30):
        msg = consumer.poll(1)
        if msg is not None and not msg.error():
            break
    consumer.close()
    schema = protobuf_schema.Schema(client.get_latest_version(f"{topic}-value").schema.schema_str)
    value = ProtobufDeserializer(schema.message_class([0]), {"use.deprecated.format": False})(msg.value(), ctx(topic))
    assert (value.ID, value.NAME) == (3, "c")
