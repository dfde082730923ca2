"""SELECT, SUBSCRIBE and EXPLAIN: analyse, plan the reads, build once, then run or describe."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

import pandas as pd

from .. import dialects
from ..dialects import limits
from ..engine.analysis import QueryPlan, analyse
from ..engine.analysis.headers import header_use, used_columns
from ..engine.analysis.lookup import KeyLookup
from ..engine.analysis.raw_columns import metadata_columns, raw_bytes_unused
from ..engine.analysis.seek import Seek
from ..engine.analysis.subscribe import AGGREGATE, emits_snapshot, subscribed
from ..engine.aggregate.per_record import per_record
from ..engine.build import Built, TableState, WindowState, build, select_over_frame
from ..engine.build.decode import worker_decoding
from ..catalog import ViewDef
from ..diffs import ChangeTracker, KeyedEnvelope
from ..errors import StatementError
from ..kafka import reads
from ..kafka.key_partitions import lookup_partitions
from ..kafka.offsets import watermarks
from ..kafka.reach import ensure_reachable
from ..kafka.source_options import ReadShape
from ..kafka.start_position import START_PROPERTY
from ..results import located_message, to_pandas
from ..runtime import PushQuery, collect_bounded, stops_on_interrupt
from ..sql import ast
from ..sql.ast_materialize import base_relation
from ..sql.render import render

PROCESSING_LOG = "KSQL_PROCESSING_LOG"
PROCESSING_LOG_SCHEMA = ("TIME timestamp, QUERY string, SOURCE string, TOPIC string, PARTITION int, "
                         "OFFSET bigint, MESSAGE string, KEY binary, VALUE binary")


@dataclass(frozen=True)
class Prepared:
    """A SELECT ready to run: its plan, what it reads of its FROM source, the raw records and
    the built frames. A per-batch plan streams `raw` and builds every micro-batch with
    `build_batch`; `built` then only proved that every column resolves."""

    plan: QueryPlan
    read: reads.TopicRead
    raw: object  # DataFrame
    built: Built
    build_batch: Callable | None
    state: TableState | WindowState | None = None
    per_record: bool = False  # an aggregation writing one change per input record (engine/aggregate)


def prepare(session, stmt: ast.Select, reset: str | None = None, *, keep_headers: bool = False, writes: bool = False,
            changelog: bool = False, plan: QueryPlan | None = None, whole_batches: bool = False) -> Prepared:
    """`keep_headers`: read every record's headers (a persistent query forwards them to its
    output records), not only when a header column is selected. `writes`: the rows become output
    records, which take their input records' timestamps (a sink; implied by `keep_headers`). `changelog`: the rows are a
    table's changelog (a persistent query's), where a group failing HAVING is a tombstone.
    `plan`: the statement's plan when the caller analysed it already. `whole_batches`: a
    micro-batch reads every record there is (a SUBSCRIBE's first one is its snapshot)."""
    plan = plan or analysed(lambda: analyse(stmt, session.catalog, session.dialect_now, session.text_now))
    reset = reset or session.settings.get("auto.offset.reset", "latest")
    used = used_columns(plan)  # a header column the query does not use is not read

    def topic_read(source, streaming: bool, seek: Seek = Seek(), lookup: KeyLookup | None = None) -> reads.TopicRead:
        bootstrap = source.properties.get("BROKER") or session.bootstrap_servers
        headers = header_use(source, forwarded=keep_headers, used=used)
        start = source.properties.get(START_PROPERTY)
        shape = read_shape(plan, source, headers.needed, forwarded=keep_headers or writes, used=used)
        if not streaming:
            partitions = lookup_partitions(bootstrap, source, lookup.values) if lookup is not None else None
            return reads.bounded(bootstrap, source.topic, include_headers=headers.needed, header_keys=headers.keys,
                                 start=start, keys=lookup.values if lookup else None, partitions=partitions,
                                 shape=shape)
        return reads.push(bootstrap, source.topic, reset=reset, seek=seek,
                          max_per_trigger=None if whole_batches else session.max_records_per_trigger,
                          include_headers=headers.needed,
                          header_keys=headers.keys, start=start, shape=shape)

    def read_joined(source, streaming: bool):
        return session.raw_frame(topic_read(source, streaming))

    read = topic_read(plan.source, stmt.emit_changes, plan.seek, plan.lookup)
    raw = session.raw_frame(read)
    each_record = raw.isStreaming and per_record(plan, session.settings)
    built = analysed(lambda: build(plan, raw, read_joined, check_only=plan.per_batch, changelog=changelog,
                                   per_record=each_record))
    state = TableState() if plan.retracts else WindowState() if plan.tracks_time else None
    build_batch = ((lambda batch, batch_id=None: build(plan, batch, read_joined, state=state, changelog=changelog,
                                                       batch_id=batch_id))
                   if plan.per_batch else None)
    return Prepared(plan, read, raw, built, build_batch, state, each_record)


def read_shape(plan: QueryPlan, source, headers_read: bool, *, forwarded: bool, used: frozenset[str]) -> ReadShape:
    """What a read of `source` carries besides key, value and headers: the worker's decoding, the
    raw bytes of the records it decoded only when something may read them, and the metadata
    columns the query uses (engine.analysis.raw_columns); the FROM source's read only, a
    joined source's carries everything."""
    decoding = worker_decoding(source)
    if source is not plan.source:
        return ReadShape(decoding)
    if decoding and _covers(decoding, source) and raw_bytes_unused(plan, forwarded=forwarded,
                                                                   headers_read=headers_read):
        decoding = replace(decoding, raw_undecoded_only=True)
    return ReadShape(decoding, metadata_columns(plan, forwarded=forwarded, used=used))


def _covers(decoding, source) -> bool:
    """Every part of the record with columns is decoded in the worker as JSON (with a flag per
    record), the value at least: a record whose flags are all true then failed no decoding."""
    json_roles = decoding.json_roles()
    return "value" in json_roles and (not source.key_columns or "key" in json_roles)


def analysed(step):
    """Run a planning step, turning Spark's analysis errors into user errors."""
    from pyspark.errors import AnalysisException

    try:
        return step()
    except AnalysisException as exc:
        raise StatementError(str(exc).splitlines()[0]) from None


@stops_on_interrupt
def select(session, stmt: ast.Select, text, timeout, reset: str | None = None,
           subscription: ast.Subscribe | None = None):
    """`subscription`: the SUBSCRIBE running `stmt` (its rows are diffs), else None."""
    if isinstance(stmt.source, ast.SourceRef) and stmt.source.name == PROCESSING_LOG:
        return _select_processing_log(session, stmt)
    limits.check_limit(stmt.limit)
    source = session.base_source(base_relation(stmt.source))
    # a mistake in the statement is reported as such even while the broker does not answer
    plan = analysed(lambda: analyse(stmt, session.catalog, session.dialect_now, session.text_now))
    plan = subscribed(plan) if subscription is not None else plan
    envelope = KeyedEnvelope([n for n, _ in plan.outputs], *subscription.envelope) if (
        subscription is not None and subscription.envelope) else None
    ensure_reachable(source.properties.get("BROKER") or session.bootstrap_servers, session.timeout_of(timeout))
    changes = ChangeTracker(snapshot=holds_records(session, plan), emit_snapshot=emits_snapshot(subscription),
                            envelope=envelope) if plan.changes else None
    prepared = prepare(session, stmt, reset, plan=plan, changelog=plan.changes == AGGREGATE,
                       whole_batches=changes is not None)
    query_id = f"transient_{plan.source.name}_{session.next_id()}"
    if plan.seek.empty:  # contradictory bounds: nothing can match
        return to_pandas([], plan.names)
    if not stmt.emit_changes:
        rows = collect_bounded(prepared.built, plan, query_id=query_id, log=session.log)
        if session.dialect_now.fails_on_bad_records:
            _fail_on_bad_records(session, query_id, plan)
        return rows
    frame = prepared.raw if plan.per_batch else prepared.built.frame
    query = PushQuery(plan, frame, build_batch=prepared.build_batch, query_id=query_id, sql=text, log=session.log,
                      max_rows=session.max_rows, trigger_interval=session.trigger_interval,
                      ending_offsets=prepared.read.ending_offsets, fail_on=failing_sources(plan), changes=changes)
    query.bootstrap = prepared.read.bootstrap
    session.queries[query_id] = query.start()
    if plan.limit is None:
        return query
    try:
        return query.result(session.timeout_of(timeout))
    finally:
        session.queries.pop(query_id, None)


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
    change, as diffs (analysis.subscribe). It reads from the earliest offsets whatever
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


def holds_records(session, plan: QueryPlan) -> bool:
    """Whether the topics a plan reads held records when it started (then its first
    micro-batch, which reads them all, is a SUBSCRIBE's snapshot)."""
    for source in _read_sources(plan):
        first = {int(p): o for p, o in (source.properties.get(START_PROPERTY) or {}).items()}  # START OFFSET
        marks = watermarks(source.properties.get("BROKER") or session.bootstrap_servers, source.topic)
        if any(high > max(low, first.get(p, 0)) for p, (low, high) in marks.items()):
            return True
    return False


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
    inner = stmt.statement
    if not isinstance(inner, ast.Select):
        raise StatementError("EXPLAIN supports queries (SELECT) only.")
    prepared = prepare(session, inner)
    plan, read = prepared.plan, prepared.read
    rows = [("Query", text[len("EXPLAIN"):].strip()), ("Source", f"{plan.source.kind} {plan.source.name}"),
            ("Topic", plan.source.topic),
            ("Formats", f"key {plan.source.key_format.name}, value {plan.source.value_format.name}"),
            ("Reads", read.describe()), ("Columns", ", ".join(plan.names))]
    if inner.joins:
        rows.append(("Joins", "; ".join(_join_text(j) for j in inner.joins) + (
            " (each table read afresh for every micro-batch)" if plan.per_batch else "")))
    if plan.aggregating:
        keys = ", ".join(render(e) for e in inner.group_by) or "(all rows)"
        rows.append(("Aggregation", f"GROUP BY {keys}; a changelog keyed by {', '.join(plan.key_names) or 'nothing'}"))
    if read.ranges() is not None:
        rows.append(("Offset ranges", read.ranges()))
    return pd.DataFrame(rows, columns=["Property", "Value"])


def _join_text(join: ast.Join) -> str:
    window = f" WITHIN ({join.within[0]} ms, {join.within[1]} ms)" if join.within else ""
    window += f" GRACE PERIOD {join.grace} ms" if join.grace is not None else ""
    return f"{join.kind} JOIN {base_relation(join.source)}{window} ON {render(join.on)}"
