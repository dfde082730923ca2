"""SELECT, SUBSCRIBE and EXPLAIN through the engine's door (engine.api), then run or describe."""

from __future__ import annotations

import time
from dataclasses import replace

import pandas as pd

from .. import dialects
from ..dialects import limits
from ..engine.analysis import QueryPlan
from ..engine.subscribe.rules import AGGREGATE, emits_snapshot, subscribed
from ..engine.api import plan_of, prepare
from ..engine.api import analysed, select_over_frame
from ..engine.tree import explain_lines, tree_of
from ..catalog import ViewDef
from ..diffs import ChangeTracker, KeyedEnvelope
from ..errors import KStreamError, StatementError
from ..kafka import admin, reads
from ..kafka.offsets import watermarks
from ..kafka.reach import ensure_reachable
from ..kafka.start_position import START_PROPERTY
from ..loadgen.counter import counter_of
from ..results import located_message, to_pandas
from ..runtime import PushQuery, collect_bounded, live_model, stops_on_interrupt
from ..sql import ast
from ..sql.ast_materialize import base_relation

PROCESSING_LOG = "KSQL_PROCESSING_LOG"
PROCESSING_LOG_SCHEMA = ("TIME timestamp, QUERY string, SOURCE string, TOPIC string, PARTITION int, "
                         "OFFSET bigint, MESSAGE string, KEY binary, VALUE binary")


@stops_on_interrupt
def select(session, stmt: ast.Select, text, timeout, reset: str | None = None,
           subscription: ast.Subscribe | None = None):
    """`subscription`: the SUBSCRIBE running `stmt` (its rows are diffs), else None."""
    if isinstance(stmt.source, ast.SourceRef) and stmt.source.name == PROCESSING_LOG:
        return _select_processing_log(session, stmt)
    limits.check_limit(stmt.limit)
    source = session.base_source(base_relation(stmt.source))
    # a mistake in the statement is reported as such even while the broker does not answer
    plan = plan_of(session, stmt)
    plan = subscribed(plan) if subscription is not None else plan
    envelope = KeyedEnvelope([n for n, _ in plan.outputs], *subscription.envelope) if (
        subscription is not None and subscription.envelope) else None
    model = None
    if stmt.emit_changes:  # its columns and status are on show at once, while Spark prepares and starts it
        model = live_model(plan, envelope.names if envelope is not None else plan.names, sql=text,
                           max_rows=session.max_rows)
        if session.feedback is not None:
            session.feedback.query_starting(model)
    ensure_reachable(source.properties.get("BROKER") or session.bootstrap_servers, session.timeout_of(timeout))
    changes = ChangeTracker(snapshot_ends=snapshot_ends(session, plan), emit_snapshot=emits_snapshot(subscription),
                            envelope=envelope) if plan.changes else None
    prepared = prepare(session, stmt, reset, plan=plan, changelog=plan.changes == AGGREGATE)
    query_id = f"transient_{plan.source.name}_{session.next_id()}"
    if plan.seek.empty:  # contradictory bounds: nothing can match
        return to_pandas([], plan.names)
    if not stmt.emit_changes:
        rows = collect_bounded(prepared.built, plan, query_id=query_id, log=session.log)
        if session.dialect_now.fails_on_bad_records:
            _fail_on_bad_records(session, query_id, plan)
        return rows
    frame = prepared.raw if plan.per_batch else prepared.built.frame
    model.set_reading(prepared.read.reading(_partition_count(prepared.read)))
    query = PushQuery(plan, frame, model, build_batch=prepared.build_batch, query_id=query_id, sql=text,
                      log=session.log, trigger_interval=session.trigger_interval,
                      ending_offsets=prepared.read.ending_offsets, fail_on=failing_sources(plan), changes=changes)
    query.bootstrap = prepared.read.bootstrap
    if session.feedback is not None:
        session.feedback.query_started(query)
    session.queries[query_id] = query.start()
    if plan.limit is None:
        return query
    try:
        return query.result(session.timeout_of(timeout))
    finally:
        session.queries.pop(query_id, None)


def _partition_count(read: reads.TopicRead) -> int | None:
    """How many partitions a read of every partition covers, for its status line; None when the
    broker cannot say now (the query itself then says why it waits)."""
    if read.partitions is not None:
        return None
    if read.generator is not None:
        return 1
    try:
        return len(admin.topic_partitions(read.bootstrap, read.topic))
    except KStreamError:
        return None


def _fail_on_bad_records(session, query_id: str, plan: QueryPlan) -> None:
    """Materialize's rule: a source with a bad record is in an error state and a query over it
    fails, naming the record (which is in the processing log too). Only sources of a dialect
    with that rule fail: a ksql source keeps logging and going on."""
    failed = session.log.to_pandas(query=query_id)
    failed = failed[failed.SOURCE.isin(failing_sources(plan))]
    if len(failed):
        raise StatementError(located_message(failed.sort_values(["TOPIC", "PARTITION", "OFFSET"]).iloc[0]))


def failing_sources(plan: QueryPlan) -> frozenset[str]:
    """The inputs (by name and source name) whose bad records fail a query over them."""
    return frozenset(name for i in plan.inputs if dialects.get(i.source.dialect).fails_on_bad_records
                     for name in (i.name, i.source.name))


@stops_on_interrupt
def subscribe(session, stmt: ast.Subscribe, text, timeout):
    """Materialize's SUBSCRIBE: the snapshot (the current rows at one mz_timestamp), then every
    change, as diffs (subscribe.rules). It reads from the earliest offsets whatever
    'auto.offset.reset' says: the snapshot, and the state the changes start from, come from
    every record (`WITH (SNAPSHOT = false)` reads them too, and emits the changes only)."""
    emits_snapshot(stmt)  # its options' errors come first
    query = stmt.query or _named_query(session, stmt.name)
    if query.order_by:
        key = query.order_by[0]
        raise StatementError(f"line {key.line}:{key.column}: ORDER BY orders snapshot queries (SELECT) only, "
                             "not SUBSCRIBE")
    return select(session, replace(query, emit_changes=True), text, timeout, reset="earliest", subscription=stmt)


def _named_query(session, name: str) -> ast.Select:
    """`SUBSCRIBE name`: a view's own query (so a view that aggregates emits its groups'
    changes), else every column of the source."""
    try:
        relation = session.catalog.get(name, session.dialect_now.name)
    except StatementError:
        relation = None  # the SELECT names it in its own error
    if isinstance(relation, ViewDef):
        return replace(relation.query, order_by=(), limit=None)  # a view's ORDER BY and LIMIT order snapshots
    return ast.Select(items=(ast.Star(),), source=ast.SourceRef(name))


def snapshot_ends(session, plan: QueryPlan) -> list[dict[int, int]]:
    """Per source a plan reads (in the order its query lists them), where the records it held
    at start end: partition -> end offset, for partitions holding records past where the read
    starts. A SUBSCRIBE's snapshot is every change until those are read."""
    ends = []
    for source in _read_sources(plan):
        first = {int(p): o for p, o in (source.properties.get(START_PROPERTY) or {}).items()}  # START OFFSET
        made = counter_of(source)
        marks = (made.watermarks(time.time_ns() // 1_000) if made is not None
                 else watermarks(source.properties.get("BROKER") or session.bootstrap_servers, source.topic))
        ends.append({p: high for p, (low, high) in marks.items() if high > max(low, first.get(p, 0))})
    return ends


def _read_sources(plan: QueryPlan):
    for side in plan.inputs:
        yield from (_read_sources(side.view) if side.view is not None else (side.source,))


def _select_processing_log(session, stmt: ast.Select):
    """`SELECT ... FROM KSQL_PROCESSING_LOG`: the session's record-level errors, queried in SQL."""
    if stmt.emit_changes:
        raise StatementError(f"{PROCESSING_LOG} can be queried as a snapshot only (no EMIT CHANGES).")
    log = session.log.to_pandas(raw=True)
    frame = session.spark.createDataFrame(log, schema=PROCESSING_LOG_SCHEMA)
    names, result = analysed(lambda: select_over_frame(stmt, frame, PROCESSING_LOG))
    table = result.toArrow()
    return to_pandas(list(zip(*(table.column(i).to_pylist() for i in range(len(names))))), names)


def explain(session, stmt: ast.Explain, text, timeout):
    """A query's plan without running it; a CREATE ... AS SELECT or INSERT INTO ... SELECT (as in
    ksqlDB) shows the persistent query it would start, and creates nothing."""
    inner, sink = stmt.statement, None
    if isinstance(inner, ast.CreateAsSelect):
        inner, sink = replace(inner.query, emit_changes=True), f"{inner.kind} {inner.name} (new)"
    elif isinstance(inner, ast.InsertSelect):
        inner, sink = replace(inner.query, emit_changes=True), f"INSERT INTO {inner.target}"
    if not isinstance(inner, ast.Select):
        raise StatementError("EXPLAIN supports queries: SELECT, CREATE ... AS SELECT and INSERT INTO ... SELECT.")
    persistent = sink is not None
    prepared = prepare(session, inner, keep_headers=persistent, changelog=persistent, persistent=persistent)
    plan, read = prepared.plan, prepared.read
    rows = [("Query", text[len("EXPLAIN"):].strip())] + ([("Sink", sink)] if sink else []) + [
            ("Source", f"{plan.source.kind} {plan.source.name}"), ("Topic", plan.source.topic),
            ("Formats", f"key {plan.source.key_format.name}, value {plan.source.value_format.name}"),
            ("Reads", read.describe()), ("Columns", ", ".join(plan.names))]
    tree = tree_of(plan, per_record=prepared.per_record)  # as prepare built it (the record cache's setting)
    rows.append(("Operators", "\n".join(explain_lines(tree, plan.dialect))))
    if read.ranges() is not None:
        rows.append(("Offset ranges", read.ranges()))
    return pd.DataFrame(rows, columns=["Property", "Value"])
