"""Replaying the command topic at connect, and what waits for a secret.

The catalog comes back statement by statement, and the queries still running restart from
their checkpoints. Secrets are the exception: their values are never written to the topic
(CREATE SECRET and DROP SECRET are not logged), so a restored connection needs its secrets
again. Each comes from the environment variable `KAFKASQL_SECRET_<NAME>` when set (headless
runs), or else the connection waits, with every later command that fails meanwhile (a sink or
source over it), until `CREATE SECRET name AS '...'` runs in the new session: that statement
replays what waited. Secret session properties (`SET 'sasl.password'=...`) are named in the
log, never written: the new session's own value is used (`connect(config=...)`), else the
environment's `KAFKASQL_SECRET_<PROPERTY>` (`KAFKASQL_SECRET_SASL_PASSWORD`), else the replay
says which property it lacks.
"""

from __future__ import annotations

import itertools
import os
import re

from .. import clientconf, dialects
from ..dialects.connections import SecretMissing
from ..errors import KStreamError
from ..sql import ast
from ..sql.ast_materialize import CreateConnection, CreateSecret, CreateSink, DropSink
from ..sql.ast_tables import CreateTable, CreateValuesView
from .command_log import Command, still_running

SECRET_ENV = "KAFKASQL_SECRET_"


def secret_env(name: str) -> str:
    """The environment variable holding secret (or secret property) `name`:
    `KAFKASQL_SECRET_<NAME>`, other characters than letters and digits as `_`."""
    return SECRET_ENV + re.sub(r"[^A-Za-z0-9]", "_", name).upper()


def secret_from_env(name: str) -> str | None:
    """Secret `name` as the environment supplies it (`KAFKASQL_SECRET_<NAME>`), or None."""
    return os.environ.get(secret_env(name))


class Replay:
    """The command topic replayed into a session's catalog and persistent queries."""

    def __init__(self, session):
        self.session = session
        self.waiting: list[tuple[Command, str]] = []  # (command, why) in log order
        self._running: set[str] = set()

    def restore(self, commands: list[Command]) -> str:
        """Replay `commands`; what was restored (a command that fails now is reported, not fatal)."""
        self._running = still_running(commands, _parse)
        lacking = self._secret_settings(commands)
        failures = [f for f in (self._replay(c) for c in commands) if f]
        manager = self.session.persistent
        numbers = [int(q.rsplit("_", 1)[1]) for q in (c.query_id for c in commands)
                   if q and q.rsplit("_", 1)[1].isdigit()]
        manager._numbers = itertools.count(max(numbers, default=0) + 1)
        queries = manager.queries
        message = (f"Restored {len(list(self.session.catalog))} source(s) and restarted "
                   f"{len(queries)} persistent quer{'y' if len(queries) == 1 else 'ies'}"
                   f"{' (' + ', '.join(queries) + ')' if queries else ''} from {len(commands)} command(s)")
        return message + self._failed(failures) + self._waiting() + _lacking(lacking)

    def resume(self) -> str | None:
        """After CREATE SECRET: replay what waited for it; what resumed, or None if nothing did."""
        if not self.waiting:
            return None
        waiting, self.waiting = self.waiting, []
        before = set(self.session.persistent.queries)
        failures = [f for f in (self._replay(c) for c, _ in waiting) if f]
        resumed = [q for q in self.session.persistent.queries if q not in before]
        if len(self.waiting) == len(waiting) and not failures:
            return None
        return (f"Replayed {len(waiting) - len(self.waiting)} command(s) that waited for secrets"
                f"{'; restarted ' + ', '.join(resumed) if resumed else ''}" + self._failed(failures) + self._waiting())

    def _secret_settings(self, commands: list[Command]) -> list[str]:
        """Secret properties the logged commands ran under (never logged): each the session has
        already (connect(config=...)) stays, one the environment holds is set as SET sets it;
        the names of those found nowhere."""
        session, lacking = self.session, []
        for name in dict.fromkeys(n for c in commands for n in c.secrets):
            if _has_property(session, name):
                continue
            value = secret_from_env(name)
            if value is None:
                lacking.append(name)
                continue
            if clientconf.is_client_property(name):
                clientconf.configure(session.bootstrap_servers, session.schema_registry_url, {name: value})
            session.settings[name] = value
        return lacking

    # ------------------------------------------------------------ one command
    def _replay(self, command: Command) -> str | None:
        """Run one logged command again; a failure's description, or None (done, or waiting)."""
        stmt = _parse(command)
        session = self.session
        saved = dict(session.settings)
        session.settings.update(command.settings)
        session.dialect_now = dialects.get(command.dialect)  # a statement runs in its own dialect
        try:
            self._run(stmt, command)
        except SecretMissing as exc:
            self.waiting.append((command, str(exc)))
        except KStreamError as exc:
            if self.waiting:  # it may need what waits (a view over a source over the connection)
                self.waiting.append((command, f"{exc} (after a command that waits for a secret)"))
                return None
            return f"{_first_line(command)}: {exc}"
        finally:
            session.settings = saved
        return None

    def _run(self, stmt, command: Command) -> None:
        session, manager = self.session, self.session.persistent
        running = command.query_id in self._running
        if isinstance(stmt, CreateConnection):
            self._connect(stmt, command)
        elif isinstance(stmt, ast.Drop) and stmt.kind == "CONNECTION" and \
                session.catalog.connections.waiting.pop(stmt.name, None) is not None:
            self.waiting = [(c, why) for c, why in self.waiting if not _declares(c, stmt.name)]
        elif isinstance(stmt, ast.CreateAsSelect):
            manager.create_as_select(stmt, command.statement, resume=True, query_id=command.query_id,
                                     start=running)
        elif isinstance(stmt, ast.InsertSelect):
            if running:
                manager.insert_select(stmt, command.statement, resume=True, query_id=command.query_id)
        elif isinstance(stmt, (CreateSink, DropSink)):  # a dropped sink is not restarted
            if running and isinstance(stmt, CreateSink):
                session.replay(stmt, command.statement, resume=True, query_id=command.query_id)
        elif isinstance(stmt, (CreateTable, CreateValuesView)):  # their rows are in their topics: kept
            session.replay(stmt, command.statement, resume=True)
        elif not isinstance(stmt, ast.TerminateQuery):
            session.replay(stmt, command.statement)

    def _connect(self, stmt: CreateConnection, command: Command) -> None:
        """A connection whose secrets are all here (or in the environment) is created; otherwise
        it waits, and using it says which secret to create."""
        connections = self.session.catalog.connections
        for name in connections.missing_secrets(stmt):
            value = secret_from_env(name)
            if value is not None:
                connections.create_secret(CreateSecret(name=name, value=value))
        missing = connections.missing_secrets(stmt)
        if missing:
            connections.waiting[stmt.name] = missing
            raise SecretMissing(stmt.name, missing)
        connections.waiting.pop(stmt.name, None)
        self.session.replay(stmt, command.statement)

    # ------------------------------------------------------------ messages
    @staticmethod
    def _failed(failures: list[str]) -> str:
        return f"; {len(failures)} command(s) failed: " + "; ".join(failures) if failures else ""

    def _waiting(self) -> str:
        if not self.waiting:
            return ""
        return (f"; {len(self.waiting)} command(s) wait for secrets: "
                + "; ".join(f"{_first_line(c)}: {why}" for c, why in self.waiting))


def _has_property(session, name: str) -> bool:
    """Whether `session` has property `name` set: SET, or a client property it was given."""
    if name in session.settings:
        return True
    registry = clientconf.registry_name(name)
    if registry is not None:
        return registry in clientconf.registry_properties(session.schema_registry_url or "")
    return name.removeprefix("kafka.") in clientconf.kafka_properties(session.bootstrap_servers)


def _lacking(names: list[str]) -> str:
    if not names:
        return ""
    return ("; not restored: " + ", ".join(f"'{n}'" for n in names) + " (secret values are never written to the "
            "command topic): give " + ("it" if len(names) == 1 else "them") + " with connect(config=...), SET or "
            + ", ".join(secret_env(n) for n in names))


def _parse(command: Command):
    from .. import sql as sqlparse

    return sqlparse.parse_statement(command.statement, dialect=command.dialect)


def _first_line(command: Command) -> str:
    return command.statement.splitlines()[0][:60]


def _declares(command: Command, connection: str) -> bool:
    stmt = _parse(command)
    return isinstance(stmt, CreateConnection) and stmt.name == connection
