"""AVRO and JSON_SR end to end: bytes written by confluent-kafka's own serializers into the
embedded broker and registry, read back through the session (the real planner and runtime)."""

from __future__ import annotations

import datetime as dt
import json
import struct
import textwrap
import uuid
from decimal import Decimal

import pyarrow as pa
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

import kafkasql_magic as ks
from kafkasql_magic.dialects import ksql_sources as ddl
from kafkasql_magic.catalog import Catalog
from kafkasql_magic.errors import StatementError
from kafkasql_magic.formats import avro_decode as avro_format
from kafkasql_magic.formats import schema_registry as sr
from kafkasql_magic.kafka.producer import produce
from kafkasql_magic.engine.analysis import analyse
from kafkasql_magic.engine.build.query_spark import build
from kafkasql_magic.kafka.source import SCHEMA as RAW_SCHEMA
from kafkasql_magic.sql import ast, parse_statement


UTC = dt.timezone.utc


@pytest.fixture
def client(registry):
    return SchemaRegistryClient({"url": registry})


@pytest.fixture
def session(broker, spark, registry):
    s = ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark, schema_registry_url=registry, timeout=90)
    spark.conf.set("spark.sql.timeType.enabled", "true")  # TIME columns (belongs in sparkenv.REQUIRED_SQL_CONF)
    s.sql("SET 'auto.offset.reset'='earliest';")
    yield s
    s.stop()


@pytest.fixture
def topic(broker):
    name = f"sr_{uuid.uuid4().hex[:10]}"
    return name


def avro_ser(client, schema):
    return AvroSerializer(client, json.dumps(schema), conf={"auto.register.schemas": True})


def ctx(topic, role="value"):
    return SerializationContext(topic, MessageField.KEY if role == "key" else MessageField.VALUE)


def send(broker, topic, records, partitions=1):
    produce(broker.bootstrap_servers, topic, records, create_partitions=partitions)


def tuples(df, sort=0):
    """Result rows as tuples, NULLs as None (pandas shows NULL numbers as NaN), sorted by column `sort`."""
    clean = df.astype(object).where(df.notna(), None)
    return sorted(clean.itertuples(index=False, name=None), key=lambda r: r[sort])


def log_messages(session):
    return session.processing_log()["MESSAGE"].tolist()


ORDER = {
    "type": "record", "name": "Order", "namespace": "com.acme",
    "fields": [
        {"name": "orderId", "type": "long"},
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 8, "scale": 2}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "at", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "SHIPPED"]}},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "address", "type": {"type": "record", "name": "Address", "fields": [
            {"name": "City", "type": "string"}, {"name": "zip", "type": ["null", "int"]},
            {"name": "opens", "type": {"type": "int", "logicalType": "time-millis"}}]}},
        {"name": "lines", "type": {"type": "array", "items": {"type": "record", "name": "Line", "fields": [
            {"name": "sku", "type": "string"}, {"name": "qty", "type": "int"}]}}},
        {"name": "attrs", "type": {"type": "map", "values": "double"}},
        {"name": "ratio", "type": "float"},
    ],
}

ORDER_COLUMNS = """(ID BIGINT KEY, ORDERID BIGINT, AMOUNT DECIMAL(8, 2), DAY DATE, AT TIME, TS TIMESTAMP,
    STATUS STRING, NOTE STRING, ADDRESS STRUCT<CITY STRING, ZIP INT, COUNTRY STRING, OPENS TIME>,
    LINES ARRAY<STRUCT<SKU STRING, QTY BIGINT>>, ATTRS MAP<STRING, DOUBLE>, RATIO DOUBLE)"""


def order(i):
    return {
        "orderId": 100 + i, "amount": Decimal("12.34") * (i + 1), "day": dt.date(2024, 2, 29),
        "at": dt.time(13, 45, 30, 123000), "ts": dt.datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=UTC),
        "status": "SHIPPED" if i % 2 else "NEW", "note": None if i % 2 else f"note {i}",
        "address": {"City": f"Paris {i}", "zip": None if i == 1 else 75000 + i, "opens": dt.time(9, i)},
        "lines": [{"sku": f"sku-{i}-{j}", "qty": j} for j in range(i + 1)],
        "attrs": {"w": i * 0.5}, "ratio": 0.25,
    }


def test_avro_values_with_logical_nested_and_nullable_types_and_an_anonymous_key(session, broker, client, topic):
    key_ser = avro_ser(client, "long")
    value_ser = avro_ser(client, ORDER)
    send(broker, topic, [{"key": key_ser(i, ctx(topic, "key")), "value": value_ser(order(i), ctx(topic))}
                         for i in range(3)])
    session.sql(f"CREATE STREAM orders {ORDER_COLUMNS} WITH (kafka_topic='{topic}', format='AVRO');")
    df = session.sql("SELECT * FROM orders EMIT CHANGES LIMIT 3;")
    rows = df.sort_values("ID").to_dict("records")
    assert [r["ID"] for r in rows] == [0, 1, 2]
    first, second = rows[0], rows[1]
    assert first["ORDERID"] == 100 and first["AMOUNT"] == Decimal("12.34") and second["AMOUNT"] == Decimal("24.68")
    assert first["DAY"] == dt.date(2024, 2, 29)
    assert first["AT"] == dt.time(13, 45, 30, 123000)
    assert first["TS"].to_pydatetime() == dt.datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
    assert (first["STATUS"], second["STATUS"]) == ("NEW", "SHIPPED")
    assert (first["NOTE"], second["NOTE"]) == ("note 0", None)
    assert first["ADDRESS"] == {"CITY": "Paris 0", "ZIP": 75000, "COUNTRY": None, "OPENS": dt.time(9, 0)}
    assert second["ADDRESS"]["ZIP"] is None
    assert [dict(x) for x in rows[2]["LINES"]] == [{"SKU": f"sku-2-{j}", "QTY": j} for j in range(3)]
    assert dict(second["ATTRS"]) == {"w": 0.5} and first["RATIO"] == 0.25
    assert session.processing_log().empty


KEY = {"type": "record", "name": "OrderKey", "fields": [
    {"name": "tenant", "type": "string"}, {"name": "ID", "type": "int"}, {"name": "active", "type": "boolean"},
    {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": 1}}]}


def test_record_key_with_several_key_columns_and_case_insensitive_names(session, broker, client, topic):
    key_ser = avro_ser(client, KEY)
    value_ser = avro_ser(client, {"type": "record", "name": "V", "fields": [{"name": "Item", "type": "string"}]})
    send(broker, topic, [{"key": key_ser({"tenant": f"t{i}", "ID": i, "active": i == 1, "price": Decimal("1.5")},
                                         ctx(topic, "key")),
                          "value": value_ser({"Item": f"item {i}"}, ctx(topic))} for i in range(2)])
    session.sql(f"CREATE STREAM k (Tenant STRING KEY, `ID` INT KEY, ACTIVE BOOLEAN KEY, PRICE DECIMAL(4, 1) KEY, "
                f"ITEM STRING) WITH (kafka_topic='{topic}', key_format='AVRO', value_format='AVRO');")
    df = session.sql("SELECT * FROM k EMIT CHANGES LIMIT 2;")
    assert tuples(df) == [
        ("t0", 0, False, Decimal("1.5"), "item 0"), ("t1", 1, True, Decimal("1.5"), "item 1")]


V1 = {"type": "record", "name": "User", "fields": [{"name": "id", "type": "int"}, {"name": "name", "type": "string"}]}
V2 = {"type": "record", "name": "User", "fields": [  # reordered, one field added
    {"name": "email", "type": ["null", "string"], "default": None},
    {"name": "name", "type": "string"}, {"name": "id", "type": "int"},
    {"name": "score", "type": "long", "default": 0}]}


def test_records_of_a_newer_schema_version_are_projected_onto_the_declared_columns(session, broker, client, topic):
    v1, v2 = avro_ser(client, V1), avro_ser(client, V2)
    send(broker, topic, [
        {"key": b"a", "value": v1({"id": 1, "name": "ann"}, ctx(topic))},
        {"key": b"b", "value": v2({"id": 2, "name": "bob", "email": "b@x", "score": 7}, ctx(topic))},
        {"key": b"c", "value": v1({"id": 3, "name": "cy"}, ctx(topic))},
    ])
    assert client.get_versions(f"{topic}-value") == [1, 2]
    session.sql(f"CREATE STREAM u (K STRING KEY, ID INT, NAME STRING, SCORE BIGINT) "
                f"WITH (kafka_topic='{topic}', key_format='KAFKA', value_format='AVRO');")
    df = session.sql("SELECT * FROM u EMIT CHANGES LIMIT 3;")
    assert tuples(df, sort=1) == [
        ("a", 1, "ann", None), ("b", 2, "bob", 7), ("c", 3, "cy", None)]


def test_schema_references_are_resolved(session, broker, client, topic):
    from confluent_kafka.schema_registry import Schema, SchemaReference

    address = {"type": "record", "name": "Address", "namespace": "com.acme",
               "fields": [{"name": "city", "type": "string"}]}
    person = {"type": "record", "name": "Person", "namespace": "com.acme",
              "fields": [{"name": "name", "type": "string"}, {"name": "home", "type": "com.acme.Address"}]}
    client.register_schema(f"{topic}-address", Schema(json.dumps(address), "AVRO"))
    refs = [SchemaReference("com.acme.Address", f"{topic}-address", 1)]
    ser = AvroSerializer(client, Schema(json.dumps(person), "AVRO", refs), conf={"auto.register.schemas": True})
    send(broker, topic, [{"value": ser({"name": "Ann", "home": {"city": "Oslo"}}, ctx(topic))}])
    session.sql(f"CREATE STREAM refs (NAME STRING, HOME STRUCT<CITY STRING>) "
                f"WITH (kafka_topic='{topic}', value_format='AVRO');")
    assert tuples(session.sql("SELECT NAME, HOME->CITY AS CITY FROM refs;")) == [("Ann", "Oslo")]


def test_bad_bytes_go_to_the_processing_log_and_the_good_records_around_them_are_kept(
        session, broker, client, topic):
    ser = avro_ser(client, V1)
    good = [ser({"id": i, "name": f"n{i}"}, ctx(topic)) for i in range(4)]
    schema_id = struct.unpack(">I", good[0][1:5])[0]
    send(broker, topic, [{"value": v} for v in [
        good[0],
        good[1][:-2],                                   # truncated Avro
        good[2],
        b'{"id": 3}',                                   # plain JSON: wrong magic byte
        sr.frame(schema_id + 9999, good[3][5:]),        # unknown schema id
        None,                                           # tombstone: skipped (as ksqlDB), no error
        good[3],
    ]])
    session.sql(f"CREATE STREAM bad (ID INT, NAME STRING) WITH (kafka_topic='{topic}', value_format='AVRO');")
    df = session.sql("SELECT ID, NAME, ROWOFFSET AS O FROM bad EMIT CHANGES LIMIT 3;")
    assert tuples(df, sort=2) == [(0, "n0", 0), (2, "n2", 2), (3, "n3", 6)]
    log = session.processing_log().sort_values("OFFSET")
    assert log["OFFSET"].tolist() == [1, 3, 4]
    truncated, magic, unknown = log["MESSAGE"].tolist()
    assert truncated.startswith(f"Failed to deserialize value: Error deserializing AVRO message for id {schema_id}")
    assert magic == "Failed to deserialize value: Unknown magic byte! (got 0x7b, expected 0x00)"
    assert unknown.startswith(f"Failed to deserialize value: Schema id {schema_id + 9999} not found in the schema registry")


def test_a_schema_that_does_not_fit_the_declared_columns_is_a_per_record_error(session, broker, client, topic):
    ser = avro_ser(client, {"type": "record", "name": "W", "fields": [
        {"name": "id", "type": "string"}, {"name": "u", "type": ["int", "string"]}]})
    send(broker, topic, [{"value": ser({"id": "x", "u": 1}, ctx(topic))}])
    session.sql(f"CREATE STREAM w (ID INT) WITH (kafka_topic='{topic}', value_format='AVRO');")
    session.sql(f"CREATE STREAM w2 (U STRING) WITH (kafka_topic='{topic}', value_format='AVRO');")
    assert session.sql("SELECT * FROM w;").empty and session.sql("SELECT * FROM w2;").empty
    first, second = log_messages(session)
    assert "does not match the declared columns: Avro type string in field `ID` cannot be read as INTEGER" in first
    assert "Avro union [int, string] in field `U` is not supported" in second


def test_json_sr_keys_and_values_written_by_the_json_serializer(session, broker, client, topic):
    value_schema = {"type": "object", "properties": {
        "Id": {"type": "integer"}, "name": {"type": "string"}, "price": {"type": "number"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "addr": {"type": "object", "properties": {"city": {"type": "string"}}}}}
    key_ser = JSONSerializer(json.dumps({"type": "integer"}), client)
    value_ser = JSONSerializer(json.dumps(value_schema), client)
    values = [{"Id": i, "name": f"n{i}", "price": 1.5 * i, "tags": ["a", f"t{i}"], "addr": {"city": f"c{i}"}}
              for i in range(3)]
    send(broker, topic, [{"key": key_ser(i, ctx(topic, "key")), "value": value_ser(v, ctx(topic))}
                         for i, v in enumerate(values)]
         + [{"key": key_ser(9, ctx(topic, "key")), "value": b'{"Id": 9}'}])  # not framed
    session.sql(f"CREATE STREAM j (K INT KEY, ID INT, NAME STRING, PRICE DECIMAL(4, 2), TAGS ARRAY<STRING>, "
                f"ADDR STRUCT<CITY STRING>) WITH (kafka_topic='{topic}', format='JSON_SR');")
    df = session.sql("SELECT * FROM j;")
    assert tuples(df) == [
        (i, i, f"n{i}", Decimal(str(1.5 * i)).quantize(Decimal("0.01")), ["a", f"t{i}"], {"CITY": f"c{i}"})
        for i in range(3)]
    assert log_messages(session) == ["Failed to deserialize value: Unknown magic byte! (got 0x7b, expected 0x00)"]


def test_json_sr_single_key_column_from_a_record_key(session, broker, client, topic):
    key_ser = JSONSerializer(json.dumps({"type": "object", "properties": {"ID": {"type": "integer"}}}), client)
    value_ser = JSONSerializer(json.dumps({"type": "object", "properties": {"v": {"type": "string"}}}), client)
    send(broker, topic, [{"key": key_ser({"ID": 5}, ctx(topic, "key")), "value": value_ser({"v": "x"}, ctx(topic))}])
    session.sql(f"CREATE STREAM jk (id BIGINT KEY, v STRING) WITH (kafka_topic='{topic}', format='JSON_SR');")
    assert tuples(session.sql("SELECT * FROM jk;")) == [(5, "x")]


def test_insert_values_writes_what_the_confluent_deserializers_read(session, broker, client, topic):
    session.sql(f"CREATE STREAM ins (ID INT KEY, NAME STRING, AMOUNT DECIMAL(6, 2), DAY DATE, TS TIMESTAMP) "
                f"WITH (kafka_topic='{topic}', partitions=1, format='AVRO');")
    session.sql("INSERT INTO ins (ID, NAME, AMOUNT, DAY, TS) VALUES (7, 'pen', 3.5, '2024-05-06', 1700000000000);")
    assert tuples(session.sql("SELECT * FROM ins;"))[0][:4] == (7, "pen", Decimal("3.50"), dt.date(2024, 5, 6))
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "x"})
    consumer.assign([TopicPartition(topic, 0, 0)])
    msg = consumer.consume(1, 10)[0]
    consumer.close()
    assert AvroDeserializer(client)(msg.key(), ctx(topic, "key")) == 7
    assert AvroDeserializer(client)(msg.value(), ctx(topic)) == {
        "NAME": "pen", "AMOUNT": Decimal("3.50"), "DAY": dt.date(2024, 5, 6),
        "TS": dt.datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)}
    assert client.get_latest_version(f"{topic}-value").schema.schema_type == "AVRO"

    jtopic = topic + "_j"
    session.sql(f"CREATE STREAM insj (ID INT KEY, NAME STRING, TAGS ARRAY<STRING>) "
                f"WITH (kafka_topic='{jtopic}', partitions=1, format='JSON_SR');")
    session.sql("INSERT INTO insj (ID, NAME) VALUES (8, 'ink');")
    assert tuples(session.sql("SELECT * FROM insj;")) == [(8, "ink", None)]
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "y"})
    consumer.assign([TopicPartition(jtopic, 0, 0)])
    msg = consumer.consume(1, 10)[0]
    consumer.close()
    assert JSONDeserializer(None, schema_registry_client=client)(msg.value(), ctx(jtopic)) == \
        {"NAME": "ink", "TAGS": None}


def test_insert_values_uses_the_registered_schema_when_it_fits(session, broker, client, topic):
    send(broker, topic, [{"value": avro_ser(client, V1)({"id": 1, "name": "ann"}, ctx(topic))}])
    session.sql(f"CREATE STREAM reg (ID INT, NAME STRING) WITH (kafka_topic='{topic}', value_format='AVRO');")
    session.sql("INSERT INTO reg (ID, NAME) VALUES (2, 'bob');")
    assert client.get_versions(f"{topic}-value") == [1]
    assert tuples(session.sql("SELECT * FROM reg;")) == [(1, "ann"), (2, "bob")]


def test_avro_needs_a_registry_url(broker, spark, topic):
    s = ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark)
    with pytest.raises(StatementError, match=r"AVRO format requires a schema registry URL: "
                                             r"connect\(\.\.\., schema_registry_url=\.\.\.\) or %%kstream --registry URL"):
        s.sql(f"CREATE STREAM nr (ID INT) WITH (kafka_topic='{topic}', partitions=1, value_format='AVRO');")




def test_the_decoding_udf_runs_once_per_row_even_with_a_where_clause(spark, registry):
    catalog = Catalog()
    create = ("CREATE STREAM p (K INT KEY, A INT, B STRING, C DOUBLE) "
              "WITH (kafka_topic='t', key_format='AVRO', value_format='AVRO');")
    catalog.add(ddl.source_from_create(parse_statement(create), {ddl.SCHEMA_REGISTRY_URL: registry}))
    raw = spark.createDataFrame([], RAW_SCHEMA)
    plan = analyse(parse_statement("SELECT A + 1 AS X, B, C, K FROM p WHERE A > 1 AND C < 2 EMIT CHANGES;"),
                   catalog)
    physical = build(plan, raw, read=None).frame._jdf.queryExecution().executedPlan().toString()
    assert physical.count("ArrowEvalPython") == 1, physical
    # one UDF call per format (key and value), each evaluated once
    assert physical.count("decode_avro(") == 2, physical


def test_registry_down_stops_the_batch_rather_than_log_its_records():
    """A registry that does not answer says nothing about the records: they are not logged as
    undecodable; the batch waits, and past the outage limit it fails with the reason."""
    layout = avro_format.Layout((("A", ast.Type("INT")),), False, "http://127.0.0.1:9",
                                registry={sr.OUTAGE_TIMEOUT: "0"})
    with pytest.raises(sr.RegistryUnavailable, match="Schema registry at http://127.0.0.1:9 did not answer"):
        avro_format.decode_batch(pa.array([sr.frame(1, b"\x02"), None], pa.binary()), layout)


CLUSTER_SCRIPT = textwrap.dedent("""
    import json, sys
    import kafkasql_magic as ks
    bootstrap, registry, topic = sys.argv[1:4]
    s = ks.connect(bootstrap_servers=bootstrap, schema_registry_url=registry, spark=spark)
    s.sql(f"CREATE STREAM c (ID INT, NAME STRING) WITH (kafka_topic='{topic}', value_format='AVRO');")
    df = s.sql("SELECT ID, NAME FROM c;")
    print("RESULT " + json.dumps({"rows": sorted(map(list, df.itertuples(index=False, name=None))),
                                  "errors": s.processing_log()["MESSAGE"].tolist()}))
""")


@pytest.mark.cluster
def test_avro_decodes_on_executor_jvms(broker, client, registry, topic, executor_cluster):
    ser = avro_ser(client, V1)
    send(broker, topic, [{"value": ser({"id": i, "name": f"n{i}"}, ctx(topic)), "partition": i % 2}
                         for i in range(40)] + [{"value": b"junk", "partition": 0}], partitions=2)
    out = executor_cluster(CLUSTER_SCRIPT, broker.bootstrap_servers, registry, topic, timeout=300)
    lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, f"no result (rc={out.returncode})\n{out.stderr[-3000:]}"
    result = json.loads(lines[-1][len("RESULT "):])
    assert result["rows"] == [[i, f"n{i}"] for i in range(40)]
    assert result["errors"] == ["Failed to deserialize value: Unknown magic byte! (got 0x6a, expected 0x00)"]
