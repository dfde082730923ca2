"""Materialize's CREATE SECRET / CREATE CONNECTION / DROP SECRET | CONNECTION / SHOW SECRETS |
CONNECTIONS: the catalog's `connections` hold them; a connection's client properties are given
to every client made for its address (clientconf), so sources over it read with them."""

from __future__ import annotations

import os
import tempfile

import pandas as pd

from .. import clientconf
from ..dialects.connections import KAFKA, Endpoint
from ..errors import StatementError
from ..kafka.reach import ensure_reachable
from ..sql import ast_materialize as mz_ast

#: PEM texts of a registry connection -> the registry client's file properties.
PEM_FILES = {"ssl.ca.pem": "ssl.ca.location", "ssl.certificate.pem": "ssl.certificate.location",
             "ssl.key.pem": "ssl.key.location"}


def create_secret(session, stmt: mz_ast.CreateSecret, text, timeout):
    """The secret, then what the command topic restored that waited for it (a connection and
    the sinks and sources over it): what resumed, or None."""
    session.catalog.connections.create_secret(stmt)
    return session.persistent.replay.resume()


def create_connection(session, stmt: mz_ast.CreateConnection, text, timeout):
    """Declared, given to the clients of its address, and (unless WITH (VALIDATE = false))
    reached, as Materialize does: a connection that does not answer is not created."""
    connections = session.catalog.connections
    if stmt.if_not_exists and stmt.name in connections.connections:
        return None
    connections.create_connection(stmt)
    endpoint = connections.endpoint(stmt.name)
    try:
        if endpoint.kind == KAFKA:
            clientconf.configure(endpoint.address, None, endpoint.properties)
            if stmt.validate:
                ensure_reachable(endpoint.address, session.timeout_of(timeout))
        else:
            clientconf.configure_registry(endpoint.address, _registry_client_properties(endpoint))
            if stmt.validate:
                _reach_registry(endpoint.address)
    except Exception:
        connections.drop("CONNECTION", stmt.name)
        raise
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


def show_secrets(session) -> pd.DataFrame:
    return pd.DataFrame(session.catalog.connections.show_secrets(), columns=["name", "comment"])


def show_connections(session) -> pd.DataFrame:
    return pd.DataFrame(session.catalog.connections.show_connections(), columns=["name", "type", "comment"])


def _registry_client_properties(endpoint: Endpoint) -> dict[str, str]:
    """The registry client takes TLS material as files: PEM texts are written to private files."""
    props = dict(endpoint.properties)
    for pem, location in PEM_FILES.items():
        if pem in props:
            fd, path = tempfile.mkstemp(prefix=f"kafkasql_{endpoint.name}_", suffix=".pem")
            with os.fdopen(fd, "w", encoding="utf-8") as f:  # mkstemp: readable by this user only
                f.write(props.pop(pem))
            props[location] = path
    return props


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
