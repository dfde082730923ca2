"""Client properties and the masking of secrets, without a broker or Spark."""

from __future__ import annotations

import logging

import pytest

from kafkasql_magic import clientconf, redact
from kafkasql_magic.errors import KStreamError, StatementError


def test_secret_property_names_are_recognised():
    for name in ("sasl.password", "ssl.key.password", "sasl.jaas.config", "basic.auth.user.info",
                 "schema.registry.basic.auth.user.info", "bearer.auth.token", "sasl.oauthbearer.client.secret",
                 "ssl.keystore.key"):
        assert redact.is_secret(name), name
    for name in ("sasl.username", "security.protocol", "auto.offset.reset", "bootstrap.servers"):
        assert not redact.is_secret(name), name


def test_url_credentials_are_masked_and_split_out():
    assert redact.url("see http://bob:pa55word@reg:8081/x") == "see http://[hidden]@reg:8081/x"
    assert redact.url("http://reg:8081") == "http://reg:8081"
    assert redact.split_url("http://bob:p%40ss@reg:8081") == ("http://reg:8081", "bob:p@ss")
    assert redact.split_url("http://reg:8081") == ("http://reg:8081", None)


def test_remembered_secrets_are_masked_in_any_text():
    redact.remember("Zq9-remembered-secret")
    assert redact.text("librdkafka said: bad Zq9-remembered-secret!") == "librdkafka said: bad [hidden]!"


def test_properties_are_shown_masked():
    shown = redact.properties({"sasl.password": "x1", "sasl.username": "alice",
                               "url": "http://u:pw-in-url-77@h:1"})
    assert shown == {"sasl.password": "[hidden]", "sasl.username": "alice", "url": "http://[hidden]@h:1"}


def test_user_errors_never_carry_url_credentials():
    err = StatementError("Schema registry at http://bob:Hunter2-xyz@h:1 is not reachable")
    assert "Hunter2-xyz" not in str(err) and "http://[hidden]@h:1" in str(err)
    assert isinstance(err, KStreamError)


def test_log_records_are_masked(caplog):
    redact.remember("Log-Secret-4242")
    redact.install_log_filter()
    with caplog.at_level(logging.INFO, logger="httpx"):
        logging.getLogger("httpx").info("HTTP Request: GET %s", "http://u:Log-Secret-4242@h/subjects")
    assert "Log-Secret-4242" not in caplog.text and "[hidden]" in caplog.text


def test_properties_file(tmp_path):
    path = tmp_path / "client.properties"
    path.write_text("# a comment\n! another\nsecurity.protocol=SASL_SSL\nsasl.mechanism : PLAIN\n"
                    "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \\\n"
                    "    username='u' password='p';\n\nbasic.auth.user.info=u:p\n")
    assert clientconf.from_argument(str(path)) == {
        "security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required username='u' password='p';",
        "basic.auth.user.info": "u:p"}


def test_missing_properties_file_is_a_user_error(tmp_path):
    with pytest.raises(StatementError, match="Cannot read the client properties file"):
        clientconf.from_argument(str(tmp_path / "nope.properties"))


def test_properties_split_between_librdkafka_and_the_registry_client():
    kafka, registry = clientconf.split({
        "security.protocol": "SASL_PLAINTEXT", "kafka.sasl.username": "alice",
        "schema.registry.basic.auth.user.info": "u:p", "bearer.auth.token": "tok",
        "ksql.schema.registry.ssl.ca.location": "/ca.pem", "schema.registry.url": "http://r"})
    assert kafka == {"security.protocol": "SASL_PLAINTEXT", "sasl.username": "alice"}
    assert registry == {"basic.auth.user.info": "u:p", "bearer.auth.token": "tok", "ssl.ca.location": "/ca.pem"}


def test_set_applies_client_properties_only():
    assert clientconf.is_client_property("sasl.password")
    assert clientconf.is_client_property("security.protocol")
    assert clientconf.is_client_property("schema.registry.basic.auth.user.info")
    assert not clientconf.is_client_property("auto.offset.reset")
    assert not clientconf.is_client_property("ksql.query.pull.table.scan.enabled")


def test_configured_properties_reach_clients_and_source_options():
    from kafkasql_magic.kafka import admin

    clientconf.configure("unit-host:1", "http://bob:RegPw-991@unit-reg:2",
                         {"sasl.password": "Pw-unit-1", "sasl.username": "alice",
                          "schema.registry.bearer.auth.token": "Tok-unit-2"})
    conf = admin.client_conf("unit-host:1")
    assert conf["sasl.password"] == "Pw-unit-1" and conf["sasl.username"] == "alice"
    assert clientconf.source_options("unit-host:1") == {"secret.kafka.sasl.password": "Pw-unit-1",
                                                        "kafka.sasl.username": "alice"}
    reg = clientconf.registry_client_conf("http://bob:RegPw-991@unit-reg:2", {"timeout": 10})
    assert reg["url"] == "http://unit-reg:2" and reg["basic.auth.user.info"] == "bob:RegPw-991"
    assert reg["bearer.auth.token"] == "Tok-unit-2"
    shown = clientconf.shown({"auto.offset.reset": "earliest"}, "unit-host:1", "http://unit-reg:2")
    assert shown["sasl.password"] == "[hidden]" and shown["schema.registry.bearer.auth.token"] == "[hidden]"
    assert shown["sasl.username"] == "alice"
    clientconf.forget("unit-host:1", "http://unit-reg:2", ["sasl.password"])
    assert "sasl.password" not in admin.client_conf("unit-host:1")


def test_source_reads_secret_options_back():
    from kafkasql_magic.kafka.source import SourceOptions

    opts = SourceOptions.parse({"bootstrap.servers": "h:1", "topic": "t", "kafka.sasl.username": "a",
                                "secret.kafka.sasl.password": "p"}, streaming=True)
    assert opts.conf == {"sasl.username": "a", "sasl.password": "p"}


def test_registry_lookup_waits_out_an_outage_then_stops(monkeypatch):
    from kafkasql_magic.formats import schema_registry as sr

    class Down:
        def get_schema(self, schema_id):
            raise ConnectionError("refused")

    slept = []
    monkeypatch.setattr(sr, "client", lambda url, conf=None: Down())
    with pytest.raises(sr.RegistryUnavailable, match="did not answer"):
        sr.schema_by_id("http://u:OutagePw-1@h:1", 991, {sr.OUTAGE_TIMEOUT: "0"}, sleep=slept.append)
    assert slept == []  # a zero limit: no waiting


def test_registry_lookup_logs_a_missing_id_at_once(monkeypatch):
    from confluent_kafka.schema_registry.error import SchemaRegistryError

    from kafkasql_magic.formats import schema_registry as sr

    class Missing:
        def get_schema(self, schema_id):
            raise SchemaRegistryError(404, 40403, "Schema not found")

    monkeypatch.setattr(sr, "client", lambda url, conf=None: Missing())
    with pytest.raises(sr.SchemaLookupError, match="not found"):
        sr.schema_by_id("http://h:1", 992, sleep=lambda s: pytest.fail("waited for a 404"))


def test_registry_lookup_retries_with_backoff_until_it_answers(monkeypatch):
    from kafkasql_magic.formats import schema_registry as sr

    class Flaky:
        calls = 0

        def get_schema(self, schema_id):
            Flaky.calls += 1
            if Flaky.calls < 4:
                raise ConnectionError("refused")

            class S:
                schema_type, schema_str, references = "AVRO", '"long"', []
            return S()

    slept = []
    monkeypatch.setattr(sr, "client", lambda url, conf=None: Flaky())
    found = sr.schema_by_id("http://h:1", 993, sleep=slept.append)
    assert found.text == '"long"' and slept == [0.5, 1.0, 2.0]


def test_jaas_config_becomes_librdkafka_username_and_password():
    kafka, _ = clientconf.split({
        "sasl.mechanism": "SCRAM-SHA-512", "client.dns.lookup": "use_all_dns_ips",
        "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required '
                            'username="alice" password="p;w\\"d";'})
    assert kafka == {"sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "alice", "sasl.password": 'p;w"d'}
    with pytest.raises(StatementError, match="ssl.ca.location"):
        clientconf.split({"ssl.truststore.location": "/x.jks"})


def test_sink_writers_carry_the_clusters_client_properties():
    """A persistent query writing to a secured cluster: the producer on the executors gets the
    cluster's properties, the secret ones under option names Spark masks."""
    from kafkasql_magic.catalog import SourceDef
    from kafkasql_magic.kafka.writer import SinkOptions
    from kafkasql_magic.sinks.runner import SinkWrite

    clientconf.configure("sink-host:1", None, {"sasl.password": "Pw-sink-3", "sasl.username": "carol"})
    try:
        sink = SourceDef(name="OUT", kind="STREAM", topic="out", columns=(), key_format=None, value_format=None)
        options = SinkWrite(sink, {}, bootstrap="sink-host:1").options()
        assert options["secret.kafka.sasl.password"] == "Pw-sink-3" and "kafka.sasl.password" not in options
        conf = SinkOptions.parse(options).producer_conf()
        assert (conf["sasl.password"], conf["sasl.username"], conf["acks"]) == ("Pw-sink-3", "carol", "all")
    finally:
        clientconf.forget("sink-host:1", None, ["sasl.password", "sasl.username"])
