"""The immutable plan of a SELECT: everything decided about it before Spark sees it.

The build step (`engine.build`) turns a plan into frames; the runtime reads the plan (names,
keys, how failed records are captured) and the frames it is handed, and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...catalog import SourceDef
from ...dialects import KSQL, Dialect
from ...sql import ast
from .join_key import JoinKey
from .lookup import KeyLookup
from .seek import Seek

STREAM, TABLE = "STREAM", "TABLE"
#: The columns SUBSCRIBE puts before a diff join's own (diff_join.rules): the change's time
#: (epoch milliseconds) and its multiplicity (+1 an insert, -1 a retraction, n for n equal rows).
MZ_COLUMNS = ("mz_timestamp", "mz_diff")

#: How the records that fail before a join or an aggregation reach the processing log (they
#: never reach the result frame): nothing to capture; per micro-batch as streaming metrics;
#: in Observations after a bounded run; in frames the runtime collects per micro-batch
#: (a per-batch plan: an Observation overflows Spark's stack inside foreachBatch).
CAPTURE_NONE, CAPTURE_METRICS, CAPTURE_OBSERVATIONS, CAPTURE_FRAMES = "none", "metrics", "observations", "frames"


@dataclass(frozen=True)
class Input:
    """One FROM item: the relation it names, the Kafka source under it and its columns."""

    ref: ast.SourceRef
    name: str  # the relation's name in the catalog
    source: SourceDef  # the Kafka-backed source under it (through views)
    kind: str  # STREAM | TABLE
    columns: tuple[str, ...]  # what `*` expands to, in order
    pseudocolumns: tuple[str, ...]  # names visible besides the columns
    view: "QueryPlan | None" = None  # a view's own plan, built inline

    @property
    def qualifiers(self) -> tuple[str, ...]:
        """The alias (shown in messages) or name, then the relation's name."""
        return ((self.ref.alias,) if self.ref.alias else ()) + (self.name,)

    @property
    def visible(self) -> tuple[str, ...]:
        return self.columns + self.pseudocolumns


@dataclass(frozen=True)
class Grouping:
    """GROUP BY: keys staged as `__g{i}`, aggregate calls as `__agg{i}` (arguments `__a{i}_{n}`);
    `having` and `outputs` are the statement's expressions over those names."""

    keys: tuple[ast.Expr, ...]
    calls: tuple[ast.FunctionCall, ...]
    window: ast.Window | None
    rowtime: ast.ColumnRef | None  # the record time a window groups by
    having: ast.Expr | None
    outputs: tuple[ast.Expr, ...]


@dataclass(frozen=True)
class QueryPlan:
    """A planned SELECT.

    `kind` is TABLE when the rows are a changelog keyed by `key_names` (a table, or an
    aggregation), else STREAM. A push query whose joins are all stream-table joins is
    `per_batch`: Spark reads a static DataFrame's Python source once per DataFrame, so the
    stream is read raw and built on every micro-batch, reading each table afresh (as ksqlDB
    joins each record with the table as it is then). `observed` names the error metrics
    (metric -> the source whose records it carries) captured as `capture` says."""

    statement: ast.Select
    inputs: tuple[Input, ...]
    outputs: tuple[tuple[str, ast.Expr], ...]  # (result name, expression) per result column
    keys: tuple[str, ...]  # the result columns that key a TABLE result
    kind: str
    grouping: Grouping | None
    per_batch: bool
    observed: tuple[tuple[str, str], ...]
    capture: str
    seek: Seek  # what the WHERE clause says about where to read (push queries on seekable sources)
    #: A push aggregation over a TABLE's changelog: a row's new version replaces its old one in
    #: its group (retracted), so the plan runs per micro-batch with the table's rows as state.
    retracts: bool = False
    #: A windowed push aggregation tracking stream time, so late records are dropped and EMIT FINAL knows when a window
    #: closes: in keyed state (engine/window), a group's open windows or sessions.
    tracks_time: bool = False
    dialect: Dialect = KSQL  # the query's (its functions and casts)
    #: The keys a pull query on a table looks up (its WHERE pins the key to constants), else None.
    lookup: KeyLookup | None = None
    #: A push query joining two tables (table_join.kinds: PRIMARY_KEY or FOREIGN_KEY): both
    #: tables stream as changelogs into Spark state, and the result is a changelog with tombstones.
    table_join: str | None = None
    #: A join's key (analysis.join_key): the ON operands, the synthetic ROWKEY column if any, and
    #: the key columns the build fills with the join key where their own side is missing.
    join_key: JoinKey | None = None
    #: A SUBSCRIBE over a join of two relations (diff_join.rules): both kept whole as
    #: multisets in Spark state, the result's changes as rows after `mz_timestamp` and `mz_diff`.
    diffs: bool = False
    #: A push query joining a stream with a table on its key (lookup_join.choice.looks_up_table):
    #: the table is keyed state, each record joined with its row as it is then.
    looks_up: bool = False
    #: A SUBSCRIBE's output (subscribe.rules: APPEND, CHANGELOG, AGGREGATE or JOIN): how its rows
    #: become Materialize's diffs (`mz_timestamp`, `mz_diff`, then the columns); None otherwise.
    changes: str | None = None

    @property
    def source(self) -> SourceDef:
        return self.inputs[0].source

    @property
    def names(self) -> list[str]:
        return [*(MZ_COLUMNS if self.diffs or self.changes else ()), *(name for name, _ in self.outputs)]

    @property
    def key_names(self) -> list[str]:
        return list(self.keys)

    @property
    def passes_key(self) -> bool:
        """The result's key is its one source's record key, passed through (no GROUP BY,
        PARTITION BY or join makes a new one): where that record had no key, ksqlDB's key is
        NULL as a whole, not a key of NULL columns, and so its sink writes no key bytes."""
        stmt = self.statement
        return (bool(self.keys) and self.grouping is None and not stmt.partition_by and not stmt.joins
                and len(self.inputs) == 1 and self.inputs[0].view is None and self.table_join is None
                and not self.diffs)

    @property
    def aggregating(self) -> bool:
        return self.grouping is not None

    @property
    def push(self) -> bool:
        return self.statement.emit_changes

    @property
    def limit(self) -> int | None:
        return self.statement.limit

    @property
    def output_mode(self) -> str:
        return "update" if self.aggregating else "append"

    @property
    def observed_sources(self) -> dict[str, str]:
        return dict(self.observed)
