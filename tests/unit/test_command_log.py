"""The command topic's records and which logged queries a replay restarts."""

from __future__ import annotations

from kafkasql_magic import sql
from kafkasql_magic.sinks.command_log import Command, still_running, topic_name


def parse(command):
    return sql.parse_statement(command.statement, dialect=command.dialect)


def test_topic_name_and_round_trip():
    assert topic_name("app") == "_kafkasql_app_command_topic"
    command = Command("CREATE STREAM O AS SELECT * FROM S;", "ksql", {"auto.offset.reset": "earliest"}, "CSAS_O_1")
    assert Command.from_json(command.to_json()) == command


def test_terminated_queries_are_not_restarted():
    log = [Command("CREATE STREAM S (ID INT KEY) WITH (kafka_topic='s', value_format='JSON');", "ksql", {}),
           Command("CREATE STREAM A AS SELECT * FROM S;", "ksql", {}, "CSAS_A_1"),
           Command("CREATE STREAM B AS SELECT * FROM S;", "ksql", {}, "CSAS_B_2"),
           Command("INSERT INTO B SELECT * FROM A;", "ksql", {}, "INSERTQUERY_3"),
           Command("TERMINATE csas_a_1;", "ksql", {})]
    assert still_running(log, parse) == {"CSAS_B_2", "INSERTQUERY_3"}
    assert still_running(log + [Command("TERMINATE ALL;", "ksql", {}),
                                Command("CREATE STREAM C AS SELECT * FROM S;", "ksql", {}, "CSAS_C_4")], parse) \
        == {"CSAS_C_4"}


def test_materialize_sinks_restart_until_dropped():
    sink = "CREATE SINK {} FROM s INTO KAFKA BROKER 'b:1' (TOPIC 't') FORMAT JSON ENVELOPE DEBEZIUM"
    log = [Command(sink.format("a"), "materialize", {}, "SINK_A_1"),
           Command(sink.format("b"), "materialize", {}, "SINK_B_2"),
           Command("DROP SINK a", "materialize", {})]
    assert still_running(log, parse) == {"SINK_B_2"}
    assert still_running(log + [Command(sink.format("a"), "materialize", {}, "SINK_A_3")], parse) \
        == {"SINK_B_2", "SINK_A_3"}  # a sink created again under a dropped sink's name runs


def test_append_produces_the_command_as_one_record(monkeypatch):
    from kafkasql_magic.kafka import producer
    from kafkasql_magic.sinks.command_log import CommandLog

    sent = []
    monkeypatch.setattr(producer, "produce", lambda bootstrap, topic, records, conf=None: sent.append((bootstrap, topic, records)))
    command = Command("CREATE STREAM O AS SELECT * FROM S;", "ksql", {}, "CSAS_O_1")
    CommandLog("b:9092", "app").append(command)
    assert sent == [("b:9092", "_kafkasql_app_command_topic", [{"value": command.to_json()}])]
