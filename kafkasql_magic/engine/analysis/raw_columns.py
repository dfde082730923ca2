"""Which of a record's raw columns a read must carry: the raw key and value bytes of records the
reader's worker decoded, and the metadata columns (topic, partition, offset, timestamp).

Why: a Python data source has no column pruning, so Spark's JVM takes in every column the reader
emits. Pure: no Spark.

- The raw key and value bytes of a record the worker decoded are read again only when the record
  fails later (the processing log shows them) or when a table, join, aggregation or persistent
  query uses them (keys, tombstones, forwarding). A read leaves them out (`raw_bytes_unused`)
  only for a plain query over one stream whose every step after the decoding cannot fail a
  record: no envelope rule, no header read (an unreadable header is an error), no windowed key,
  and expressions built only of nodes that never record a failure (no function call, no `/` or
  `%`, no text cast).
- The topic is the source's own (`TOPIC_IS_CONSTANT`): the planner writes it as a literal.
- The record timestamp is read only where a plain query uses it (ROWTIME, a TIMESTAMP column)
  or pushes its rows to the notebook (shown in record-time order); tables, joins, windows,
  aggregations and persistent queries order or forward by it.
- Partition and offset name every failed record, so every read carries them.
"""

from __future__ import annotations

from ... import dialects
from ...catalog import TIMESTAMP
from ...sql import ast
from ...sql.ast_materialize import SortKey
from ..columns import ROWTIME
from .windowed_source import window_of

#: Expression nodes that never record a failure (engine.build.expressions.Compiler.fail).
SAFE_NODES = (ast.Literal, ast.ColumnRef, ast.Dereference, ast.Subscript, ast.UnaryOp, ast.And, ast.Or, ast.Not,
              ast.IsNull, ast.Like, ast.InList, ast.Between, ast.Case, ast.StructConstructor, ast.Type, SortKey)
FAILING_OPERATORS = ("/", "%")
#: What a read carries when the planner says nothing: every metadata column.
ALL_METADATA = ("topic", "partition", "offset", "timestamp")


def plain(plan, *, forwarded: bool) -> bool:
    """One stream read and projected: no join, view, grouping, window, table, SUBSCRIBE or persistent
    query (`forwarded`: the input record's headers and timestamp go to an output record)."""
    stmt = plan.statement
    only = plan.inputs[0] if len(plan.inputs) == 1 else None
    return (only is not None and only.view is None and only.kind == "STREAM" and only.source.kind == "STREAM"
            and not forwarded and not stmt.joins and not stmt.group_by and stmt.having is None
            and stmt.window is None and not stmt.partition_by and plan.grouping is None
            and not (plan.retracts or plan.tracks_time or plan.per_batch or plan.table_join or plan.diffs
                     or plan.changes)  # a SUBSCRIBE's diffs carry each record's time
            and plan.lookup is None)


def raw_bytes_unused(plan, *, forwarded: bool, headers_read: bool) -> bool:
    """Whether no record the worker decoded can need its raw key or value bytes again."""
    if not plain(plan, forwarded=forwarded) or headers_read:
        return False
    source = plan.source
    if dialects.get(source.dialect).envelope_rules(source) or window_of(source) is not None:
        return False
    return all(_safe(e) for e in expressions(plan))


def expressions(plan) -> list[ast.Node]:
    """Every expression the plan evaluates per record: its outputs (`*` expanded), WHERE, ORDER BY."""
    stmt = plan.statement
    found: list[ast.Node] = [e for _, e in plan.outputs]
    found += [stmt.where] if stmt.where is not None else []
    found += list(stmt.order_by)
    return found


def _safe(expression) -> bool:
    for node in ast.walk(expression):
        if isinstance(node, ast.BinaryOp):
            if node.op in FAILING_OPERATORS:
                return False
        elif isinstance(node, ast.Cast):
            if node.type.name == "STRING":  # a dialect's text cast may fail (Materialize's bytes)
                return False
        elif not isinstance(node, SAFE_NODES):
            return False
    return True


def metadata_columns(plan, *, forwarded: bool, used: frozenset[str]) -> tuple[str, ...]:
    """The metadata columns a read of the plan's FROM source carries (`used`: the column names,
    case-folded, the query refers to). The topic never: it is the source's."""
    wanted = ["partition", "offset"]
    source = plan.source
    timed = ROWTIME.casefold() in used or any(c.name.casefold() in used for c in source.with_role(TIMESTAMP))
    # a push query's rows are shown in record-time order (runtime: results.record_order)
    if timed or plan.push or not plain(plan, forwarded=forwarded):
        wanted.append("timestamp")
    return tuple(wanted)
