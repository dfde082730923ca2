"""Materialize's secrets and connections on the real broker and a registry that needs basic auth:
a source reads the cluster and the registry its connections name, not the session's, and no
secret shows anywhere."""

from __future__ import annotations

import json
import time
import uuid

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

import kafkasql_magic as ks
from kafkasql_magic.kafka.peek import fetch_records
from kafkasql_magic.kafka.producer import produce
from kafkasql_magic.registry import RegistryServer

MZ = {"dialect": "materialize"}
PASSWORD = "Conn-Pw-" + uuid.uuid4().hex[:8]
SCHEMA = {"type": "record", "name": "V", "fields": [{"name": "n", "type": "long"}, {"name": "s", "type": "string"}]}


@pytest.fixture(scope="module")
def guarded(broker):
    """A registry of its own that needs basic auth as carol."""
    with RegistryServer(broker.bootstrap_servers, topic=f"_schemas_conn_{uuid.uuid4().hex[:6]}",
                        basic_auth={"carol": PASSWORD}) as reg:
        yield reg


@pytest.fixture
def elsewhere(spark):
    """A session whose own broker and registry are not there: only connections can reach data."""
    s = ks.connect(bootstrap_servers="127.0.0.1:9", spark=spark, timeout=20, dialect="materialize")
    yield s
    s.stop()


def avro_topic(broker, registry_url: str) -> str:
    topic = f"conn_{uuid.uuid4().hex[:10]}"
    client = SchemaRegistryClient({"url": registry_url, "basic.auth.user.info": f"carol:{PASSWORD}"})
    serialize = AvroSerializer(client, json.dumps(SCHEMA))
    ctx = SerializationContext(topic, MessageField.VALUE)
    produce(broker.bootstrap_servers, topic, [{"key": f"k{i}", "value": serialize({"n": i, "s": f"v{i}"}, ctx),
                                              "partition": 0} for i in range(3)], create_partitions=1)
    return topic


def test_a_source_reads_the_cluster_and_registry_its_connections_name(elsewhere, broker, guarded):
    topic = avro_topic(broker, guarded.url)
    elsewhere.sql(f"""
        CREATE SECRET csr_password AS '{PASSWORD}';
        CREATE CONNECTION kafka_conn TO KAFKA (BROKER '{broker.bootstrap_servers}', SECURITY PROTOCOL = PLAINTEXT);
        CREATE CONNECTION csr_conn TO CONFLUENT SCHEMA REGISTRY (URL '{guarded.url}', USERNAME = 'carol',
            PASSWORD = SECRET csr_password);
        CREATE SOURCE avro_src FROM KAFKA CONNECTION kafka_conn (TOPIC '{topic}')
            KEY FORMAT TEXT VALUE FORMAT AVRO USING CONFLUENT SCHEMA REGISTRY CONNECTION csr_conn
            INCLUDE KEY AS k""")
    rows = elsewhere.sql("SELECT k, n, s FROM avro_src ORDER BY n")
    assert rows.to_dict("records") == [{"k": f"k{i}", "n": i, "s": f"v{i}"} for i in range(3)]
    assert elsewhere.sql("SHOW SECRETS").to_dict("records") == [{"name": "csr_password", "comment": ""}]
    assert elsewhere.sql("SHOW CONNECTIONS").to_dict("records") == [
        {"name": "csr_conn", "type": "confluent-schema-registry", "comment": ""},
        {"name": "kafka_conn", "type": "kafka", "comment": ""}]
    endpoint = elsewhere.catalog.connection("kafka_conn", "KAFKA")
    assert (endpoint.address, dict(endpoint.properties)) == (broker.bootstrap_servers,
                                                           {"security.protocol": "PLAINTEXT"})
    assert PASSWORD not in repr(elsewhere.catalog.connection("csr_conn"))
    assert PASSWORD not in elsewhere.sql("SHOW PROPERTIES", dialect="ksql").to_string()
    out = f"{topic}_out"
    elsewhere.sql(f"""CREATE SINK avro_out FROM avro_src INTO KAFKA CONNECTION kafka_conn (TOPIC '{out}')
        KEY (k) NOT ENFORCED FORMAT AVRO USING CONFLUENT SCHEMA REGISTRY CONNECTION csr_conn ENVELOPE UPSERT""")
    written = fetch_records(broker.bootstrap_servers, out, from_beginning=True, limit=3, timeout_s=90,
                            until_end=False)
    registry = SchemaRegistryClient({"url": guarded.url, "basic.auth.user.info": f"carol:{PASSWORD}"})
    value = AvroDeserializer(registry)
    assert sorted((value(r["value"], SerializationContext(out, MessageField.VALUE))["n"]) for r in written) == [0, 1, 2]
    assert {f"{out}-key", f"{out}-value"} <= set(registry.get_subjects())
    elsewhere.sql("DROP SINK avro_out")
    with pytest.raises(ks.StatementError, match="^cannot drop connection 'csr_conn': still depended upon by "
                                                 "source 'avro_src'"):
        elsewhere.sql("DROP CONNECTION csr_conn")
    with pytest.raises(ks.StatementError, match="^cannot drop secret 'csr_password': still depended upon by "
                                                 "connection 'csr_conn'"):
        elsewhere.sql("DROP SECRET csr_password")
    elsewhere.sql("DROP SOURCE avro_src; DROP CONNECTION csr_conn; DROP SECRET csr_password")
    assert elsewhere.sql("SHOW SECRETS").empty


def test_connections_are_validated_unless_told_not_to(elsewhere, broker, guarded):
    elsewhere.sql("CREATE SECRET wrong AS 'not-the-password'")
    with pytest.raises(ks.StatementError, match="^failed to connect to the schema registry at .*: HTTP 401"):
        elsewhere.sql(f"CREATE CONNECTION bad_csr TO CONFLUENT SCHEMA REGISTRY (URL '{guarded.url}', "
                      "USERNAME 'carol', PASSWORD SECRET wrong)")
    with pytest.raises(ks.KStreamError, match="127.0.0.1:9"):
        elsewhere.sql("CREATE CONNECTION nowhere TO KAFKA (BROKER '127.0.0.1:9', SECURITY PROTOCOL PLAINTEXT)",
                      timeout=3)
    assert elsewhere.sql("SHOW CONNECTIONS").empty  # neither was created
    elsewhere.sql("CREATE CONNECTION later TO KAFKA (BROKER '127.0.0.1:9', SECURITY PROTOCOL PLAINTEXT) "
                  "WITH (VALIDATE = false)")
    with pytest.raises(ks.StatementError, match="^later is not a CONFLUENT SCHEMA REGISTRY CONNECTION"):
        elsewhere.sql("CREATE SOURCE s FROM KAFKA CONNECTION later (TOPIC 't') "
                      "FORMAT AVRO USING CONFLUENT SCHEMA REGISTRY CONNECTION later")
    with pytest.raises(ks.StatementError, match="^unknown catalog item 'missing'"):
        elsewhere.sql("CREATE SOURCE s FROM KAFKA CONNECTION missing (TOPIC 't') FORMAT TEXT")


def test_start_offset_and_start_timestamp_decide_where_the_source_begins(elsewhere, broker, new_topic):
    topic = new_topic(2)
    now = int(time.time() * 1000)
    ages = [7_200_000, 3_600_000, 60_000, 9_000_000]  # the last one is late, out of order: still read
    produce(broker.bootstrap_servers, topic, [{"partition": p, "value": f"p{p}-{i}", "timestamp": now - age}
                                              for p in (0, 1) for i, age in enumerate(ages)])
    elsewhere.sql(f"""
        CREATE CONNECTION k TO KAFKA (BROKER '{broker.bootstrap_servers}', SECURITY PROTOCOL PLAINTEXT);
        CREATE SOURCE by_offset FROM KAFKA CONNECTION k (TOPIC '{topic}', START OFFSET [2]) FORMAT TEXT
            INCLUDE PARTITION, OFFSET;
        CREATE SOURCE by_time FROM KAFKA CONNECTION k (TOPIC '{topic}', START TIMESTAMP = -5400000) FORMAT TEXT""")
    from_offset = ["p0-2", "p0-3", "p1-0", "p1-1", "p1-2", "p1-3"]
    got = elsewhere.sql("SELECT text, partition, \"offset\" FROM by_offset ORDER BY text")
    assert list(got.text) == from_offset and list(got.offset) == [2, 3, 0, 1, 2, 3]
    assert list(elsewhere.sql("SELECT text FROM by_time ORDER BY text").text) == [
        "p0-1", "p0-2", "p0-3", "p1-1", "p1-2", "p1-3"]
    handle = elsewhere.sql("SUBSCRIBE by_offset")  # the session reads from 'latest': the source's start wins
    deadline = time.monotonic() + 60
    while len(handle.rows()) < len(from_offset) and time.monotonic() < deadline:
        time.sleep(0.2)
    handle.stop()
    assert sorted(handle.rows().text) == from_offset
    with pytest.raises(ks.StatementError, match=rf"^START OFFSET specified more partitions \(3\) than topic "
                                                 rf"\({topic}\) contains \(2\)"):
        elsewhere.sql(f"CREATE SOURCE too_many FROM KAFKA CONNECTION k (TOPIC '{topic}', START OFFSET (0, 0, 0)) "
                      "FORMAT TEXT")


def test_a_partition_added_after_create_source_is_read_from_its_start(elsewhere, broker):
    """Materialize's rule: START OFFSET names the partitions there when the source is created; one
    added later is read from offset 0. Tansu has no CreatePartitions (KIP-195), so the topic is
    re-created with a second partition after CREATE SOURCE."""
    from kafkasql_magic.kafka import admin
    from kafkasql_magic.kafka.producer import drop_producers

    bootstrap, topic = broker.bootstrap_servers, f"grow_{uuid.uuid4().hex[:10]}"
    produce(bootstrap, topic, [{"partition": 0, "value": f"old-{i}"} for i in range(4)], create_partitions=1)
    elsewhere.sql(f"""
        CREATE CONNECTION k TO KAFKA (BROKER '{bootstrap}', SECURITY PROTOCOL PLAINTEXT);
        CREATE SOURCE grows FROM KAFKA CONNECTION k (TOPIC '{topic}', START OFFSET (2)) FORMAT TEXT
            INCLUDE PARTITION, OFFSET""")
    admin.delete_topic(bootstrap, topic)
    drop_producers(bootstrap)  # a cached producer still knows one partition
    produce(bootstrap, topic, [{"partition": p, "value": f"p{p}-{i}"} for p in (0, 1) for i in range(3)],
            create_partitions=2)
    expected = [("p0-2", 0, 2), ("p1-0", 1, 0), ("p1-1", 1, 1), ("p1-2", 1, 2)]
    got = elsewhere.sql("SELECT text, partition, \"offset\" FROM grows ORDER BY partition, \"offset\"")
    assert [tuple(r) for r in got.itertuples(index=False)] == expected
    live = elsewhere.sql("SUBSCRIBE (SELECT text, partition, \"offset\" FROM grows LIMIT 4)", timeout=60)
    assert sorted(tuple(r)[2:] for r in live.itertuples(index=False)) == expected  # after mz_timestamp, mz_diff
    assert set(live.mz_diff) == {1}


def test_tables_from_a_source_decode_what_the_source_reads(elsewhere, broker, new_topic):
    topic = new_topic(1)
    produce(broker.bootstrap_servers, topic, [{"key": k, "value": json.dumps({"n": n}) if n else None}
                                              for k, n in (("a", 1), ("b", 2), ("a", 3), ("b", 0))])
    elsewhere.sql(f"""
        CREATE CONNECTION k TO KAFKA (BROKER '{broker.bootstrap_servers}', SECURITY PROTOCOL PLAINTEXT);
        CREATE SOURCE src FROM KAFKA CONNECTION k (TOPIC '{topic}', START OFFSET (1));
        CREATE TABLE events FROM SOURCE src (REFERENCE "{topic}") FORMAT JSON INCLUDE OFFSET;
        CREATE TABLE latest FROM SOURCE src KEY FORMAT TEXT VALUE FORMAT JSON ENVELOPE UPSERT""")
    assert elsewhere.sql("SELECT key, data::text AS d FROM latest").to_dict("records") == [
        {"key": "a", "d": '{"n":3}'}]  # from START OFFSET on (a=1 is before it); b's NULL value deleted b
    for name in ("events", "src"):  # a source without a format reads its bytes, with ENVELOPE NONE's rule
        with pytest.raises(ks.StatementError, match=rf"^Envelope error: Flat: Value not present for message "
                                                     rf"\(topic {topic}, partition 0, offset 3\)"):
            elsewhere.sql(f"SELECT * FROM {name}")
    assert list(elsewhere.sql("SHOW COLUMNS FROM events").name) == ["data", "offset"]
    assert list(elsewhere.sql("SHOW COLUMNS FROM src").name) == ["data"]
    with pytest.raises(ks.StatementError, match="^reference other not found in source src"):
        elsewhere.sql("CREATE TABLE t FROM SOURCE src (REFERENCE other) FORMAT TEXT")
    with pytest.raises(ks.StatementError, match="^cannot drop source 'src': still depended upon by "
                                                 "table 'events', table 'latest'"):
        elsewhere.sql("DROP SOURCE src")
    tables, sources = elsewhere.sql("SHOW TABLES"), elsewhere.sql("SHOW SOURCES")
    assert list(tables.columns) == ["name", "comment"] and sorted(tables.name) == ["events", "latest"]
    assert sources.to_dict("records") == [{"name": "src", "type": "kafka", "cluster": None}]
    assert sorted(elsewhere.sql("SHOW TABLES", dialect="ksql")["Table Name"]) == ["latest"]  # ksql's own listing
    elsewhere.sql("DROP TABLE events; DROP TABLE latest; DROP SOURCE src")
    assert elsewhere.sql("SHOW SOURCES").empty


def test_a_connection_leaves_the_sessions_own_clients_alone(ksql, broker, new_topic):
    """A connection to the session's own bootstrap address with other (here wrong) SASL settings
    applies to what names it: the session's next statement and a running CSAS, which keeps
    writing every new record, go on with the session's own settings."""
    topic = new_topic(1)
    produce(broker.bootstrap_servers, topic, [{"key": f"k{i}", "value": json.dumps({"N": i})} for i in range(10)])
    ksql.sql(f"CREATE STREAM own_src (N INT) WITH (kafka_topic='{topic}', value_format='JSON');")
    query = ksql.sql("CREATE STREAM own_out AS SELECT N FROM own_src;")

    def written() -> list[int]:
        return sorted(json.loads(r["value"])["N"] for r in fetch_records(
            broker.bootstrap_servers, "OWN_OUT", from_beginning=True, limit=None, timeout_s=5, until_end=True))

    deadline = time.monotonic() + 240
    while len(written()) < 10 and time.monotonic() < deadline:
        time.sleep(1)
    assert written() == list(range(10))
    ksql.sql(f"""CREATE SECRET wrong_pw AS 'not-a-password';
        CREATE CONNECTION own_address TO KAFKA (BROKER '{broker.bootstrap_servers}',
            SECURITY PROTOCOL = SASL_PLAINTEXT, SASL MECHANISMS = 'PLAIN', SASL USERNAME = 'nobody',
            SASL PASSWORD = SECRET wrong_pw) WITH (VALIDATE = false)""", dialect="materialize")
    assert len(ksql.sql("SELECT * FROM own_src;", timeout=30)) == 10  # the session's next statement
    produce(broker.bootstrap_servers, topic, [{"key": f"k{i}", "value": json.dumps({"N": i})} for i in range(10, 20)])
    deadline = time.monotonic() + 240
    while len(written()) < 20 and time.monotonic() < deadline:
        time.sleep(1)
    assert written() == list(range(20))
    assert query.state == "RUNNING"


def test_a_refused_registry_connection_leaves_nothing_behind(elsewhere, broker, guarded):
    """A registry connection refused for its credentials (not created) changes nothing for a
    source over a good connection to the same URL."""
    topic = avro_topic(broker, guarded.url)
    elsewhere.sql(f"""
        CREATE SECRET good_pw AS '{PASSWORD}';
        CREATE SECRET bad_pw AS 'not-the-password';
        CREATE CONNECTION k TO KAFKA (BROKER '{broker.bootstrap_servers}', SECURITY PROTOCOL = PLAINTEXT);
        CREATE CONNECTION rgood TO CONFLUENT SCHEMA REGISTRY (URL '{guarded.url}', USERNAME 'carol',
            PASSWORD = SECRET good_pw);
        CREATE SOURCE good_src FROM KAFKA CONNECTION k (TOPIC '{topic}')
            FORMAT AVRO USING CONFLUENT SCHEMA REGISTRY CONNECTION rgood""")
    with pytest.raises(ks.StatementError, match="^failed to connect to the schema registry at .*: HTTP 401"):
        elsewhere.sql(f"CREATE CONNECTION rwrong TO CONFLUENT SCHEMA REGISTRY (URL '{guarded.url}', "
                      "USERNAME 'carol', PASSWORD = SECRET bad_pw)")
    assert list(elsewhere.sql("SELECT n FROM good_src ORDER BY n").n) == [0, 1, 2]
    elsewhere.sql(f"CREATE SOURCE later_src FROM KAFKA CONNECTION k (TOPIC '{topic}') "
                  "FORMAT AVRO USING CONFLUENT SCHEMA REGISTRY CONNECTION rgood")
    assert list(elsewhere.sql("SELECT s FROM later_src ORDER BY s").s) == ["v0", "v1", "v2"]
