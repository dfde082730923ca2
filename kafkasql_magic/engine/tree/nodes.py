"""The operators of a query, one frozen type each. A node holds what its step decides (the
statement's expressions, the join, the grouping); `children` are its inputs, leftmost first.

Relational steps (a scan, a view, the joins, a filter) hand rows and their names to the step
above; result steps (a projection, an aggregation, SUBSCRIBE) make the result's columns. Which
family a join or an aggregation belongs to is its node's type, decided once by the planner,
so the build step and EXPLAIN dispatch on the type and read no flags."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import ClassVar

from ...sql import ast
from ..analysis.plan import Grouping, Input


@dataclass(frozen=True)
class Node:
    #: The step keeps records or reads each one's time, key and value bytes again (it orders,
    #: joins, groups, keys or forwards by them), so its reads carry them (engine.tree.reads).
    keeps_records: ClassVar[bool] = True

    @property
    def children(self) -> tuple["Node", ...]:
        """The node's inputs, leftmost first: its fields holding a node or a tuple of nodes."""
        found: list[Node] = []
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, Node):
                found.append(value)
            elif isinstance(value, tuple) and value and all(isinstance(v, Node) for v in value):
                found.extend(value)
        return tuple(found)


# ---- leaves -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Scan(Node):
    """One Kafka source's records, decoded into its columns (`index`: its place in FROM)."""

    input: Input
    index: int = 0
    keeps_records: ClassVar[bool] = False


@dataclass(frozen=True)
class View(Node):
    """A view's rows, named by its columns: the view's own tree, built inline."""

    input: Input
    body: Node
    index: int = 0


# ---- joins --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class BinaryJoin(Node):
    """`left` JOIN `right` (its `index` in FROM) ON the join's condition, one pair at a time: a
    chain of joins is a left-deep tree of them."""

    left: Node
    right: Node
    join: ast.Join
    index: int


@dataclass(frozen=True)
class StreamStreamJoin(BinaryJoin):
    """Two streams joined WITHIN a time window: each side's records per join key in keyed state,
    kept for the window and GRACE PERIOD behind their side's stream time (engine/stream_join)."""


@dataclass(frozen=True)
class SnapshotJoin(BinaryJoin):
    """Spark's join where the right side is the rows there are: a bounded read's join, or a
    streaming query's table (or view of one) read once, when the query starts."""


@dataclass(frozen=True)
class LookupJoin(BinaryJoin):
    """A stream joined with a table kept as keyed state: each record meets the table as it is
    when processed (a stream-table join feeding GROUP BY)."""


@dataclass(frozen=True)
class BatchLookupJoin(BinaryJoin):
    """A stream joined with a table read afresh for every micro-batch (a push query's
    stream-table join; the plan runs per micro-batch)."""


@dataclass(frozen=True)
class ChainJoin(Node):
    """Joins whose state holds every input whole, built in one stateful step over all of them."""

    inputs: tuple[Node, ...]
    joins: tuple[ast.Join, ...]


@dataclass(frozen=True)
class TableJoin(ChainJoin):
    """Table-table joins (`key`: PRIMARY_KEY or FOREIGN_KEY): both changelogs in Spark state,
    the result a changelog with tombstones."""

    key: str = ""


@dataclass(frozen=True)
class DiffJoin(ChainJoin):
    """Materialize's join in SUBSCRIBE: both inputs as multisets, the result's changes as diffs."""


# ---- row steps ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Filter(Node):
    """WHERE. `deletes`: a row it rejects is a delete of its key (a changelog's)."""

    child: Node
    predicate: ast.Expr
    deletes: bool = False
    keeps_records: ClassVar[bool] = False


# ---- result steps -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Project(Node):
    """The result columns; `keys` those keying a TABLE result, `partition_by` a new key,
    `order_by` a snapshot's order (Materialize)."""

    child: Node
    outputs: tuple[tuple[str, ast.Expr], ...]
    keys: tuple[str, ...] = ()
    partition_by: tuple[ast.Expr, ...] = ()
    order_by: tuple = ()


    @property
    def keeps_records(self) -> bool:  # a new key (PARTITION BY) is made of each record
        return bool(self.partition_by)


@dataclass(frozen=True)
class Aggregate(Node):
    """GROUP BY with Spark's aggregation (a window as Spark's window column), then HAVING and
    the outputs over the groups."""

    child: Node
    grouping: Grouping
    keys: tuple[str, ...] = ()
    partition_by: tuple[ast.Expr, ...] = ()
    order_by: tuple = ()


@dataclass(frozen=True)
class RecordAggregate(Aggregate):
    """GROUP BY writing one change per input record (ksqlDB's record cache off): each group's
    accumulators in Spark's keyed state, the records of a group in offset order."""


@dataclass(frozen=True)
class WindowAggregate(Aggregate):
    """TUMBLING or HOPPING windows with each group's open windows in keyed state: late records
    dropped after GRACE PERIOD, EMIT FINAL once a window closes."""


@dataclass(frozen=True)
class RecordWindowAggregate(WindowAggregate):
    """TUMBLING or HOPPING windows writing one change per input record (ksqlDB's record cache off)."""


@dataclass(frozen=True)
class SessionAggregate(Aggregate):
    """SESSION windows with each group's open sessions in keyed state: a record bridging sessions
    merges them, the merged ones retracted; late records dropped after GRACE PERIOD, EMIT FINAL
    once a session closes."""


@dataclass(frozen=True)
class RecordSessionAggregate(SessionAggregate):
    """SESSION windows writing the changes of each input record (ksqlDB's record cache off)."""


@dataclass(frozen=True)
class RetractingAggregate(Aggregate):
    """GROUP BY over a TABLE's changelog: a row's new version replaces its old one in its group
    (each row's version and each group's accumulators as keyed state, engine/table_aggregate).
    Its child's WHERE is applied inside, per version."""


@dataclass(frozen=True)
class RecordRetractingAggregate(RetractingAggregate):
    """A RetractingAggregate writing one change per change of a group (ksqlDB's record cache off)."""


@dataclass(frozen=True)
class BatchRetractingAggregate(RetractingAggregate):
    """A RetractingAggregate whose aggregates cannot take a row back: per micro-batch, the table's
    rows as state, the changed groups aggregated again from their members."""


@dataclass(frozen=True)
class Subscribe(Node):
    """Materialize's SUBSCRIBE: the result's rows as the driver turns them into diffs (`changes`:
    APPEND, CHANGELOG, AGGREGATE or JOIN)."""

    child: Node
    changes: str


def walk(node: Node):
    """`node` and every node under it, parents first."""
    yield node
    for child in node.children:
        yield from walk(child)
