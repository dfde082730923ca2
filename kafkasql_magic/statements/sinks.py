"""Materialize's CREATE SINK, DROP SINK, SHOW SINKS and SHOW CREATE SINK.

A sink is a persistent query over `SELECT * FROM relation`, read from the earliest offsets
(Materialize's default `SNAPSHOT = true`: the relation's current rows, then its changes;
`WITH (SNAPSHOT = false)` reads them too and writes only the changes, `sinks.snapshot`),
written by `sinks.envelopes.MaterializeSinkWrite`. The session's persistent-query manager
runs it, so SHOW QUERIES lists it and TERMINATE stops it; `session.sinks` keeps its definition.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import pandas as pd

from .. import types
from ..dialects.comments import with_comment_docs
from ..dialects.materialize_sinks import SinkSpec, plan_sink, qualified, with_endpoints
from ..engine.analysis import analyse
from ..engine.analysis.plan import MZ_COLUMNS, TABLE
from ..engine.analysis.row_ids import keyed_by_row_id
from ..engine.columns import SQL_TYPE, result_column
from ..errors import StatementError
from ..formats import Field
from ..kafka import admin
from ..kafka.reach import ensure_reachable
from ..loadgen.counter import counter_of
from ..sinks import mz_encode
from ..sinks.envelopes import MaterializeSinkWrite, sink_entry
from ..sinks.snapshot import LeftOutSnapshot
from ..sql import ast
from ..sql.ast_materialize import CreateSink, DropSink, ShowCreateSink
from ..engine.api import prepare
from ..engine.api import analysed
from .queries import snapshot_ends

#: Materialize's SHOW SINKS columns: a sink has no size or cluster here (NULL).
SHOW_SINKS_COLUMNS = ["name", "type", "size", "cluster"]
SHOW_CREATE_COLUMNS = ["name", "create_sql"]


@dataclass(frozen=True)
class Sink:
    spec: SinkSpec
    query_id: str
    statement: str


def _relation_columns(prepared) -> list[Field]:
    """The relation's columns (a relation of diffs: without mz_timestamp and mz_diff)."""
    schema = prepared.built.frame.schema
    first = len(MZ_COLUMNS) if prepared.plan.diffs else 0
    fields = [schema[result_column(i)] for i in range(len(prepared.plan.names))]
    return [Field(n, types.from_spark(f.dataType), f.metadata.get(SQL_TYPE))  # jsonb, uint8: from the source
            for i, (n, f) in enumerate(zip(prepared.plan.names, fields)) if i >= first]


def _unique_keys(plan) -> list[tuple[str, ...]]:
    """The relation's known unique keys: a table's or a GROUP BY's key columns, when selected."""
    return [tuple(plan.key_names)] if plan.kind == "TABLE" and plan.key_names else []


def _changelog(plan) -> bool:
    """A changelog read as it is (an UPSERT source, a writable table, through views that only
    project and filter): a row a view's WHERE clause rejects leaves the relation, so the sink
    writes its retraction (Materialize: a tombstone for UPSERT, a delete for DEBEZIUM)."""
    while plan is not None:
        if plan.kind != TABLE or plan.aggregating or plan.diffs or plan.table_join is not None or plan.statement.joins:
            return False
        plan = plan.inputs[0].view
    return True


def _writers(spec: SinkSpec):
    """Register the Avro schemas (key and value) before any record is written."""
    key_writer = value_writer = None
    shape = spec.avro
    if spec.key and spec.key_format is not None and spec.key_format.name == "AVRO":
        schema = mz_encode.row_schema(spec.key, shape.key_name, shape.key_doc, dict(shape.key_field_docs),
                                      shape.null_defaults)
        key_writer = mz_encode.register_avro(spec.key_format.registry_url, spec.topic, "key", schema, "row", spec.key,
                                             shape.key_compatibility)
    if spec.value_format.name == "AVRO":
        debezium = spec.envelope == "DEBEZIUM"
        schema = (mz_encode.debezium_schema if debezium else mz_encode.row_schema)(
            spec.columns, shape.value_name, shape.value_doc, dict(shape.value_field_docs), shape.null_defaults)
        value_writer = mz_encode.register_avro(spec.value_format.registry_url, spec.topic, "value", schema,
                                               "debezium" if debezium else "row", spec.columns,
                                               shape.value_compatibility)
    return key_writer, value_writer


def _create_topic(session, spec: SinkSpec, base, bootstrap: str) -> int:
    """The sink's topic, made as the TOPIC options say when it does not exist (else with the
    relation's topic's partition count; compacted for UPSERT); its partition count."""
    options = spec.topic_options
    partitions = options.partition_count or (1 if counter_of(base) is not None else len(
        admin.topic_partitions(base.properties.get("BROKER") or session.bootstrap_servers, base.topic)))
    config = {"cleanup.policy": "compact"} if spec.envelope == "UPSERT" else {}
    admin.create_topic(bootstrap, spec.topic, partitions, replication_factor=options.replication_factor or 1,
                       config={**config, **dict(options.config)} or None, exist_ok=True)
    return len(admin.topic_partitions(bootstrap, spec.topic))


def create_sink(session, stmt: CreateSink, text, timeout, *, resume: bool = False, query_id: str | None = None):
    if stmt.name in session.sinks or stmt.name in session.catalog:
        if stmt.if_not_exists:
            return None
        kind = "sink" if stmt.name in session.sinks else session.catalog.get(stmt.name).kind.lower()
        raise StatementError(f"{kind} {qualified(stmt.name)} already exists")
    stmt = with_comment_docs(stmt, session.catalog.comments)  # as Materialize purifies it
    stmt = with_endpoints(stmt, lambda name, kind: session.catalog.connection(name, kind).address)
    base = session.base_source(stmt.relation)  # an unknown relation fails here, by name
    select = ast.Select(items=(ast.Star(),), source=ast.SourceRef(stmt.relation), emit_changes=True)
    plan = analysed(lambda: analyse(select, session.catalog, session.dialect_now, session.text_now))
    retracts = _changelog(plan)
    prepared = prepare(session, select, reset="earliest", writes=True, plan=plan, deletes_rejected=retracts,
                       persistent=True)
    dialect = session.dialect_now
    spec = plan_sink(stmt, _relation_columns(prepared), _unique_keys(prepared.plan), dialect.untyped_functions())
    bootstrap = spec.broker or session.bootstrap_servers
    ensure_reachable(bootstrap, session.timeout_of(timeout))
    partitions = _create_topic(session, spec, base, bootstrap)
    key_writer, value_writer = _writers(spec)
    write = MaterializeSinkWrite(spec, sink_entry(spec, text), key_writer, value_writer, bootstrap,
                                 diffs=prepared.plan.diffs, row_ids=keyed_by_row_id(prepared.plan),
                                 retractions=retracts, partitions=partitions, dialect=dialect,
                                 left_out=None if spec.snapshot else LeftOutSnapshot(snapshot_ends(session, prepared.plan)))
    running = session.persistent.start("SINK", spec.name, text, prepared, write, select,
                                       resume=resume, query_id=query_id)
    if not spec.snapshot:
        _first_batch_planned(running, session.timeout_of(timeout))
    session.sinks[spec.name] = Sink(spec, running.id, text)
    return running


def _first_batch_planned(running, timeout: float) -> None:
    """Wait until the sink's first micro-batch is planned (Spark logs its offsets), so a change
    made once CREATE SINK returned falls in a later batch, which a sink without its snapshot
    writes. A query that fails to start is retried by its manager: waited for too."""
    first = os.path.join(running.checkpoint, "offsets", "0")
    deadline = time.monotonic() + timeout
    while not os.path.exists(first) and time.monotonic() < deadline:
        time.sleep(0.1)


def drop_sink(session, stmt: DropSink, text, timeout):
    """The sink's query stops; its topic and checkpoint stay (Materialize leaves the topic)."""
    sink = session.sinks.get(stmt.name)
    if sink is None:
        if stmt.if_exists:
            return None
        raise StatementError(f"unknown catalog item '{stmt.name}'")
    if sink.query_id in session.persistent.queries:
        session.persistent.terminate(sink.query_id)
    del session.sinks[stmt.name]
    session.catalog.comments.drop(stmt.name)
    return None


def show_sinks(session) -> pd.DataFrame:
    """Materialize's columns; the topic, envelope and formats are in SHOW CREATE SINK, the
    sink's query and its state in SHOW QUERIES."""
    rows = [[name, "kafka", None, None] for name in sorted(session.sinks)]
    return pd.DataFrame(rows, columns=SHOW_SINKS_COLUMNS)


def show_create_sink(session, stmt: ShowCreateSink, text, timeout) -> pd.DataFrame:
    """The sink's qualified name and its CREATE SINK statement as it was written."""
    sink = session.sinks.get(stmt.name)
    if sink is None:
        raise StatementError(f"unknown catalog item '{stmt.name}'")
    return pd.DataFrame([[qualified(stmt.name).strip('"'), sink.statement]], columns=SHOW_CREATE_COLUMNS)
