"""The command topic: every successful DDL and persistent-query statement, replayed at connect.

As ksqlDB's command topic, `_kafkasql_<service id>_command_topic` holds the statements in the
order they succeeded, each with the session properties it ran under and, for a persistent
query, its id. A secret property (`SET 'sasl.password'=...`) is named, never written: its value
comes back at replay from the session or the environment (`sinks.replay`). A new session with the same service id replays them: the catalog comes back,
and the queries that were still running restart from their checkpoints (same ids, so the
same checkpoint folders under the state directory).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from .. import redact
from ..kafka import admin
from ..sql import ast
from ..sql.ast_materialize import CommentOn, CreateConnection, CreateLoadGenerator, CreateSink, CreateType, DropSink
from ..sql.ast_tables import CreateTable, CreateValuesView

#: Statements the command topic keeps. Materialize's connections are kept as written: an option
#: holding a secret names it (`SASL PASSWORD = SECRET pw`), so no secret value is ever logged;
#: CREATE SECRET and DROP SECRET are not logged at all (see `logged`). A writable table's rows
#: are in its own topic: CREATE TABLE is logged, its INSERT, UPDATE and DELETE are not.
LOGGED = (ast.CreateSource, ast.CreateKafkaSource, ast.CreateView, ast.Drop, ast.CreateAsSelect,
          ast.InsertSelect, ast.TerminateQuery, CreateSink, DropSink, CreateConnection, CreateTable,
          CreateValuesView, CreateLoadGenerator, CreateType, CommentOn)
TOPIC_CONFIG = {"retention.ms": "-1", "cleanup.policy": "delete"}


def logged(stmt) -> bool:
    """Whether a successful `stmt` goes to the command topic (never a secret)."""
    return isinstance(stmt, LOGGED) and not (isinstance(stmt, ast.Drop) and stmt.kind == "SECRET")


def topic_name(service_id: str) -> str:
    return f"_kafkasql_{service_id}_command_topic"


@dataclass(frozen=True)
class Command:
    statement: str
    dialect: str
    settings: dict
    query_id: str | None = None
    #: secret properties in force when it ran, by name only (their values are never logged)
    secrets: tuple[str, ...] = ()

    @classmethod
    def of(cls, statement: str, dialect: str, settings: dict, query_id: str | None = None) -> "Command":
        """The command for a statement that ran under `settings`: secret ones named, not kept."""
        secrets = tuple(sorted(name for name in settings if redact.is_secret(name)))
        return cls(statement, dialect, {k: v for k, v in settings.items() if k not in secrets}, query_id, secrets)

    def to_json(self) -> bytes:
        return json.dumps({"statement": self.statement, "dialect": self.dialect, "settings": self.settings,
                           "query_id": self.query_id, "secrets": list(self.secrets)}).encode()

    @classmethod
    def from_json(cls, data: bytes) -> "Command":
        d = json.loads(data)
        return cls(d["statement"], d.get("dialect", "ksql"), d.get("settings") or {}, d.get("query_id"),
                   tuple(d.get("secrets") or ()))


def still_running(commands: list[Command], parse) -> set[str]:
    """Ids of the persistent queries not terminated later in the log (`parse(command)` -> AST)."""
    running: list[str] = []
    sinks: dict[str, str] = {}  # Materialize sink name -> its query id
    for command in commands:
        stmt = parse(command)
        if isinstance(stmt, (ast.CreateAsSelect, ast.InsertSelect, CreateSink)) and command.query_id:
            running.append(command.query_id)
            if isinstance(stmt, CreateSink):
                sinks[stmt.name] = command.query_id
        elif isinstance(stmt, DropSink):
            running = [q for q in running if q != sinks.get(stmt.name)]
        elif isinstance(stmt, ast.TerminateQuery):
            running = [] if stmt.query_id is None else [q for q in running if q != stmt.query_id.upper()]
    return set(running)


class CommandLog:
    def __init__(self, bootstrap: str, service_id: str, conf: dict | None = None):
        self.bootstrap = bootstrap
        self.topic = topic_name(service_id)
        self.conf = conf

    def ensure(self) -> None:
        admin.create_topic(self.bootstrap, self.topic, 1, config=TOPIC_CONFIG, exist_ok=True, conf=self.conf)

    def append(self, command: Command) -> None:
        from ..kafka.producer import produce

        produce(self.bootstrap, self.topic, [{"value": command.to_json()}], conf=self.conf)

    def read(self, timeout: float = 10.0) -> list[Command]:
        """Every command, in order (the log is one partition)."""
        from ..kafka.peek import fetch_records

        records = fetch_records(self.bootstrap, self.topic, from_beginning=True, limit=None,
                                timeout_s=timeout, until_end=True, conf=self.conf)
        return [Command.from_json(r["value"]) for r in sorted(records, key=lambda r: r["offset"]) if r["value"]]
