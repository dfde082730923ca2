"""The engine's one door: a statement's plan, and a SELECT prepared to run (its operator tree,
what each read carries, the raw records and the built frames). Statement handlers and sinks call
these and plan nothing themselves."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from ..kafka import reads
from ..kafka.key_partitions import lookup_partitions
from ..kafka.source_options import ReadShape
from ..kafka.start_position import START_PROPERTY
from ..loadgen.counter import counter_of
from ..sql import ast
from .analysis import QueryPlan, analyse
from .analysis.lookup import KeyLookup
from .aggregate.per_record import per_record
from .analysis.seek import Seek
from .table_aggregate.batch_store_spark import BatchStore
from .build.query_spark import Built, analysed, build, select_over_frame
from .table_aggregate.batch_spark import TableState
from .debezium.rules import LAYOUT as PREVIOUS_ROWS_LAYOUT
from .debezium.state_spark import previous_rows
from .decode.rows_spark import worker_decoding
from .tree import tree_of
from .tree.reads import ReadNeeds, read_needs

__all__ = ["BatchStore", "Built", "PREVIOUS_ROWS_LAYOUT", "Prepared", "Switches", "analysed", "plan_of", "prepare",
           "previous_rows", "read_shape", "row_expression", "select_over_frame"]

#: Session properties that turn an optimisation off ("false"), for benchmarks and tests that
#: compare with what a read did before it (as Polars' optimisation flags):
#: every read carries every raw and metadata column (engine.tree.reads);
PRUNE_RAW_COLUMNS = "kafkasql.prune.raw.columns"
#: the planner's Spark expressions decode JSON and Avro alone, nothing in the reader's worker
#: (kafka.worker_decoding).
DECODE_IN_READER = "kafkasql.decode.in.reader"


@dataclass(frozen=True)
class Switches:
    prune_raw_columns: bool = True
    decode_in_reader: bool = True

    @classmethod
    def of(cls, settings) -> "Switches":
        def on(name: str) -> bool:
            return str(settings.get(name, "true")).lower() != "false"
        return cls(on(PRUNE_RAW_COLUMNS), on(DECODE_IN_READER))


def plan_of(session, stmt: ast.Select) -> QueryPlan:
    """`stmt`'s plan in the session's catalog and dialect (a mistake in it is a user error)."""
    return analysed(lambda: analyse(stmt, session.catalog, session.dialect_now, session.text_now))


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
    state: TableState | None = None
    per_record: bool = False  # an aggregation writing one change per input record (engine/aggregate)


def prepare(session, stmt: ast.Select, reset: str | None = None, *, keep_headers: bool = False, writes: bool = False,
            changelog: bool = False, plan: QueryPlan | None = None,
            deletes_rejected: bool = False, persistent: bool = False) -> Prepared:
    """`keep_headers`: read every record's headers (a persistent query forwards them to its
    output records), not only when a header column is selected. `writes`: the rows become output
    records, which take their input records' timestamps (a sink; implied by `keep_headers`). `changelog`: the rows are a
    table's changelog (a persistent query's), where a group failing HAVING is a tombstone.
    `plan`: the statement's plan when the caller analysed it already.
    `deletes_rejected`: a row a view's WHERE clause rejects is a delete (engine.tree.tree_of).
    `persistent`: the rows go to a sink; a stateless query then reads up to the session's
    `persistent_records_per_trigger` per micro-batch (see `_per_trigger`)."""
    plan = plan or plan_of(session, stmt)
    reset = reset or session.settings.get("auto.offset.reset", "latest")
    each_record = stmt.emit_changes and per_record(plan, session.settings)
    tree = tree_of(plan, deletes_rejected, each_record)
    switches = Switches.of(session.settings)

    def topic_read(source, streaming: bool, seek: Seek = Seek(), lookup: KeyLookup | None = None) -> reads.TopicRead:
        bootstrap = source.properties.get("BROKER") or session.bootstrap_servers
        needs = read_needs(tree, source, headers_forwarded=keep_headers, records_forwarded=keep_headers or writes,
                           shown_by_time=plan.push, prune_raw=switches.prune_raw_columns)
        headers = needs.headers
        start = source.properties.get(START_PROPERTY)
        shape = read_shape(source, needs, switches.decode_in_reader)
        counter = counter_of(source)
        if counter is not None:  # no topic: nothing to seek or look up, one partition
            read = (reads.bounded(bootstrap, source.topic, include_headers=headers.needed, shape=shape) if not streaming
                    else reads.push(bootstrap, source.topic, reset=reset, seek=Seek(),
                                    max_per_trigger=_per_trigger(session, plan, persistent),
                                    include_headers=headers.needed, shape=shape))
            return replace(read, generator=counter)
        if not streaming:
            partitions = lookup_partitions(bootstrap, source, lookup.values) if lookup is not None else None
            return reads.bounded(bootstrap, source.topic, include_headers=headers.needed, header_keys=headers.keys,
                                 start=start, keys=lookup.values if lookup else None, partitions=partitions,
                                 shape=shape)
        return reads.push(bootstrap, source.topic, reset=reset, seek=seek,
                          max_per_trigger=_per_trigger(session, plan, persistent),
                          include_headers=headers.needed,
                          header_keys=headers.keys, start=start, shape=shape)

    def read_joined(source, streaming: bool):
        return session.raw_frame(topic_read(source, streaming))

    read = topic_read(plan.source, stmt.emit_changes, plan.seek, plan.lookup)
    raw = session.raw_frame(read)
    built = analysed(lambda: build(plan, raw, read_joined, check_only=plan.per_batch, changelog=changelog,
                                   deletes_rejected=deletes_rejected, per_record=each_record))
    state = TableState() if plan.retracts and plan.per_batch else None
    build_batch = ((lambda batch, batch_id=None: build(plan, batch, read_joined, state=state, changelog=changelog,
                                                       batch_id=batch_id, deletes_rejected=deletes_rejected))
                   if plan.per_batch else None)
    return Prepared(plan, read, raw, built, build_batch, state, each_record)


def _per_trigger(session, plan: QueryPlan, persistent: bool) -> int:
    """Records a micro-batch reads at most. A stateless persistent query (no aggregation, join or
    per-batch state: each record becomes its output records alone) reads bigger micro-batches
    than a push query, whose rows are shown as they come: every micro-batch costs a plan, a Spark
    job, Python workers' tasks and a fresh round of the JVM compiling its generated code, about
    half the CPU of a filter-and-project CSAS at 50,000 records per micro-batch (bench/README.md,
    "The stateless persistent path"); the records and their order per partition are the same."""
    stateless = (plan.grouping is None and len(plan.inputs) == 1 and not plan.per_batch and not plan.table_join
                 and not plan.diffs and not plan.looks_up)
    return session.persistent_records_per_trigger if persistent and stateless else session.max_records_per_trigger


def read_shape(source, needs: ReadNeeds, decode_in_reader: bool = True) -> ReadShape:
    """What a read of `source` carries besides key, value and headers (engine.tree.reads): the
    worker's decoding, the raw bytes of the records it decoded only when something may read
    them, and the metadata columns the query uses."""
    decoding = worker_decoding(source) if decode_in_reader else None
    if decoding and _covers(decoding, source) and needs.raw_bytes_unused:
        decoding = replace(decoding, raw_undecoded_only=True)
    return ReadShape(decoding, needs.metadata)


def _covers(decoding, source) -> bool:
    """Every part of the record with columns is decoded in the worker as JSON (with a flag per
    record), the value at least: a record whose flags are all true then failed no decoding."""
    json_roles = decoding.json_roles()
    return "value" in json_roles and (not source.key_columns or "key" in json_roles)


def row_expression(expr: ast.Expr, row, frame, dialect):
    """`expr` as a Spark column over the fields of one struct column `row` of `frame`, named as
    the relation's columns (a sink's PARTITION BY over the row it writes or deletes). A value
    that fails to compute is NULL."""
    from .expressions.compile_spark import Compiler, Scope

    class RowScope(Scope):
        def column(self, ref: ast.ColumnRef):
            super().column(ref)  # an unknown name fails as anywhere else
            return row[ref.name]

    names = {f.name for f in frame.select(row.alias("r")).schema["r"].dataType.fields}
    return Compiler(RowScope(frame, names, set(), dialect)).compile(expr)
