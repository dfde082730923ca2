"""DESCRIBE, SHOW and PRINT: what the catalog, the session and the topics hold."""

from __future__ import annotations

from .. import clientconf, types
from ..catalog import ViewDef
from ..engine.columns import result_column
from ..errors import StatementError
from ..kafka import admin, peek
from ..sql import ast
from . import listings
from .queries import prepare


def describe(session, stmt: ast.Describe, text, timeout):
    relation = session.catalog.get(stmt.name)
    if not isinstance(relation, ViewDef):
        return listings.describe(relation)
    prepared = prepare(session, ast.Select(items=(ast.Star(),), source=ast.SourceRef(relation.name)))
    schema = prepared.built.frame.schema
    return listings.describe_columns(relation.name, [
        (n, types.display(types.from_spark(schema[result_column(i)].dataType)))
        for i, n in enumerate(prepared.plan.names)])


#: SHOW <what> -> its listing.
SHOW = {
    "STREAMS": lambda s: listings.show_sources(s.catalog, "STREAM"),
    "TABLES": lambda s: listings.show_sources(s.catalog, "TABLE"),
    "SOURCES": lambda s: listings.show_relations(s.catalog, "SOURCE"),
    "VIEWS": lambda s: listings.show_relations(s.catalog, "VIEW"),
    "TOPICS": lambda s: listings.show_topics([(t.name, t.partitions) for t in admin.list_topics(s.bootstrap_servers)]),
    "QUERIES": lambda s: listings.show_queries(list(s.queries.values())),
    "PROPERTIES": lambda s: listings.show_properties(clientconf.shown(s.settings, s.bootstrap_servers,
                                                                      s.schema_registry_url)),
    "VARIABLES": lambda s: listings.show_variables(s.variables),
}


def show(session, stmt: ast.Show, text, timeout):
    listing = SHOW.get(stmt.what)
    if listing is None:
        raise StatementError(f"SHOW {stmt.what} is not supported.")
    return listing(session)


def print_topic(session, stmt: ast.Print, text, timeout):
    limit = stmt.limit if stmt.limit is not None else (None if stmt.from_beginning else 100)
    records = peek.fetch_records(
        session.bootstrap_servers, stmt.topic, from_beginning=stmt.from_beginning,
        limit=limit, timeout_s=timeout if timeout is not None else (5.0 if limit is None else session.timeout),
    )
    if stmt.interval:
        records = records[:: stmt.interval]
    return listings.print_records(records)
