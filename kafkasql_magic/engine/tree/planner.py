"""A plan (engine.analysis) -> its operator tree. Pure: no Spark.

One function decides each family: which join a FROM item takes part in, which aggregation a
GROUP BY is. A tree runs in one of three ways, decided by the plan: over the records there are
(a snapshot: not EMIT CHANGES), per micro-batch with state the build carries from batch to batch
(`QueryPlan.per_batch`), or as one Spark streaming query."""

from __future__ import annotations

from ...sql import ast
from ..analysis.plan import TABLE, Input, QueryPlan
from ..subscribe.rules import CHANGELOG
from . import nodes as n


def tree_of(plan: QueryPlan, deletes_rejected: bool = False, per_record: bool = False) -> n.Node:
    """The operator tree of `plan`. `deletes_rejected` (a Materialize sink over a changelog): a
    row a view's WHERE clause rejects is a delete of its key, as in a SUBSCRIBE's changelog.
    `per_record`: its aggregation writes one change per input record (engine.aggregate.per_record
    says when it can; the session's `cache.max.bytes.buffering` asks for it)."""
    root = _tree(plan, deletes=deletes_rejected or plan.changes == CHANGELOG)
    each = {n.Aggregate: n.RecordAggregate, n.WindowAggregate: n.RecordWindowAggregate,
            n.SessionAggregate: n.RecordSessionAggregate}
    if per_record and type(root) in each:
        root = each[type(root)](root.child, root.grouping, root.keys, root.partition_by, root.order_by)
    elif per_record and type(root) is n.RetractingAggregate:
        root = n.RecordRetractingAggregate(root.child, root.grouping, root.keys, root.partition_by, root.order_by)
    return n.Subscribe(root, plan.changes) if plan.changes is not None else root


def _tree(plan: QueryPlan, deletes: bool) -> n.Node:
    """`deletes`: a row the WHERE clause rejects is a delete of its key (a changelog's rows, a
    table-table join's, a table joined with diffs)."""
    stmt = plan.statement
    rows = _filtered(_from(plan, deletes), stmt, deletes or plan.table_join is not None)
    shape = dict(keys=plan.keys, partition_by=stmt.partition_by, order_by=() if plan.push else stmt.order_by)
    if plan.grouping is None:
        return n.Project(rows, plan.outputs, **shape)
    if plan.retracts:  # its WHERE applies per row version, inside the step
        return (n.BatchRetractingAggregate if plan.per_batch else n.RetractingAggregate)(rows, plan.grouping, **shape)
    if plan.tracks_time:
        kind = n.SessionAggregate if plan.grouping.window.kind == "SESSION" else n.WindowAggregate
        return kind(rows, plan.grouping, **shape)
    return n.Aggregate(rows, plan.grouping, **shape)


def _filtered(source: n.Node, stmt: ast.Select, deletes: bool) -> n.Node:
    return n.Filter(source, stmt.where, deletes) if stmt.where is not None else source


def _from(plan: QueryPlan, deletes: bool) -> n.Node:
    stmt = plan.statement
    if not stmt.joins:
        return _leaf(plan.inputs[0], 0, deletes)
    if plan.table_join is not None and plan.push:
        return n.TableJoin(_leaves(plan), stmt.joins, plan.table_join)
    if plan.diffs and plan.push:  # a table's rows rejected by its view are deletes
        return n.DiffJoin(_leaves(plan, lambda side: side.kind == TABLE), stmt.joins)
    tree = _leaf(plan.inputs[0], 0, deletes)
    for index, join in enumerate(stmt.joins, start=1):
        tree = _join_kind(plan, join)(tree, _leaf(plan.inputs[index], index), join, index)
    return tree


def _join_kind(plan: QueryPlan, join: ast.Join) -> type[n.BinaryJoin]:
    if not plan.push:
        return n.SnapshotJoin
    if plan.per_batch:
        return n.BatchLookupJoin
    if join.within is not None:
        return n.StreamStreamJoin
    if plan.looks_up:
        return n.LookupJoin
    return n.SnapshotJoin  # a table read once, when the query starts


def _leaves(plan: QueryPlan, deletes=lambda side: False) -> tuple[n.Node, ...]:
    return tuple(_leaf(side, index, deletes(side)) for index, side in enumerate(plan.inputs))


def _leaf(side: Input, index: int, deletes: bool = False) -> n.Node:
    if side.view is not None:
        return n.View(side, _tree(side.view, deletes), index)
    return n.Scan(side, index)
