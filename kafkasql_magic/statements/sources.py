"""CREATE STREAM / TABLE / SOURCE / VIEW and DROP: the dialect turns the statement into a
catalog entry (with the registry lookups injected here); the topic is checked on Kafka."""

from __future__ import annotations

import time
from dataclasses import replace

from ..catalog import SourceDef, ViewDef
from .. import dialects
from ..dialects import SourceContext
from ..errors import StatementError
from ..dialects import limits
from ..dialects.writable_tables import is_writable
from ..kafka import admin
from ..kafka.offsets import watermarks
from ..kafka.reach import ensure_reachable
from ..kafka.start_position import START_PROPERTY, start_offsets
from ..kafka.time_index import first_offsets_at_or_after
from ..loadgen import counter
from ..sinks.schemas import delete_subjects
from ..sql import ast
from ..sql.ast_materialize import base_relation
from ..sql import ast_materialize as mz_ast
from ..engine.analysis import analyse
from . import connections, constants, custom_types
from ..engine.api import analysed
from .listings import FROM_SOURCE


def _context(session, text: str) -> SourceContext:
    from ..registry.inference import fetch_latest, latest_schema_of

    return SourceContext(settings=session.settings, registry_url=session.schema_registry_url, text=text,
                         infer=session.infer, latest_schema=latest_schema_of, latest_registered=fetch_latest,
                         connection=session.catalog.connection, cell=session.text_now or text)


def create_source(session, stmt: ast.CreateSource, text, timeout):
    source = session.dialect_now.define_source(stmt, _context(session, text))
    if source.name in session.catalog and stmt.if_not_exists:
        return None
    ensure_reachable(session.bootstrap_servers, session.timeout_of(timeout))
    if not admin.topic_exists(session.bootstrap_servers, source.topic):
        partitions = source.properties.get("PARTITIONS")
        if partitions is None:
            raise StatementError(
                f"Topic '{source.topic}' does not exist. If you want to create a new topic for the "
                f"{stmt.kind.lower()} please re-run the statement providing the required 'PARTITIONS' "
                "configuration in the WITH clause (and optionally 'REPLICAS')."
            )
        admin.create_topic(session.bootstrap_servers, source.topic, partitions=int(partitions))
    session.catalog.add(source, or_replace=stmt.or_replace, if_not_exists=stmt.if_not_exists)
    return None


def create_kafka_source(session, stmt: ast.CreateKafkaSource, text, timeout):
    if stmt.if_not_exists and stmt.name in session.catalog:
        return None
    source = session.dialect_now.define_source(stmt, _context(session, text))
    bootstrap = source.properties.get("BROKER") or session.bootstrap_servers
    ensure_reachable(bootstrap, session.timeout_of(timeout))
    if not admin.topic_exists(bootstrap, source.topic):
        raise StatementError(f"Topic '{source.topic}' does not exist (broker {bootstrap}).")
    first = _first_offsets(bootstrap, stmt)
    if first is not None:
        source = replace(source, properties={**source.properties, START_PROPERTY: first})
    session.catalog.add(source)
    return None


def create_load_generator(session, stmt: mz_ast.CreateLoadGenerator, text, timeout):
    """Materialize's CREATE SOURCE ... FROM LOAD GENERATOR: a source of no topic, whose values
    count from now (loadgen/counter.py)."""
    source = counter.define(stmt, time.time_ns() // 1_000, text)
    session.catalog.add(source, if_not_exists=stmt.if_not_exists)
    return None


def create_source_table(session, stmt: mz_ast.CreateSourceTable, text, timeout):
    """Materialize's current form: the source says where to read (topic, connection, first
    offsets), the table how to decode; it is a source of its own in the catalog."""
    if stmt.if_not_exists and stmt.name in session.catalog:
        return None
    source = session.catalog.get(stmt.source)
    if not isinstance(source, SourceDef) or not dialects.get(source.dialect).has_source_tables:
        raise StatementError(f"{stmt.source} is not a Kafka source created with CREATE SOURCE ... FROM KAFKA")
    if stmt.reference is not None and stmt.reference != source.topic:
        raise StatementError(f"reference {stmt.reference} not found in source {source.name} "
                             f"(it reads topic {source.topic})")
    as_source = ast.CreateKafkaSource(
        stmt.name, source.topic, stmt.columns, source.properties.get("BROKER"), stmt.key_format,
        stmt.value_format, stmt.format, stmt.includes, stmt.envelope, stmt.if_not_exists,
        connection=source.properties.get("CONNECTION"), value_errors_column=stmt.value_errors_column,
        line=stmt.line, column=stmt.column)
    table = session.dialect_now.define_source(as_source, _context(session, text))
    inherited = {k: source.properties[k] for k in ("BROKER", START_PROPERTY) if k in source.properties}
    table = replace(table, properties={**table.properties, **inherited, FROM_SOURCE: source.name})
    session.catalog.add(table)
    return None


def _first_offsets(bootstrap: str, stmt: ast.CreateKafkaSource) -> dict[int, int] | None:
    """START OFFSET / START TIMESTAMP as {partition: first offset}, for every partition now."""
    if stmt.start_offsets is None and stmt.start_timestamp is None:
        return None
    marks = watermarks(bootstrap, stmt.topic)
    return start_offsets(
        stmt.topic, sorted(marks), {p: low for p, (low, _) in marks.items()},
        start_offsets=stmt.start_offsets, start_timestamp=stmt.start_timestamp, now_ms=int(time.time() * 1000),
        offsets_for_time=lambda parts, ts: first_offsets_at_or_after(bootstrap, stmt.topic, parts, ts))


def create_view(session, stmt: ast.CreateView, text, timeout):
    """A view is planned when created, as Materialize plans it: an unknown column or a type
    mistake in its query is refused here, with a caret, not when the view is queried."""
    session.base_source(base_relation(stmt.query.source))  # the view must read an existing source
    limits.check_view_cycle(stmt.name, stmt.query, session.catalog)
    analysed(lambda: analyse(stmt.query, session.catalog, session.dialect_now, session.text_now))
    view = ViewDef(stmt.name, stmt.query, statement=text, dialect=session.dialect_now.name)
    session.catalog.add(view, or_replace=stmt.or_replace, if_not_exists=stmt.if_not_exists)
    return None


def drop(session, stmt: ast.Drop, text, timeout):
    if stmt.kind in ("SECRET", "CONNECTION"):
        return connections.drop(session, stmt.kind, stmt.name, stmt.if_exists)
    if stmt.kind == "TYPE":
        return custom_types.drop_type(session, stmt.name, stmt.if_exists)
    if stmt.name in session.catalog:
        dropped = session.catalog.get(stmt.name)
        tables = sorted(t.name for t in session.catalog
                        if getattr(t, "properties", {}).get(FROM_SOURCE) == dropped.name)
        if tables:
            raise StatementError(f"cannot drop source '{dropped.name}': still depended upon by "
                                 + ", ".join(f"table '{t}'" for t in tables))
        if stmt.kind == "TABLE" and FROM_SOURCE in getattr(dropped, "properties", {}):
            stmt = replace(stmt, kind="SOURCE")  # a source table, whatever its envelope
        session.persistent.check_drop(dropped.name)
    source = session.catalog.drop(stmt.kind, stmt.name, if_exists=stmt.if_exists)
    if isinstance(source, ViewDef):  # a VALUES view's rows go with it
        constants.dropped(session, source.name)
    if source is not None and is_writable(source):  # a writable table's topic is its own
        admin.delete_topic(session.bootstrap_servers, source.topic, missing_ok=True)
    elif source is not None and stmt.delete_topic:
        admin.delete_topic(session.bootstrap_servers, source.topic)
        delete_subjects(session.schema_registry_url, source.topic)
    return None
