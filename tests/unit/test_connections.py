"""Secrets and connections as data: client properties, masking, SHOW, DROP and the checks."""

from __future__ import annotations

import pytest

from kafkasql_magic.dialects.connections import Connections
from kafkasql_magic.errors import StatementError
from kafkasql_magic.sql import parse_statement


def run(registry: Connections, *statements):
    for text in statements:
        stmt = parse_statement(text, dialect="materialize")
        if type(stmt).__name__ == "CreateSecret":
            registry.create_secret(stmt)
        else:
            registry.create_connection(stmt)
    return registry


@pytest.fixture
def secured():
    return run(
        Connections(),
        "CREATE SECRET kafka_password AS 'hunter2'",
        "CREATE SECRET client_key AS '-----BEGIN PRIVATE KEY-----'",
        "CREATE SECRET csr_password AS 's3cret'",
        "CREATE CONNECTION kafka_conn TO KAFKA (BROKER 'broker:9093', SASL MECHANISMS = 'SCRAM-SHA-256', "
        "SASL USERNAME = 'alice', SASL PASSWORD = SECRET kafka_password, "
        "SSL CERTIFICATE AUTHORITY = '-----BEGIN CERTIFICATE-----', SSL KEY = SECRET client_key)",
        "CREATE CONNECTION csr TO CONFLUENT SCHEMA REGISTRY (URL 'https://registry:8081', USERNAME 'bob', "
        "PASSWORD = SECRET csr_password)",
    )


def test_kafka_connection_client_properties(secured):
    assert secured.kafka_properties("kafka_conn") == {
        "bootstrap.servers": "broker:9093",
        "security.protocol": "SASL_SSL",  # Materialize's default with SASL options
        "sasl.mechanisms": "SCRAM-SHA-256",
        "sasl.username": "alice",
        "sasl.password": "hunter2",
        "ssl.ca.pem": "-----BEGIN CERTIFICATE-----",
        "ssl.key.pem": "-----BEGIN PRIVATE KEY-----",
    }


def test_security_protocol_defaults_and_explicit():
    registry = run(Connections(),
                   "CREATE CONNECTION tls TO KAFKA (BROKERS ('a:1', 'b:2'))",
                   "CREATE CONNECTION plain TO KAFKA (BROKER 'localhost:9092', SECURITY PROTOCOL = 'plaintext')")
    assert registry.kafka_properties("tls") == {"bootstrap.servers": "a:1,b:2", "security.protocol": "SSL"}
    assert registry.kafka_properties("plain") == {"bootstrap.servers": "localhost:9092",
                                                  "security.protocol": "PLAINTEXT"}


def test_registry_connection_client_properties(secured):
    assert secured.registry_properties("csr") == {
        "url": "https://registry:8081",
        "basic.auth.user.info": "bob:s3cret",
    }
    anonymous = run(Connections(), "CREATE CONNECTION r TO CONFLUENT SCHEMA REGISTRY (URL 'http://r')")
    assert anonymous.registry_properties("r") == {"url": "http://r"}


def test_secrets_are_never_shown(secured):
    for shown in (repr(secured), str(secured), repr(secured.kafka_properties("kafka_conn")),
                  str(secured.registry_properties("csr")), repr(secured.connections["kafka_conn"]),
                  repr(secured.show_secrets())):
        for secret in ("hunter2", "BEGIN PRIVATE KEY", "s3cret"):
            assert secret not in shown, shown
    assert "'sasl.username': 'alice'" in repr(secured.kafka_properties("kafka_conn"))
    assert "'sasl.password': '********'" in repr(secured.kafka_properties("kafka_conn"))


def test_show_secrets_and_connections(secured):
    assert secured.show_secrets() == [{"name": n, "comment": ""}
                                      for n in ("client_key", "csr_password", "kafka_password")]
    assert secured.show_connections() == [
        {"name": "csr", "type": "confluent-schema-registry", "comment": ""},
        {"name": "kafka_conn", "type": "kafka", "comment": ""},
    ]


def test_drop(secured):
    with pytest.raises(StatementError, match="cannot drop secret 'kafka_password': still depended upon by "
                                             "connection 'kafka_conn'"):
        secured.drop("SECRET", "kafka_password")
    secured.drop("CONNECTION", "kafka_conn")
    secured.drop("SECRET", "kafka_password")
    assert [s["name"] for s in secured.show_secrets()] == ["client_key", "csr_password"]
    with pytest.raises(StatementError, match="unknown catalog item 'kafka_conn'"):
        secured.drop("CONNECTION", "kafka_conn")
    secured.drop("CONNECTION", "kafka_conn", if_exists=True)


def test_names_are_one_namespace(secured):
    with pytest.raises(StatementError, match="catalog item 'csr' already exists"):
        run(secured, "CREATE SECRET csr AS 'x'")
    run(secured, "CREATE SECRET IF NOT EXISTS kafka_password AS 'other'")
    assert secured.kafka_properties("kafka_conn")["sasl.password"] == "hunter2"


@pytest.mark.parametrize(
    "statement, message",
    [
        ("CREATE CONNECTION k TO KAFKA (BROKER 'b', SASL MECHANISMS 'PLAIN', SASL PASSWORD = SECRET nope)",
         "unknown catalog item 'nope'"),
        ("CREATE CONNECTION k TO KAFKA (BROKER 'b', SASL MECHANISMS 'PLAIN', SASL PASSWORD = 'plain text')",
         "SASL PASSWORD must be a SECRET"),
        ("CREATE CONNECTION k TO KAFKA (SECURITY PROTOCOL = 'SSL')",
         "must set one of BROKER, BROKERS, or AWS PRIVATELINK"),
        ("CREATE CONNECTION k TO KAFKA (BROKER 'b', URL 'http://x')", "KAFKA connections have no option URL"),
        ("CREATE CONNECTION r TO CONFLUENT SCHEMA REGISTRY (BROKER 'b')",
         "CONFLUENT SCHEMA REGISTRY connections have no option BROKER"),
        ("CREATE CONNECTION r TO CONFLUENT SCHEMA REGISTRY (USERNAME 'u')",
         "CONFLUENT SCHEMA REGISTRY connections need a URL"),
        ("CREATE CONNECTION k TO KAFKA (BROKER 'b', SASL USERNAME 'u')",
         "SASL USERNAME and SASL PASSWORD need SASL MECHANISMS"),
    ],
)
def test_invalid_connections(statement, message):
    with pytest.raises(StatementError, match=message):
        run(Connections(), statement)


def test_a_connection_of_the_wrong_kind(secured):
    with pytest.raises(StatementError, match="csr is not a KAFKA CONNECTION"):
        secured.kafka_properties("csr")
    with pytest.raises(StatementError, match="kafka_conn is not a CONFLUENT SCHEMA REGISTRY CONNECTION"):
        secured.registry_properties("kafka_conn")
    with pytest.raises(StatementError, match="unknown catalog item 'nope'"):
        secured.kafka_properties("nope")


def test_endpoint_is_the_address_and_the_rest_of_the_properties(secured):
    kafka = secured.endpoint("kafka_conn", "KAFKA")
    assert (kafka.kind, kafka.address) == ("KAFKA", "broker:9093")
    assert "bootstrap.servers" not in kafka.properties and kafka.properties["sasl.password"] == "hunter2"
    assert "hunter2" not in repr(kafka)
    registry = secured.endpoint("csr")  # any kind
    assert (registry.kind, registry.address) == ("CONFLUENT SCHEMA REGISTRY", "https://registry:8081")
    assert registry.properties == {"basic.auth.user.info": "bob:s3cret"}
    with pytest.raises(StatementError, match="^csr is not a KAFKA CONNECTION"):
        secured.endpoint("csr", "KAFKA")
    with pytest.raises(StatementError, match="^unknown catalog item 'nope'"):
        secured.endpoint("nope")


def test_a_connection_configures_only_the_clients_of_what_names_it():
    """Two identities for one address, the session's own among them: each client gets its own
    properties, and the plain address (the session's clients) none of the connections'."""
    import pickle

    from kafkasql_magic import clientconf
    from kafkasql_magic.kafka.admin import client_conf

    address = "127.0.0.1:59092"
    registry = run(Connections(), "CREATE SECRET pw AS 'p'", "CREATE SECRET ro_pw AS 'q'",
                   f"CREATE CONNECTION rw TO KAFKA (BROKER '{address}', SECURITY PROTOCOL = SASL_PLAINTEXT, "
                   "SASL MECHANISMS = 'PLAIN', SASL USERNAME = 'writer', SASL PASSWORD = SECRET pw)",
                   f"CREATE CONNECTION ro TO KAFKA (BROKER '{address}', SECURITY PROTOCOL = SASL_PLAINTEXT, "
                   "SASL MECHANISMS = 'PLAIN', SASL USERNAME = 'reader', SASL PASSWORD = SECRET ro_pw)",
                   "CREATE CONNECTION csr TO CONFLUENT SCHEMA REGISTRY (URL 'http://127.0.0.1:58081', "
                   "USERNAME 'bob', PASSWORD = SECRET pw)")
    rw, ro = registry.endpoint("rw").address, registry.endpoint("ro").address
    assert rw == ro == address
    assert client_conf(rw)["sasl.username"] == "writer" and client_conf(ro)["sasl.username"] == "reader"
    assert "sasl.username" not in client_conf(address) and clientconf.kafka_properties(address) == {}
    assert clientconf.source_options(rw)[clientconf.SECRET_OPTION + "sasl.password"] == "p"
    url = registry.endpoint("csr").address
    assert clientconf.registry_client_conf(url, {})["basic.auth.user.info"] == "bob:p"
    assert "basic.auth.user.info" not in clientconf.registry_client_conf("http://127.0.0.1:58081", {})
    assert "p" not in repr(rw).replace(address, "")  # its repr names the connection, never a secret
    assert client_conf(pickle.loads(pickle.dumps(rw)))["sasl.username"] == "writer"  # to the executors
