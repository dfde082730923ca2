"""Secured clusters and secrets: a registry with basic auth, client properties reaching every
client, and planted secrets that never show on any user-visible surface."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import uuid

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

import kafkasql_magic as ks
from kafkasql_magic.errors import KStreamError, StatementError
from kafkasql_magic.kafka.producer import produce
from kafkasql_magic.registry import RegistryServer

USER = "alice"
PASSWORD = "Reg-Pw-" + uuid.uuid4().hex[:8]
SCHEMA = {"type": "record", "name": "V", "fields": [{"name": "n", "type": "long"}, {"name": "s", "type": "string"}]}


@pytest.fixture(scope="module")
def secured(broker):
    """An embedded registry of its own that needs basic auth as alice."""
    with RegistryServer(broker.bootstrap_servers, topic=f"_schemas_auth_{uuid.uuid4().hex[:6]}",
                        basic_auth={USER: PASSWORD}) as reg:
        yield reg


def with_credentials(url: str, password: str = PASSWORD) -> str:
    return url.replace("http://", f"http://{USER}:{password}@")


def avro_topic(broker, secured, count: int = 3) -> str:
    topic = f"sec_{uuid.uuid4().hex[:10]}"
    client = SchemaRegistryClient({"url": secured.url, "basic.auth.user.info": f"{USER}:{PASSWORD}"})
    serialize = AvroSerializer(client, json.dumps(SCHEMA))
    ctx = SerializationContext(topic, MessageField.VALUE)
    produce(broker.bootstrap_servers, topic,
            [{"value": serialize({"n": i, "s": f"v{i}"}, ctx), "partition": 0} for i in range(count)],
            create_partitions=1)
    return topic


def test_registry_refuses_requests_without_credentials(secured):
    from confluent_kafka.schema_registry.error import SchemaRegistryError

    with pytest.raises(SchemaRegistryError) as caught:
        SchemaRegistryClient({"url": secured.url}).get_subjects()
    assert caught.value.http_status_code == 401
    assert SchemaRegistryClient({"url": with_credentials(secured.url)}).get_subjects() is not None


@pytest.mark.parametrize("how", ["config", "url", "properties file", "set"])
def test_avro_stream_through_a_registry_with_basic_auth(spark, broker, secured, tmp_path, how):
    topic = avro_topic(broker, secured)
    url, config = secured.url, None
    if how == "config":
        config = {"basic.auth.user.info": f"{USER}:{PASSWORD}"}
    elif how == "url":
        url = with_credentials(secured.url)
    elif how == "properties file":
        config = tmp_path / "client.properties"
        config.write_text(f"schema.registry.basic.auth.user.info={USER}:{PASSWORD}\n")
    # A URL that differs from the other cases' so no client cached by them is reused.
    url = url + "/" if how in ("properties file", "set") else url
    s = ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark, schema_registry_url=url,
                   config=config, timeout=90)
    if how == "set":
        s.sql(f"SET 'schema.registry.basic.auth.user.info'='{USER}:{PASSWORD}';")
    s.sql("SET 'auto.offset.reset'='earliest';")
    s.sql(f"CREATE STREAM a WITH (kafka_topic='{topic}', value_format='AVRO');")  # inferred: driver's client
    rows = s.sql("SELECT n, s FROM a EMIT CHANGES LIMIT 3;")  # decoded on executors: their client
    assert rows.N.tolist() == [0, 1, 2] and rows.S.tolist() == ["v0", "v1", "v2"]
    assert s.processing_log().empty


def test_wrong_password_is_a_clear_error_without_the_password(spark, broker, secured):
    topic = avro_topic(broker, secured, count=1)
    wrong = "Wrong-" + uuid.uuid4().hex[:8]
    s = ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark,
                   schema_registry_url=with_credentials(secured.url, wrong))
    with pytest.raises(StatementError) as caught:
        s.sql(f"CREATE STREAM a WITH (kafka_topic='{topic}', value_format='AVRO');")
    assert "401" in str(caught.value) and wrong not in str(caught.value)
    assert "http://[hidden]@" in str(caught.value)


def jvm_log(spark):
    """Spark's own log lines from now on: the JVM writes them to its descriptor 2 (the file
    it inherited), read through /proc; call the result for the lines written since."""
    path = f"/proc/{spark.sparkContext._gateway.proc.pid}/fd/2"
    with open(path, "rb") as f:
        start = f.seek(0, 2)

    def since() -> str:
        with open(path, "rb") as f:
            f.seek(start)
            return f.read().decode("utf-8", "replace")

    return since


def test_planted_secrets_never_show(spark, broker, secured, caplog):
    """Every user-visible surface, grepped for every planted secret (Spark's own log lines at
    INFO too)."""
    from kafkasql_magic.live.schema_model import SchemaBrowser

    planted = {"sasl": "Sasl-Pw-" + uuid.uuid4().hex[:8], "jaas": "Jaas-Pw-" + uuid.uuid4().hex[:8],
               "token": "Tok-" + uuid.uuid4().hex[:8], "url": PASSWORD}
    seen: list[str] = []
    caplog.set_level(logging.DEBUG)
    topic = avro_topic(broker, secured)
    produce(broker.bootstrap_servers, topic, [{"value": b"\x00\x00\x01\x86\x9f" + b"\x02", "partition": 0}])
    config = {"sasl.password": planted["sasl"],  # set but unused: the embedded broker is PLAINTEXT
              "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required "
                                  f"username=\"u\" password=\"{planted['jaas']}\";"}
    s = ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark,
                   schema_registry_url=with_credentials(secured.url), config=config, timeout=90)
    s.sql("SET 'auto.offset.reset'='earliest';")
    s.sql(f"SET 'sasl.oauthbearer.client.secret'='{planted['token']}';")
    s.sql(f"CREATE STREAM a WITH (kafka_topic='{topic}', value_format='AVRO');")

    shown = s.sql("SHOW PROPERTIES;")
    seen.append(shown.to_string())
    assert shown.set_index("Property").loc["sasl.password", "Value"] == "[hidden]"
    seen.append(s.sql("EXPLAIN SELECT n FROM a EMIT CHANGES;").to_string())
    # Errors: a subject the registry lacks (CREATE and CREATE SOURCE), a registry that is down.
    for statement, dialect in ((f"CREATE STREAM b WITH (kafka_topic='{topic}_none', value_format='AVRO');", "ksql"),
                               (f"CREATE SOURCE c FROM KAFKA TOPIC '{topic}' FORMAT AVRO USING CONFLUENT SCHEMA "
                                f"REGISTRY '{with_credentials('http://127.0.0.1:9')}'", "materialize")):
        with pytest.raises(KStreamError) as caught:
            s.sql(statement, dialect=dialect)
        seen.append(str(caught.value))
        seen.append("".join(__import__("traceback").format_exception(caught.value)))
    # A running query: its widget HTML (rows, the bad record's error), Spark's plan strings and logs.
    spark_log = jvm_log(spark)
    spark.sparkContext.setLogLevel("INFO")
    query = s.sql("SELECT n, s FROM a EMIT CHANGES;")
    deadline = __import__("time").monotonic() + 90
    while query.model.snapshot().error_count < 1 or len(query.rows()) < 3:
        assert __import__("time").monotonic() < deadline, "the query saw too little"
        __import__("time").sleep(0.5)
    seen.append(query.model.to_html())
    seen.append(str(query._query.lastProgress))
    with contextlib.redirect_stdout(io.StringIO()) as out:
        query._query.explain(extended=True)
    seen.append(out.getvalue())
    query.stop()
    spark.sparkContext.setLogLevel("ERROR")  # as the session fixture sets it
    logged = spark_log()
    assert "INFO MicroBatchExecution" in logged, "Spark's log lines were not read"
    seen.append(logged)
    frame = s.dataframe("SELECT n FROM a EMIT CHANGES;")
    with contextlib.redirect_stdout(io.StringIO()) as out:
        frame.explain(True)
    seen.append(out.getvalue())
    # The processing log (also through SQL): the record with an unknown schema id names the registry.
    log = s.processing_log()
    assert any("http://[hidden]@" in m for m in log.MESSAGE), log.MESSAGE.tolist()
    seen.append(log.to_string())
    seen.append(s.sql("SELECT * FROM KSQL_PROCESSING_LOG;").to_string())
    # The schema pane's model, against the registry and against one that is down.
    seen.append(SchemaBrowser(with_credentials(secured.url), broker.bootstrap_servers).describe(topic).to_html())
    seen.append(str(SchemaBrowser(with_credentials("http://127.0.0.1:9"), None).describe(topic).to_html()))
    seen.append(caplog.text)

    from kafkasql_magic import clientconf

    clientconf.forget(broker.bootstrap_servers, None, ["sasl.password", "sasl.username",
                                                       "sasl.oauthbearer.client.secret"])
    text = "\n".join(seen)
    assert "[hidden]" in text
    for name, secret in planted.items():
        assert secret not in text, f"the {name} secret shows"


def test_client_properties_reach_the_broker_clients(spark, broker):
    """librdkafka properties from connect(config=...) reach the admin client and the consumers
    on the executors: a client.id on every client, and a bad property fails there."""
    s = ks.connect(bootstrap_servers=broker.bootstrap_servers, spark=spark, timeout=60,
                   config={"client.id": "kafkasql-secured-test", "socket.keepalive.enable": "true"})
    topic = f"sec_{uuid.uuid4().hex[:10]}"
    produce(broker.bootstrap_servers, topic, [{"value": b'{"v": 1}', "partition": 0}], create_partitions=1)
    s.sql("SET 'auto.offset.reset'='earliest';")
    s.sql(f"CREATE STREAM j (v INT) WITH (kafka_topic='{topic}', value_format='JSON');")
    assert s.sql("SELECT v FROM j EMIT CHANGES LIMIT 1;").V.tolist() == [1]
    from kafkasql_magic.kafka import admin

    assert admin.client_conf(broker.bootstrap_servers)["client.id"] == "kafkasql-secured-test"
    from kafkasql_magic.kafka import reads

    options = s.source_options(reads.bounded(broker.bootstrap_servers, topic))
    assert options["kafka.client.id"] == "kafkasql-secured-test"
    # SET of a client property reaches the clients made after it (the admin client, the executors' options)
    s.sql("SET 'client.rack'='rack-7'; SET 'sasl.password'='Set-Pw-1';")
    assert admin.client_conf(broker.bootstrap_servers)["client.rack"] == "rack-7"
    options = s.source_options(reads.bounded(broker.bootstrap_servers, topic))
    assert options["kafka.client.rack"] == "rack-7" and options["secret.kafka.sasl.password"] == "Set-Pw-1"
    from kafkasql_magic import clientconf

    clientconf.forget(broker.bootstrap_servers, None, ["client.id", "socket.keepalive.enable", "client.rack",
                                                       "sasl.password"])
