"""Replaying the command topic without Spark or a broker: connections are logged with secret
references only, and a connection whose secret is missing waits for CREATE SECRET."""

from __future__ import annotations

import pytest

import kafkasql_magic as ks
from kafkasql_magic import sql as sqlparse
from kafkasql_magic.dialects.connections import SecretMissing
from kafkasql_magic.sinks.command_log import Command, logged

MZ = "materialize"
CONNECTION = ("CREATE CONNECTION kc TO KAFKA (BROKER 'nowhere.invalid:9092', SASL MECHANISMS = 'PLAIN', "
              "SASL USERNAME = 'u', SASL PASSWORD = SECRET pw) WITH (VALIDATE = false)")


def parsed(text: str):
    return sqlparse.parse_statement(text, dialect=MZ)


def test_connections_are_logged_and_secrets_never():
    assert logged(parsed(CONNECTION))
    assert logged(parsed("DROP CONNECTION kc"))
    assert not logged(parsed("CREATE SECRET pw AS 'hunter2'"))
    assert not logged(parsed("DROP SECRET pw"))


@pytest.fixture
def session():
    s = ks.Session(bootstrap_servers="nowhere.invalid:9092", dialect=MZ)
    yield s


def test_a_connection_without_its_secret_waits_and_says_which_secret(session, monkeypatch):
    monkeypatch.delenv("KAFKASQL_SECRET_PW", raising=False)
    message = session.persistent.restore([Command(CONNECTION, MZ, {})])
    assert message == ("Restored 0 source(s) and restarted 0 persistent queries from 1 command(s); "
                       "1 command(s) wait for secrets: CREATE CONNECTION kc TO KAFKA (BROKER "
                       "'nowhere.invalid:9092': connection 'kc' needs secret 'pw', which this "
                       "session does not have (secret values are never written to the command topic): "
                       "re-create it with CREATE SECRET pw AS '...'")
    with pytest.raises(SecretMissing, match=r"re-create it with CREATE SECRET pw AS '\.\.\.'"):
        session.catalog.connection("kc", "KAFKA")
    assert session.sql("SHOW CONNECTIONS").empty
    resumed = session.sql("CREATE SECRET pw AS 'hunter2'")
    assert resumed == "Replayed 1 command(s) that waited for secrets"
    endpoint = session.catalog.connection("kc", "KAFKA")
    assert endpoint.properties["sasl.password"] == "hunter2" and session.persistent.replay.waiting == []
    assert session.sql("CREATE SECRET other AS 'x'") is None  # nothing waits any more


def test_a_secret_in_the_environment_is_used_at_replay(session, monkeypatch):
    monkeypatch.setenv("KAFKASQL_SECRET_PW", "from-env")
    message = session.persistent.restore([Command(CONNECTION, MZ, {})])
    assert "wait" not in message and "failed" not in message
    assert session.catalog.connection("kc", "KAFKA").properties["sasl.password"] == "from-env"
    assert session.sql("SHOW SECRETS").to_dict("records") == [{"name": "pw", "comment": ""}]


def test_a_waiting_connection_dropped_later_in_the_log_no_longer_waits(session, monkeypatch):
    monkeypatch.delenv("KAFKASQL_SECRET_PW", raising=False)
    message = session.persistent.restore([Command(CONNECTION, MZ, {}), Command("DROP CONNECTION kc", MZ, {})])
    assert "wait" not in message and "failed" not in message
    assert session.persistent.replay.waiting == [] and session.catalog.connections.waiting == {}
    with pytest.raises(ks.KStreamError, match="unknown catalog item 'kc'"):
        session.catalog.connection("kc")


class _Log:
    """A command topic in memory."""

    def __init__(self):
        self.records: list[bytes] = []

    def append(self, command: Command) -> None:
        self.records.append(command.to_json())


def test_a_secret_setting_is_named_in_the_command_topic_never_written():
    s = ks.Session(bootstrap_servers="secret-setting.invalid:9092", dialect=MZ)
    s.commands = _Log()
    s.sql("SET 'sasl.password'='Set-Pw-31x'; SET 'auto.offset.reset'='earliest';", dialect="ksql")
    s.sql(CONNECTION.replace("SECRET pw", "SECRET pw2").replace("kc", "kc2").replace("'u'", "'u2'")
          .replace("CREATE CONNECTION", "CREATE SECRET pw2 AS 'x-x-x-x'; CREATE CONNECTION"))
    [record] = s.commands.records
    assert b"Set-Pw-31x" not in record
    command = Command.from_json(record)
    assert command.secrets == ("sasl.password",) and "sasl.password" not in command.settings
    assert command.settings["auto.offset.reset"] == "earliest"


def test_a_secret_setting_comes_back_from_the_session_or_the_environment_or_is_named(monkeypatch):
    from kafkasql_magic import clientconf

    logged = Command.of("CREATE CONNECTION kc TO KAFKA (BROKER 'b:1') WITH (VALIDATE = false)", MZ,
                        {"sasl.password": "gone", "sasl.username": "u"})
    monkeypatch.delenv("KAFKASQL_SECRET_SASL_PASSWORD", raising=False)
    lacking = ks.Session(bootstrap_servers="replay-lacks.invalid:9092", dialect=MZ)
    assert lacking.persistent.restore([logged]).endswith(
        "; not restored: 'sasl.password' (secret values are never written to the command topic): give it with "
        "connect(config=...), SET or KAFKASQL_SECRET_SASL_PASSWORD")
    given = ks.Session(bootstrap_servers="replay-given.invalid:9092", dialect=MZ, config={"sasl.password": "own"})
    assert "not restored" not in given.persistent.restore([logged])
    assert clientconf.kafka_properties("replay-given.invalid:9092")["sasl.password"] == "own"
    monkeypatch.setenv("KAFKASQL_SECRET_SASL_PASSWORD", "from-env-31")
    env = ks.Session(bootstrap_servers="replay-env.invalid:9092", dialect=MZ)
    assert "not restored" not in env.persistent.restore([logged])
    assert clientconf.kafka_properties("replay-env.invalid:9092")["sasl.password"] == "from-env-31"
    assert env.settings["sasl.password"] == "from-env-31"


def test_a_state_dir_without_a_service_id_says_it_restores_nothing(tmp_path, capsys):
    from kafkasql_magic.session import connect

    connect("no-service-id.invalid:9092", state_dir=str(tmp_path))
    printed = capsys.readouterr().out
    assert printed.startswith(f"No service_id: nothing is restored from state_dir '{tmp_path}', and statements are "
                              "not logged, so nothing will be restored next time either.")
    assert "connect(..., service_id='app', state_dir=...)" in printed
    connect("no-service-id.invalid:9092")  # no state_dir: nothing to say
    assert capsys.readouterr().out == ""
