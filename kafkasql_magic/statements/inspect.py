"""DESCRIBE, SHOW and PRINT: what the catalog, the session and the topics hold."""

from __future__ import annotations

import pandas as pd

from .. import clientconf, types
from ..catalog import Column, ViewDef
from ..dialects import limits
from ..dialects.pg_types import SHOW_COLUMNS_HEADER
from ..engine.columns import result_column
from ..errors import StatementError
from ..kafka import admin, peek
from ..sql import ast
from . import connections, custom_types, listings
from ..engine.api import prepare
from .sinks import show_sinks


def describe(session, stmt: ast.Describe, text, timeout):
    """DESCRIBE (ksql) or SHOW COLUMNS (Materialize), in the words of the statement's dialect."""
    relation = session.catalog.get(stmt.name, session.dialect_now.name)
    columns = _view_columns(session, relation) if isinstance(relation, ViewDef) else relation.star_columns
    rows = session.dialect_now.show_columns(columns, relation)
    if rows is not None:
        commented = session.catalog.comments.parts(relation.name)  # COMMENT ON COLUMN
        return pd.DataFrame([{**row, "comment": commented.get(row["name"], row["comment"])} for row in rows],
                            columns=list(SHOW_COLUMNS_HEADER))
    if not isinstance(relation, ViewDef):
        return listings.describe(relation)
    return listings.describe_columns(relation.name, [(c.name, types.display(c.type)) for c in columns])


def _view_columns(session, view: ViewDef) -> list[Column]:
    prepared = prepare(session, ast.Select(items=(ast.Star(),), source=ast.SourceRef(view.name)))
    schema = prepared.built.frame.schema
    return [Column(n, types.from_spark(schema[result_column(i)].dataType), role=None)
            for i, n in enumerate(prepared.plan.names)]


#: SHOW <what> -> its listing.
SHOW = {
    "STREAMS": lambda s: listings.show_sources(s.catalog, "STREAM"),
    "TABLES": lambda s: listings.show_sources(s.catalog, "TABLE"),
    "SOURCES": lambda s: listings.show_relations(s.catalog, "SOURCE"),
    "VIEWS": lambda s: listings.show_relations(s.catalog, "VIEW"),
    "TOPICS": lambda s: listings.show_topics([(t.name, t.partitions) for t in admin.list_topics(s.bootstrap_servers)]),
    "PROPERTIES": lambda s: listings.show_properties(clientconf.shown(s.settings, s.bootstrap_servers,
                                                                      s.schema_registry_url)),
    "VARIABLES": lambda s: listings.show_variables(s.variables),
    "SINKS": lambda s: show_sinks(s),
    "SECRETS": connections.show_secrets,
    "CONNECTIONS": connections.show_connections,
    "TYPES": custom_types.show_types,
}


#: SHOW <what> in a dialect whose tables are read from sources (Dialect.has_source_tables).
SOURCE_TABLES_SHOW = {"TABLES": lambda s: listings.show_source_tables(s.catalog)}


def show(session, stmt: ast.Show, text, timeout):
    if stmt.what == "QUERIES":
        return _show_queries(session, stmt.extended)
    own = SOURCE_TABLES_SHOW if session.dialect_now.has_source_tables else {}
    listing = own.get(stmt.what) or SHOW.get(stmt.what)
    if listing is None:
        raise StatementError(f"SHOW {stmt.what} is not supported.")
    return listing(session)


def _show_queries(session, extended: bool):
    """Persistent queries first (with rates, lag and processing-log counts when EXTENDED),
    then the transient push queries running in this session."""

    persistent = session.persistent.show(extended=extended)
    if not session.queries:
        return persistent
    transient = listings.show_queries(list(session.queries.values()), list(persistent.columns))
    return transient if persistent.empty else pd.concat([persistent, transient], ignore_index=True)


def print_topic(session, stmt: ast.Print, text, timeout):
    limits.topic_name(stmt.topic)
    limit = stmt.limit if stmt.limit is not None else (None if stmt.from_beginning else 100)
    records = peek.fetch_records(
        session.bootstrap_servers, stmt.topic, from_beginning=stmt.from_beginning,
        limit=limit, timeout_s=timeout if timeout is not None else (5.0 if limit is None else session.timeout),
    )
    if stmt.interval:
        records = records[:: stmt.interval]
    return listings.print_records(records)
