"""Materialize's FORMAT PROTOBUF on the real broker and registry: a FileDescriptorSet inline or in
a file, and a registry's latest schema (framed records, ENVELOPE UPSERT, inline errors), read
back row by row with Materialize's defaults, records, lists and enum names."""

from __future__ import annotations

import pandas
import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from google.protobuf import message_factory

import kafkasql_magic as ks
from kafkasql_magic.formats import protobuf_descriptors as pd
from kafkasql_magic.kafka.producer import produce

MZ = {"dialect": "materialize"}

ORDER = """
syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
message Order {
  int32 id = 1;
  string item = 2;
  Status status = 3;
  repeated string tags = 4;
  Address address = 5;
  google.protobuf.Timestamp at = 6;
  enum Status { NEW = 0; SHIPPED = 1; }
  message Address { string city = 1; int64 zip = 2; }
}
"""


def descriptor_set(text: str, message: str = "shop.Order") -> bytes:
    """What `protoc --include_imports --descriptor_set_out` writes for `text`."""
    return pd.compiled_set(text, (), message)[0]


def plain(rows) -> list[tuple]:
    """The rows as tuples, a missing value as None (pandas shows an integer column's NULL as NA)."""
    return [tuple(None if v is pandas.NA else v for v in r) for r in rows.itertuples(index=False)]


def order_class(data: bytes):
    return message_factory.GetMessageClass(pd.message_of(data, "shop.Order"))


def orders(cls) -> list[bytes]:
    full = cls(id=1, item="tea", status=1, tags=["hot", "green"], address=cls.Address(city="Oslo", zip=150))
    full.at.seconds = 1_700_000_000
    return [full.SerializeToString(), cls(id=2).SerializeToString()]


def test_an_inline_descriptor_set_gives_materialize_columns_and_values(session, broker, new_topic):
    data = descriptor_set(ORDER)
    topic = new_topic(1)
    produce(broker.bootstrap_servers, topic, [{"value": v} for v in orders(order_class(data))])
    session.sql(f"CREATE SOURCE orders FROM KAFKA TOPIC '{topic}' "
                f"FORMAT PROTOBUF MESSAGE '.shop.Order' USING SCHEMA '\\x{data.hex()}'", **MZ)
    shown = session.sql("SHOW COLUMNS FROM orders", **MZ)
    assert list(zip(shown.name, shown.nullable, shown.type)) == [
        ("id", False, "int4"), ("item", False, "text"), ("status", False, "text"), ("tags", False, "list"),
        ("address", True, "record"), ("at", True, "record")]
    rows = session.sql("SELECT id, item, status, tags, (address).city AS city, (address).zip AS zip, "
                       "(at).seconds AS secs FROM orders ORDER BY id", **MZ)
    assert plain(rows) == [
        (1, "tea", "SHIPPED", ["hot", "green"], "Oslo", 150, 1_700_000_000),
        (2, "", "NEW", [], None, None, None)]


def test_a_descriptor_set_file_is_read_when_the_source_is_made(session, broker, new_topic, tmp_path):
    data = descriptor_set(ORDER)
    path = tmp_path / "order.pb"
    path.write_bytes(data)
    topic = new_topic(1)
    produce(broker.bootstrap_servers, topic, [{"value": v} for v in orders(order_class(data))])
    session.sql(f"CREATE SOURCE order_file FROM KAFKA TOPIC '{topic}' "
                f"FORMAT PROTOBUF MESSAGE 'shop.Order' USING SCHEMA FILE '{path}'", **MZ)
    path.unlink()  # the set is the source's own from now on
    rows = session.sql("SELECT id, status FROM order_file ORDER BY id", **MZ)
    assert plain(rows) == [(1, "SHIPPED"), (2, "NEW")]
    with pytest.raises(ks.StatementError, match="cannot read the PROTOBUF schema file"):
        session.sql(f"CREATE SOURCE order_gone FROM KAFKA TOPIC '{topic}' "
                    f"FORMAT PROTOBUF MESSAGE 'shop.Order' USING SCHEMA FILE '{path}'", **MZ)
    with pytest.raises(ks.StatementError, match='^protobuf message "shop.Nope" not found in file descriptor set$'):
        session.sql(f"CREATE SOURCE order_nope FROM KAFKA TOPIC '{topic}' "
                    f"FORMAT PROTOBUF MESSAGE 'shop.Nope' USING SCHEMA '\\x{data.hex()}'", **MZ)


def test_the_registry_latest_schema_reads_framed_records_upserted_by_key_with_errors_inline(
        broker, spark, registry, new_topic):
    session = ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark, schema_registry_url=registry,
                         timeout=90)
    session.sql("SET 'auto.offset.reset'='earliest';")
    topic = new_topic(1)
    schema_id = SchemaRegistryClient({"url": registry}).register_schema(f"{topic}-value", Schema(ORDER, "PROTOBUF"))
    cls = order_class(descriptor_set(ORDER))
    header = b"\x00" + schema_id.to_bytes(4, "big") + b"\x00"
    first, second = orders(cls)
    produce(broker.bootstrap_servers, topic, [
        {"key": "a", "value": header + first}, {"key": "b", "value": header + second},
        {"key": "b", "value": header + b"\xff"}, {"key": "c", "value": b"\x07nope"}])
    try:
        session.sql(f"CREATE SOURCE order_up FROM KAFKA TOPIC '{topic}' KEY FORMAT TEXT "
                    f"VALUE FORMAT PROTOBUF USING CONFLUENT SCHEMA REGISTRY '{registry}' INCLUDE KEY "
                    "ENVELOPE UPSERT (VALUE DECODING ERRORS = INLINE)", **MZ)
        rows = session.sql("SELECT key, id, item, (error).description AS e FROM order_up ORDER BY key", **MZ)
        assert [r[:3] for r in plain(rows)] == [("a", 1, "tea"), ("b", None, None), ("c", None, None)]
        assert rows.e[0] is None
        assert rows.e[1].startswith("protobuf deserialization error: failed to decode Protobuf message: ")
        assert rows.e[2] == ("protobuf deserialization error: wrong Confluent-style protobuf serialization magic: "
                             'expected 0, got 7 (original text: \x07nope, original bytes: "076e6f7065")')
        shown = session.sql("SHOW COLUMNS FROM order_up", **MZ)
        assert list(shown.name) == ["key", "error", "id", "item", "status", "tags", "address", "at"]
    finally:
        session.stop()


def test_a_map_field_is_refused_when_the_source_is_made(session, new_topic):
    data = descriptor_set('syntax = "proto3";\nmessage M { map<string, int32> m = 1; }', "M")
    with pytest.raises(ks.StatementError, match="^Protobuf map fields are not supported$"):
        session.sql(f"CREATE SOURCE maps FROM KAFKA TOPIC '{new_topic(1)}' "
                    f"FORMAT PROTOBUF MESSAGE 'M' USING SCHEMA '\\x{data.hex()}'", **MZ)
