"""Materialize's CREATE SECRET / CREATE CONNECTION / DROP SECRET | CONNECTION / SHOW SECRETS |
CONNECTIONS: the catalog's `connections` hold them. A connection's client properties travel
with the address its sources and sinks read (`clientconf.Address`): they reach those clients
only, never the session's or another connection's for the same address."""

from __future__ import annotations

import pandas as pd

from .. import clientconf
from ..dialects.connections import KAFKA
from ..errors import StatementError
from ..kafka.reach import ensure_reachable
from ..sql import ast_materialize as mz_ast


def create_secret(session, stmt: mz_ast.CreateSecret, text, timeout):
    """The secret, then what the command topic restored that waited for it (a connection and
    the sinks and sources over it): what resumed, or None."""
    session.catalog.connections.create_secret(stmt)
    return session.persistent.replay.resume()


def create_connection(session, stmt: mz_ast.CreateConnection, text, timeout):
    """Declared and (unless WITH (VALIDATE = false)) reached, as Materialize does: a connection
    that does not answer is not created, and leaves nothing behind."""
    connections = session.catalog.connections
    if stmt.if_not_exists and stmt.name in connections.connections:
        return None
    connections.create_connection(stmt)
    endpoint = connections.endpoint(stmt.name)
    try:
        if stmt.validate and endpoint.kind == KAFKA:
            ensure_reachable(endpoint.address, session.timeout_of(timeout))
        elif stmt.validate:
            _reach_registry(endpoint.address)
    except Exception:
        connections.drop("CONNECTION", stmt.name)
        raise
    clientconf.changed()  # a recipe kept for a source of the same name may hold an older one's
    return None


def drop(session, kind: str, name: str, if_exists: bool) -> None:
    """DROP SECRET | CONNECTION; a connection a source reads through stays."""
    if kind == "CONNECTION":
        users = sorted(s.name for s in session.catalog
                       if name in (getattr(s, "properties", {}).get("CONNECTION"),
                                   getattr(s, "properties", {}).get("REGISTRY CONNECTION")))
        if users:
            raise StatementError(f"cannot drop connection '{name}': still depended upon by "
                                 + ", ".join(f"source '{u}'" for u in users))
    session.catalog.connections.drop(kind, name, if_exists)
    session.catalog.comments.drop(name)


def show_secrets(session) -> pd.DataFrame:
    return pd.DataFrame(_commented(session, session.catalog.connections.show_secrets()), columns=["name", "comment"])


def show_connections(session) -> pd.DataFrame:
    return pd.DataFrame(_commented(session, session.catalog.connections.show_connections()),
                        columns=["name", "type", "comment"])


def _commented(session, rows: list[dict]) -> list[dict]:
    """SHOW rows with each object's COMMENT ON text, where it has one."""
    return [{**row, "comment": session.catalog.comments.of(row["name"]) or row["comment"]} for row in rows]


def _reach_registry(url: str) -> None:
    """A registry that answers a request for its subjects (credentials checked too)."""
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.error import SchemaRegistryError

    conf = clientconf.registry_client_conf(url, {"timeout": 5, "max.retries": 0})
    try:
        SchemaRegistryClient(conf).get_subjects()
    except SchemaRegistryError as exc:
        raise StatementError(f"failed to connect to the schema registry at {url}: "
                             f"HTTP {exc.http_status_code}: {exc.error_message}") from None
    except Exception as exc:  # refused, DNS, timeouts, TLS
        raise StatementError(f"failed to connect to the schema registry at {url}: {exc}") from None
