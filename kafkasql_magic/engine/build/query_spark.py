"""A QueryPlan -> Spark frames, once per plan (per micro-batch for a per-batch plan): its
operator tree (engine.tree) built node by node, each node type through its row of a table.

The built frame has the result columns (`result_column(i)`) plus the bookkeeping columns
(engine.columns). The runtime collects each micro-batch once and splits it into result rows
and processing-log entries, so a bad record never stops a query nor hides the good ones
around it. Raw key and value bytes are kept only on failed rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F

from ...catalog import SourceDef
from ...errors import StatementError
from ...sql import ast
from ...sql.render import render
from ..analysis.select import side_of
from ..analysis.plan import CAPTURE_FRAMES, CAPTURE_METRICS, CAPTURE_NONE, MZ_COLUMNS, Input, QueryPlan
from ..columns import (BOOKKEEPING, DROP, ERROR, KEYLESS, OFFSET, ORIGIN, PARTITION, RAW_HEADERS, RAW_KEY,
                       RAW_TIMESTAMP, RAW_VALUE, RECORD, ROWOFFSET, ROWTIME, TOMBSTONE, result_column)
from ..aggregate.group_by_spark import aggregated, computing_error
from ..aggregate.build_spark import per_record_aggregated
from ..order import sort_spark as order
from ..window import keys_spark as window_keys
from ..table_aggregate.batch_spark import TableState, retracted
from ..table_aggregate.build_spark import Rows, table_aggregated
from ..lookup_join.state_spark import looked_up
from ..stream_join.join_spark import stream_stream_joined
from ..table_join.build_spark import JOIN_ORDER, JOIN_ROW, JOIN_TIME, table_joined, tombstoned
from ..table_join.kinds import join_sides
from ..table_join.kinds import sides as stream_join_sides
from ..window.sessions_spark import keyed_sessions
from ..window.windowed_spark import keyed_windowed
from ..decode.rows_spark import current_rows, logical_frame
from ..diff_join.join_spark import MZ_DIFF, MZ_TIMESTAMP, diff_joined, with_diff_columns
from ..expressions.compile_spark import Compiler, JoinScope, Scope, quoted
from ..unnest.calls import calls_in, with_elements
from ..unnest.lockstep_spark import unnested
from ..join_key.column_spark import keyed_outputs, with_join_key
from ..subscribe.frame_spark import IDENTITY, changelog_identity, for_driver
from ..subscribe.rules import CHANGELOG
from ..analysis.row_ids import keyed_by_row_id
from ..tree import nodes as n
from ..tree import tree_of

#: (source, streaming) -> that source's raw Kafka records.
RawReader = Callable[[SourceDef, bool], DataFrame]

#: AST join kind -> Spark join type.
SPARK_JOINS = {"INNER": "inner", "LEFT": "left_outer", "RIGHT": "right_outer", "FULL": "full_outer"}


@dataclass(frozen=True)
class Built:
    """A plan's frames: the result frame and where the records that failed before a join or
    an aggregation are (per the plan's `capture`)."""

    frame: DataFrame
    observations: dict[str, Observation] = field(default_factory=dict)
    error_frames: dict[str, DataFrame] = field(default_factory=dict)


class _Captures:
    """Collects the error captures while one plan is built."""

    def __init__(self, mode: str):
        self.mode = mode
        self.observations: dict[str, Observation] = {}
        self.error_frames: dict[str, DataFrame] = {}

    def without_errors(self, frame: DataFrame, name: str, keep: bool = False) -> DataFrame:
        """The rows without errors; the failed ones are captured as `name` so the processing
        log gets them although they never reach the result (`keep`: they stay, for a step whose
        failed rows still change its state)."""
        fields = [F.col(ERROR), *[F.base64(F.col(c)).alias(c) if c in (RAW_KEY, RAW_VALUE) and
                                  self.mode == CAPTURE_METRICS else F.col(c) for c in ORIGIN]]
        failed = F.collect_list(F.when(F.col(ERROR).isNotNull(), F.struct(*fields)))
        if self.mode == CAPTURE_METRICS:  # bytes as base64: progress JSON has no bytes type
            frame = frame.observe(name, failed.alias("errors"))
        elif self.mode == CAPTURE_FRAMES:
            frame = frame.localCheckpoint()  # read and decoded once for both the errors and the join
            self.error_frames[name] = frame.where(F.col(ERROR).isNotNull()).select(F.struct(*fields).alias("e"))
        elif self.mode != CAPTURE_NONE:
            observation = Observation(name)
            self.observations[name] = observation
            frame = frame.observe(observation, failed.alias("errors"))
        return frame if keep else frame.where(F.col(ERROR).isNull())


def build(plan: QueryPlan, raw: DataFrame, read: RawReader, *, check_only: bool = False,
          state: TableState | None = None, changelog: bool = False,
          batch_id: int | None = None, deletes_rejected: bool = False, per_record: bool = False) -> Built:
    """The frames of `plan` over `raw` (the FROM source's records; `read` reads a joined
    source's). `check_only` builds without capturing errors, so that Spark resolves every
    column of a per-batch plan before its stream starts (nothing runs). A retracting plan
    carries its table's rows from batch to batch in `state`. `changelog` (a persistent query's output) makes a group that fails HAVING a
    tombstone rather than no row. `batch_id` numbers a per-batch plan's micro-batch (Spark's id).
    `deletes_rejected` (a Materialize sink over a changelog): a row a view's WHERE clause rejects
    is a delete of its key, as in a SUBSCRIBE's changelog. `per_record`: the aggregation writes one
    change per input record (engine/aggregate)."""
    captures = _Captures(CAPTURE_NONE if check_only else plan.capture)
    context = _Context(plan, raw, read, captures, state, changelog, batch_id)
    return Built(context.result(tree_of(plan, deletes_rejected, per_record)), captures.observations, captures.error_frames)


@dataclass(frozen=True)
class _Context:
    """What building one plan's tree shares: the FROM source's records, how to read a joined
    one's, the error captures, and a per-batch plan's state and batch."""

    plan: QueryPlan
    raw: DataFrame
    read: RawReader
    captures: _Captures
    state: TableState | None = None
    changelog: bool = False
    batch_id: int | None = None

    def result(self, node: n.Node) -> DataFrame:
        """A result step's frame: the result columns and the bookkeeping ones."""
        return RESULTS[type(node)](node, self)

    def rows(self, node: n.Node) -> _Rows:
        """A relational step's rows: the FROM clause, with WHERE applied."""
        return ROWS[type(node)](node, self)

    def view(self, plan: QueryPlan, raw: DataFrame) -> "_Context":
        return _Context(plan, raw, self.read, self.captures)


@dataclass(frozen=True)
class _Rows:
    """Rows and the names that resolve over them (`sides`: a join's inputs, renamed); `where_error`
    is why WHERE could not be computed for a row (NULL when it could, or without WHERE)."""

    frame: DataFrame
    scope: Scope
    where_error: Column | None = None
    sides: tuple = ()

    @property
    def error(self) -> Column:
        return self.where_error if self.where_error is not None else F.lit(None).cast("string")


# ---- relational steps ---------------------------------------------------------------------------

def _leaf_frame(node: n.Node, context: _Context, raw: DataFrame, tombstones: bool = False) -> DataFrame:
    """One FROM item's rows: a source decoded (a keyed one as it is now, when read bounded),
    or a view's planned rows named by its columns. `tombstones`: a stream's NULL values stay,
    to be passed on."""
    side = node.input
    if isinstance(node, n.View):
        planned = context.view(side.view, raw).result(node.body)
        if side.view.limit is not None:  # a subquery's top-n (snapshots only: analysis refuses it in SUBSCRIBE)
            planned = planned.limit(side.view.limit)
        changes = len(MZ_COLUMNS) if side.view.diffs else 0  # a view joining with diffs: they come first
        return planned.select(*[F.col(result_column(i + changes)).alias(n_) for i, n_ in enumerate(side.columns)],
                              *[F.col(result_column(i)).alias(n_) for i, n_ in enumerate((MZ_TIMESTAMP, MZ_DIFF)[:changes])],
                              *[F.col(c) for c in BOOKKEEPING])
    source = side.source
    if raw.isStreaming or not source.keyed:
        return logical_frame(raw, source, tombstones)
    return window_keys.retained(current_rows(raw, source), raw, source)  # a windowed table's retention


def _leaf(node: n.Scan | n.View, context: _Context) -> _Rows:
    """The FROM clause's one item (the first item of a join is renamed by the join)."""
    plan = context.plan
    frame = _leaf_frame(node, context, context.raw, _passes_tombstones(plan, context.changelog))
    side = node.input
    return _Rows(frame, Scope(frame, set(side.visible), set(side.qualifiers), plan.dialect))


def _side(node: n.Node, context: _Context, frame: DataFrame, sides: tuple,
          where: bool = False) -> tuple[DataFrame, tuple]:
    """A join's input with its columns renamed `__s{i}_<name>` (its errors captured, a NULL join
    key failing), and the sides so far with its own. `where`: a right side keeps its records'
    partition and offset too (`__s{i}__PARTITION`, `__s{i}__OFFSET`), for a stream-stream join."""
    index, side = node.index, node.input
    frame = context.captures.without_errors(_null_join_keys(context.plan, index, side, frame), f"__errors_{index}")
    columns = {name: f"__s{index}_{name}" for name in side.visible}
    kept = [F.col(quoted(name)).alias(c) for name, c in columns.items()]
    record = [F.col(c).alias(f"__s{index}{c}") for c in (RAW_TIMESTAMP, RAW_HEADERS, TOMBSTONE)
              + ((PARTITION, OFFSET) if where else ())]
    frame = frame.select(*kept, *([F.col(c) for c in BOOKKEEPING] if index == 0 else record))
    return frame, (*sides, (side.qualifiers, columns))


def _binary_join(node: n.BinaryJoin, context: _Context) -> _Rows:
    """One join of a left-deep chain: the left rows (the first item, or the joins before)
    joined with the next item, as its node's type says."""
    plan = context.plan
    if isinstance(node.left, n.BinaryJoin):
        left = context.rows(node.left)
        frame, sides = left.frame, left.sides
    else:
        frame, sides = _side(node.left, context, _leaf(node.left, context).frame, ())
    side = node.right.input
    streaming = context.raw.isStreaming and (side.kind == "STREAM" or isinstance(node, n.LookupJoin))
    right, sides = _side(node.right, context, _leaf_frame(node.right, context, context.read(side.source, streaming)),
                         sides, isinstance(node, n.StreamStreamJoin))
    frame = JOINS[type(node)](node, context, frame, right, sides)
    frame = _joined_record(frame, f"__s{node.index}", stream=node.join.within is not None
                           and not isinstance(node, n.LookupJoin))
    if node.index < len(plan.statement.joins):
        return _Rows(frame, None, sides=sides)
    frame = frame.withColumn(ERROR, F.lit(None).cast("string")).withColumn(DROP, F.lit(False))
    return _keyed(context, frame, JoinScope(frame, set(), set(), plan.dialect, sides=list(sides)))


def _condition(node: n.BinaryJoin, context: _Context, left: DataFrame, right: DataFrame, sides) -> Column:
    both = left.crossJoin(right)  # for typing the condition only
    return Compiler(JoinScope(both, set(), set(), context.plan.dialect, sides=list(sides))).predicate(node.join.on)


def _spark_join(node: n.BinaryJoin, context: _Context, left: DataFrame, right: DataFrame, sides) -> DataFrame:
    """Spark's join: WITHIN as a time range over the rows there are."""
    condition = _condition(node, context, left, right, sides)
    if node.join.within is not None:
        condition = condition & _within(node.join.within, sides[0][1].get(ROWTIME), sides[-1][1].get(ROWTIME))
    return left.join(right, condition, SPARK_JOINS[node.join.kind])


def _stream_stream_join(node: n.StreamStreamJoin, context: _Context, left: DataFrame, right: DataFrame,
                        sides) -> DataFrame:
    """Each side's records per join key in keyed state, late ones dropped (engine/stream_join)."""
    join = node.join
    _within(join.within, sides[0][1].get(ROWTIME), sides[-1][1].get(ROWTIME))  # both sides have record times
    _condition(node, context, left, right, sides)  # the ON clause must resolve
    operands = stream_join_sides(join.on, context.plan.inputs, node.index)
    if operands is None:
        raise StatementError("A stream-stream join needs an equality of an expression over each side: "
                             f"{render(join.on)}")
    compiler = Compiler(JoinScope(left.crossJoin(right), set(), set(), context.plan.dialect, sides=list(sides)))
    keys = tuple(compiler.compile(operand) for operand in operands)
    prefix = f"__s{node.index}"
    return stream_stream_joined(left, right, (sides[0][1][ROWTIME], sides[-1][1][ROWTIME]), keys,
                                ((PARTITION, OFFSET), (f"{prefix}{PARTITION}", f"{prefix}{OFFSET}")), join.within,
                                join.grace, SPARK_JOINS[join.kind])


def _lookup_join(node: n.LookupJoin, context: _Context, left: DataFrame, right: DataFrame, sides) -> DataFrame:
    _condition(node, context, left, right, sides)  # the ON clause must resolve
    return _tracked_join(context.plan, node.join, left, right, list(sides), node.index)


def _table_join(node: n.TableJoin, context: _Context) -> _Rows:
    """Both tables' changelogs, in Spark state."""
    return _keyed(context, *table_joined(context.plan, context.raw, context.read, context.captures.without_errors))


def _diff_join(node: n.DiffJoin, context: _Context) -> _Rows:
    """Both inputs whole, as multisets in Spark state."""
    leaves = {id(leaf.input): leaf for leaf in node.inputs}
    frame, scope = diff_joined(context.plan, context.raw, context.read,
                               lambda side, rows: _leaf_frame(leaves[id(side)], context, rows),
                               context.captures.without_errors)
    return _keyed(context, frame, scope)


def _keyed(context: _Context, frame: DataFrame, scope) -> _Rows:
    """A join's rows with its key as a column (`engine.join_key.column_spark`)."""
    frame, scope = with_join_key(context.plan, frame, scope)
    return _Rows(frame, scope)


def _filter(node: n.Filter, context: _Context) -> _Rows:
    rows = context.rows(node.child)
    frame, where_error = _filtered(node.predicate, rows.frame, rows.scope, changelog=node.deletes)
    return _Rows(frame, rows.scope, where_error, rows.sides)


# ---- result steps -------------------------------------------------------------------------------

def _input_rows(node, context: _Context) -> _Rows:
    rows = context.rows(node.child)
    for expr in node.partition_by:  # the key is only a name here, but it must resolve
        Compiler(rows.scope).compile(expr)
    return rows


def _aggregate(node: n.Aggregate, context: _Context) -> DataFrame:
    plan, rows = context.plan, _input_rows(node, context)
    frame = aggregated(plan, rows.frame, rows.scope, rows.error, context.captures.without_errors, context.changelog)
    return order.ordered(frame, *order.sort_keys(plan.statement, plan.outputs, None)) if node.order_by else frame


def _record_aggregate(node: n.RecordAggregate, context: _Context) -> DataFrame:
    rows = _input_rows(node, context)
    return per_record_aggregated(context.plan, rows.frame, rows.scope, rows.error, context.captures.without_errors,
                                 context.changelog)


def _window_aggregate(node: n.WindowAggregate, context: _Context) -> DataFrame:
    """TUMBLING and HOPPING windows in keyed state (engine/window)."""
    rows = _input_rows(node, context)
    return keyed_windowed(context.plan, rows.frame, rows.scope, rows.error, context.captures.without_errors,
                          context.changelog, each=isinstance(node, n.RecordWindowAggregate))


def _session_aggregate(node: n.SessionAggregate, context: _Context) -> DataFrame:
    """SESSION windows in keyed state (engine/window)."""
    rows = _input_rows(node, context)
    return keyed_sessions(context.plan, rows.frame, rows.scope, rows.error, context.captures.without_errors,
                          each=isinstance(node, n.RecordSessionAggregate))


def _retracting_aggregate(node: n.RetractingAggregate, context: _Context) -> DataFrame:
    """Every change of the table, tombstones too (its WHERE applies per row version, inside)."""
    batched = isinstance(node, n.BatchRetractingAggregate)
    if batched and not isinstance(context.state, TableState):  # resolving a per-batch plan's columns
        return _aggregate(node, context)
    plan = context.plan
    joined = next((x for x in n.walk(node) if isinstance(x, n.TableJoin)), None)
    if joined is not None:  # the join's result rows, a table's changelog
        rows = context.rows(joined)
        return table_aggregated(plan, rows.frame, rows.scope, context.captures.without_errors,
                                isinstance(node, n.RecordRetractingAggregate), Rows(JOIN_ROW, JOIN_ORDER, JOIN_TIME))
    side = next(x for x in n.walk(node) if isinstance(x, n.Scan)).input
    frame = logical_frame(context.raw, side.source)
    scope = Scope(frame, set(side.visible), set(side.qualifiers), plan.dialect)
    if not batched:
        return table_aggregated(plan, frame, scope, context.captures.without_errors,
                                isinstance(node, n.RecordRetractingAggregate))
    return retracted(plan, frame, scope, context.state, context.captures.without_errors, context.batch_id)


def _project(node: n.Project, context: _Context) -> DataFrame:
    plan, rows = context.plan, _input_rows(node, context)
    frame, scope, where_error = rows.frame, rows.scope, rows.error
    extra, keys = order.sort_keys(plan.statement, plan.outputs, scope) if node.order_by else ([], [])
    if plan.changes == CHANGELOG:  # each row replaces its key's
        extra = [(IDENTITY, changelog_identity(plan.inputs[0]))]
    if context.changelog and plan.passes_key:  # no key in, no key out (not a key of NULL columns)
        extra = [*extra, (KEYLESS, F.col(RAW_KEY).isNull())]
    outputs = keyed_outputs(plan, node.outputs)
    if plan.table_join is not None:
        return tombstoned(plan, _projected(frame, scope, where_error, outputs))
    if plan.diffs and context.raw.isStreaming:  # its join's diffs, or a view's that joins
        changes = [(n_, F.col(n_)) for n_ in (MZ_TIMESTAMP, MZ_DIFF)]
        return with_diff_columns(_projected(frame, scope, where_error, outputs, changes), len(outputs))
    tombstones = _passes_tombstones(plan, context.changelog)
    computed = _computed_on_tombstones(plan, outputs) if tombstones else None
    projected = _projected(frame, scope, where_error, outputs, extra, computed, keep_key=keyed_by_row_id(plan))
    return order.ordered(projected, extra, keys)


def _subscribe(node: n.Subscribe, context: _Context) -> DataFrame:
    """A SUBSCRIBE: what the driver turns into diffs."""
    return for_driver(context.plan, context.result(node.child))


#: Relational node type -> its rows.
ROWS: dict[type, Callable[[n.Node, _Context], _Rows]] = {
    n.Scan: _leaf,
    n.View: _leaf,
    n.StreamStreamJoin: _binary_join,
    n.SnapshotJoin: _binary_join,
    n.BatchLookupJoin: _binary_join,
    n.LookupJoin: _binary_join,
    n.TableJoin: _table_join,
    n.DiffJoin: _diff_join,
    n.Filter: _filter,
}

#: Binary join node type -> how its two inputs meet.
JOINS: dict[type, Callable] = {
    n.StreamStreamJoin: _stream_stream_join,
    n.SnapshotJoin: _spark_join,
    n.BatchLookupJoin: _spark_join,
    n.LookupJoin: _lookup_join,
}

#: Result node type -> the result frame.
RESULTS: dict[type, Callable[[n.Node, _Context], DataFrame]] = {
    n.Project: _project,
    n.Aggregate: _aggregate,
    n.RecordAggregate: _record_aggregate,
    n.WindowAggregate: _window_aggregate,
    n.RecordWindowAggregate: _window_aggregate,
    n.SessionAggregate: _session_aggregate,
    n.RecordSessionAggregate: _session_aggregate,
    n.RetractingAggregate: _retracting_aggregate,
    n.RecordRetractingAggregate: _retracting_aggregate,
    n.BatchRetractingAggregate: _retracting_aggregate,
    n.Subscribe: _subscribe,
}


def _passes_tombstones(plan: QueryPlan, changelog: bool) -> bool:
    """Whether a NULL value on the FROM stream goes on as a tombstone: in a persistent query
    (`changelog`) that projects one stream without WHERE, as ksqlDB's projection maps a NULL
    value to NULL (its SelectValueMapper); its filter drops one (SqlPredicate), its aggregations
    and joins skip one, and so do push and pull queries (its transient-query queue)."""
    stmt, first = plan.statement, plan.inputs[0]
    return (changelog and first.kind == "STREAM" and first.view is None and not stmt.joins and stmt.where is None
            and plan.grouping is None and plan.changes is None)


def _computed_on_tombstones(plan: QueryPlan, outputs) -> tuple[bool, ...]:
    """Which outputs a passed-on tombstone computes: the key columns whose expressions read only
    the source's key columns (its key, or a PARTITION BY expression of them, which ksqlDB's
    PartitionByParamsFactory evaluates over the key alone). Every other one is NULL: a key
    reading a value column or pseudocolumn (ksqlDB evaluates it over the NULL row), and the value."""
    key_columns = {c.name.lower() for c in plan.inputs[0].source.key_columns}

    def from_key(expr) -> bool:
        return all(n.name.lower() in key_columns for n in ast.walk(expr) if isinstance(n, ast.ColumnRef))

    return tuple(name in plan.keys and from_key(expr) for name, expr in outputs)


def _tracked_join(plan: QueryPlan, join: ast.Join, stream: DataFrame, table: DataFrame, sides, index: int):
    """A stream-table join feeding GROUP BY: the table as Spark state, so each record meets the
    table as it is when processed (the ON clause must equate a stream expression with the table's key)."""
    stream_expr, table_expr = join_sides(join.on, plan.inputs)
    stream_key = Compiler(JoinScope(stream, set(), set(), plan.dialect, sides=[sides[0]])).compile(stream_expr)
    table_key = Compiler(JoinScope(table, set(), set(), plan.dialect, sides=[sides[index]])).compile(table_expr)
    return looked_up(stream, table, stream_key, table_key, f"__s{index}{TOMBSTONE}", f"__s{index}{RAW_TIMESTAMP}",
                     sides[index][1][ROWOFFSET], join.kind)


def _joined_record(frame: DataFrame, side: str, stream: bool) -> DataFrame:
    """The output record of a join. Stream-stream (ksqlDB, as Kafka Streams): the later of the
    two records' times, and the headers of the later record (the right one on a tie, as it
    completes the pair when both arrive together); an unmatched side's record stands alone.
    Stream-table: the stream record's time and headers, kept as they are. A right record standing
    alone (RIGHT and FULL joins) has none of the left's bookkeeping: it is no tombstone (a NULL
    there made the writer write its value as NULL)."""
    time, headers = F.col(f"{side}{RAW_TIMESTAMP}"), F.col(f"{side}{RAW_HEADERS}")
    if stream:
        left = F.col(RAW_TIMESTAMP)
        later = time.isNotNull() & (left.isNull() | (time >= left))
        frame = frame.withColumns({RAW_HEADERS: F.when(later, headers).otherwise(F.col(RAW_HEADERS)),
                                   RAW_TIMESTAMP: F.greatest(left, time),
                                   TOMBSTONE: F.coalesce(F.col(TOMBSTONE), F.lit(False))})
    return frame.drop(*[f"{side}{c}" for c in (RAW_TIMESTAMP, RAW_HEADERS, TOMBSTONE, PARTITION, OFFSET)])


#: Kafka Streams' words for a stream record a join drops because its join key is NULL.
NULL_JOIN_KEY = "Skipping record due to null join key or value."


def _null_join_keys(plan: QueryPlan, index: int, side: Input, frame: DataFrame) -> DataFrame:
    """A stream record whose join key (its side of an ON equality) is NULL fails with Kafka
    Streams' message, so it is logged and left out: on the right of any join, and on the left
    of an INNER one (a LEFT join keeps it, unmatched, as Kafka Streams does since KIP-962).
    A dialect that joins whole collections (Materialize) has SQL's rule: NULL matches nothing."""
    if side.kind != "STREAM" or plan.dialect.joins_with_diffs:
        return frame  # a table's NULL keys are its envelope's concern
    scope = Scope(frame, set(side.visible), set(side.qualifiers), plan.dialect)
    nulls = []
    for number, join in enumerate(plan.statement.joins):
        if not (index == number + 1 or (index <= number and join.kind == "INNER")):
            continue
        on = join.on
        if not (isinstance(on, ast.BinaryOp) and on.op == "="):
            continue
        for operand in (on.left, on.right):
            refs = [n for n in ast.walk(operand) if isinstance(n, ast.ColumnRef)]
            if refs and all(side_of(r, plan.inputs) == (index, r.name.lower()) for r in refs):
                nulls.append(Compiler(scope).compile(operand).isNull())
    if not nulls:
        return frame
    null_key = F.when(F.greatest(*nulls) if len(nulls) > 1 else nulls[0], F.lit(NULL_JOIN_KEY))
    return frame.withColumn(ERROR, F.coalesce(F.col(ERROR), null_key))


def _within(window: tuple[int, int], left_time: str | None, right_time: str | None) -> Column:
    """ksqlDB's WITHIN (before, after): the right record's time lies in [left - before, left + after]."""
    if left_time is None or right_time is None:
        raise StatementError("WITHIN needs record times (ROWTIME) on both sides of the join.")
    before, after = window
    left, right = F.col(quoted(left_time)), F.col(quoted(right_time))
    return right.between(left - F.lit(before), left + F.lit(after))


def _filtered(predicate: ast.Expr, frame: DataFrame, scope: Scope, changelog: bool = False) -> tuple[DataFrame, Column]:
    """WHERE: failing rows stay (to be logged) with the error column set. In a `changelog` (a
    table-table join) a row the WHERE clause rejects is a tombstone: its key's row is gone."""
    where = Compiler(scope)
    keep = where.predicate(predicate)
    where_error = computing_error(where, predicate, "WHERE", None)
    if changelog:
        frame = frame.withColumn(TOMBSTONE, F.col(TOMBSTONE) | ~F.coalesce(keep, F.lit(False)))
        return frame.withColumn("__WHERE_ERROR", where_error), F.col("__WHERE_ERROR")
    frame = frame.where(F.col(ERROR).isNotNull() | where_error.isNotNull() | keep)
    return frame.withColumn("__WHERE_ERROR", where_error), F.col("__WHERE_ERROR")


def _projected(frame: DataFrame, scope: Scope, where_error: Column, outputs, extra=(),
               computed: tuple[bool, ...] | None = None, keep_key: bool = False) -> DataFrame:
    """The result columns (plus `extra` (name, column) pairs, such as sort keys) and bookkeeping.
    `computed`: which outputs a tombstone passed on computes (the others are NULL, never failing).
    `keep_key`: every row keeps its record key (a row id: analysis.row_ids)."""
    drop = F.col(DROP) | where_error.isNotNull()
    values, errors = [], [F.col(ERROR), where_error]
    calls = calls_in(outputs)
    if calls:  # one generator for all of them, in lockstep; each call's elements a column
        frame, scope, failed = unnested(frame, scope, calls, outputs, computing_error)
        if failed is not None:
            errors.append(failed)
    for index, (name, written) in enumerate(outputs):
        expr = with_elements(written, calls) if calls else written
        compiler = Compiler(scope)
        value = compiler.compile(expr)
        skipped = computed is not None and not computed[index]
        if compiler.failures:
            error = computing_error(compiler, written, name, index)
            errors.append(F.when(~F.col(TOMBSTONE), error) if skipped else error)
            value = F.when(compiler.error().isNull(), value)
        if skipped:
            value = F.when(~F.col(TOMBSTONE), value)
        values.append(value.alias(result_column(index)))
    error = F.coalesce(*errors)
    raw_bytes = (RAW_VALUE,) if keep_key else (RAW_KEY, RAW_VALUE)
    origin = [F.when(error.isNotNull(), F.col(c)).alias(c) if c in raw_bytes else F.col(c)
              for c in ORIGIN]  # the raw bytes travel to the driver only for the processing log
    return frame.select(*values, *[c.alias(n) for n, c in extra], error.alias(ERROR), drop.alias(DROP), *origin,
                        *[F.col(c) for c in RECORD])


def analysed(step):
    """Run a planning step, turning Spark's analysis errors into user errors."""
    from pyspark.errors import AnalysisException

    try:
        return step()
    except AnalysisException as exc:
        raise StatementError(str(exc).splitlines()[0]) from None


def select_over_frame(stmt: ast.Select, frame: DataFrame, qualifier: str) -> tuple[list[str], DataFrame]:
    """A SELECT over an in-memory frame whose columns are already ksql columns (the processing
    log): the same expressions and naming, none of the Kafka decoding."""
    from ..analysis.select import outputs_of

    table = Input(ast.SourceRef(qualifier), qualifier, None, "STREAM", tuple(frame.columns), ())
    outputs = outputs_of(stmt, [table])
    scope = Scope(frame, set(frame.columns), {qualifier})
    if stmt.where is not None:
        frame = frame.where(Compiler(scope).predicate(stmt.where))
    result = frame.select(*[Compiler(scope).compile(e).alias(result_column(i)) for i, (_, e) in enumerate(outputs)])
    if stmt.limit is not None:
        result = result.limit(stmt.limit)
    return [name for name, _ in outputs], result
