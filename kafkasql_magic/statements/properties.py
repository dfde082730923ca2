"""SET / UNSET (ksqlDB properties), DEFINE / UNDEFINE (variables) and TERMINATE."""

from __future__ import annotations

from .. import clientconf
from ..errors import StatementError
from ..sql import ast
from ..sinks.retry import RETRY_INITIAL, RETRY_MAX
from .defaults import DEFAULT_SETTINGS


#: processing.guarantee values (Kafka Streams' list) -> why the value cannot be honoured (None: it can).
GUARANTEES = {
    "at_least_once": None,
    **{value: ("Persistent queries of kafkasql_magic write at-least-once (duplicates limited to the micro-batch "
               "in flight at a crash); exactly-once through Kafka transactions is not implemented: the embedded "
               "broker accepts transactional producers but its read_committed consumers still see aborted "
               "records (bench/transactions.py), so it could not be tested.")
       for value in ("exactly_once", "exactly_once_beta", "exactly_once_v2")},
}


def check_guarantee(value: str) -> None:
    """Refuse a processing.guarantee that persistent queries cannot keep, naming the value."""
    if value not in GUARANTEES:
        raise StatementError(f"Invalid value {value} for configuration processing.guarantee: "
                             f"String must be one of: {', '.join(GUARANTEES)}")
    if GUARANTEES[value] is not None:
        raise StatementError(f"processing.guarantee '{value}' is not supported. {GUARANTEES[value]}")


#: Settings that are a number of milliseconds (a persistent query's retry back-off).
MILLISECONDS = {RETRY_INITIAL[0], RETRY_MAX[0]}


def check_milliseconds(name: str, value: str) -> None:
    """Refuse a value that is not a whole number of milliseconds, in Kafka's words."""
    if not value.strip().isdigit():
        raise StatementError(f"Invalid value {value} for configuration {name}: Not a number of type LONG")


def set_property(session, stmt: ast.SetProperty, text, timeout):
    if stmt.name == "processing.guarantee":
        check_guarantee(stmt.value)
    if stmt.name in MILLISECONDS:
        check_milliseconds(stmt.name, stmt.value)
    if clientconf.is_client_property(stmt.name):
        clientconf.configure(session.bootstrap_servers, session.schema_registry_url, {stmt.name: stmt.value})
    session.settings[stmt.name] = stmt.value
    return None


def unset_property(session, stmt: ast.UnsetProperty, text, timeout):
    clientconf.forget(session.bootstrap_servers, session.schema_registry_url, [stmt.name])
    session.settings.pop(stmt.name, None)
    if stmt.name in DEFAULT_SETTINGS:
        session.settings[stmt.name] = DEFAULT_SETTINGS[stmt.name]
    return None


def define(session, stmt: ast.Define, text, timeout):
    session.variables[stmt.name.lower()] = stmt.value
    return None


def undefine(session, stmt: ast.Undefine, text, timeout):
    session.variables.pop(stmt.name.lower(), None)
    return None


def terminate(session, stmt: ast.TerminateQuery, text, timeout):
    if stmt.query_id is None:
        session.persistent.terminate(None)
    elif stmt.query_id.upper() not in {q.upper() for q in session.queries}:
        session.persistent.terminate(stmt.query_id)
        return None
    ids = {query_id.upper(): query_id for query_id in session.queries}  # ids match case-insensitively
    targets = list(session.queries) if stmt.query_id is None else [ids.get(stmt.query_id.upper(), stmt.query_id)]
    for query_id in targets:
        query = session.queries.pop(query_id, None)
        if query is None:
            raise StatementError(f"Unknown queryId: {query_id}")
        query.stop()
    return None
