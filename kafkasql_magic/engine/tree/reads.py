"""What a read of each source must carry, derived from the operator tree in one pass. Pure: no Spark.

A Python data source has no column pruning: Spark's JVM takes in every column the reader emits,
and converting headers is the reader's costliest per-record step. So a read carries the least
the tree's nodes need:

- **Headers**: none when no header column is used; the last header of each key when only
  `HEADER('k')` columns are; all of them for a used `HEADERS` column, or when a persistent query
  forwards the input record's headers. A header column whose decoding can fail a record (a text
  HEADER, or a dialect that requires INCLUDEd headers) is always read: whether a record is good
  must not depend on which columns a query selects.
- **Raw key and value bytes** of a record the reader's worker decoded are read again only when
  the record fails later (the processing log shows them) or a step keeps records (a join, an
  aggregation, a table, a view, SUBSCRIBE, a new key: `Node.keeps_records`), or an output record
  is made of it. A read leaves them out only for a tree of a Scan of one stream under a Filter
  and a Project whose expressions cannot fail a record: no envelope rule, no header read (an
  unreadable header is an error), no windowed key, only nodes that never record a failure.
- **Metadata**: the topic never (it is the source's); partition and offset always (they name
  every failed record); the record timestamp where the tree uses it (ROWTIME, a TIMESTAMP
  column) or keeps records (ordered or forwarded by it), or a push query's rows are shown in
  record-time order.

`prune_raw=False` keeps every raw and metadata column (as before any of this): one switch, for
benchmarks and tests (the session property `kafkasql.prune.raw.columns`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from ... import dialects
from ...catalog import HEADER, HEADERS, TIMESTAMP, SourceDef
from ...sql import ast
from ...sql.ast_materialize import SortKey
from ..analysis.plan import STREAM, Grouping
from ..analysis.windowed_source import window_of
from ..columns import ROWTIME
from . import nodes as n

#: Expression nodes that never record a failure (engine.expressions.compile_spark.Compiler.fail).
SAFE_NODES = (ast.Literal, ast.ColumnRef, ast.Dereference, ast.Subscript, ast.UnaryOp, ast.And, ast.Or, ast.Not,
              ast.IsNull, ast.Like, ast.InList, ast.Between, ast.Case, ast.StructConstructor, ast.Type, SortKey)
FAILING_OPERATORS = ("/", "%")
#: What a read carries when nothing is pruned: every metadata column.
ALL_METADATA = ("topic", "partition", "offset", "timestamp")


@dataclass(frozen=True)
class HeaderUse:
    needed: bool
    keys: tuple[str, ...] | None = None  # only these keys' last headers; None: every header


@dataclass(frozen=True)
class ReadNeeds:
    """What one read carries: its headers, its metadata columns, and whether the raw bytes of the
    records the worker decoded may be left out."""

    headers: HeaderUse
    metadata: tuple[str, ...] = ALL_METADATA
    raw_bytes_unused: bool = False


def read_needs(tree: n.Node, source: SourceDef, *, headers_forwarded: bool, records_forwarded: bool,
               shown_by_time: bool = False, prune_raw: bool = True) -> ReadNeeds:
    """What a read of `source` under `tree` carries. `headers_forwarded`: output records take
    their input records' headers; `records_forwarded`: they are made of the input records (a
    sink: their timestamps too); `shown_by_time`: a push query's rows, shown in record-time
    order (runtime: results.record_order)."""
    used = used_columns(tree)
    headers = header_use(source, forwarded=headers_forwarded, used=used)
    scan = _first_scan(tree)
    if not prune_raw or scan is None or scan.input.source is not source:  # a joined source's read: everything
        return ReadNeeds(headers)
    forwarded = headers_forwarded or records_forwarded
    plain = _plain(tree, scan, forwarded)
    timed = ROWTIME.casefold() in used or any(c.name.casefold() in used for c in source.with_role(TIMESTAMP))
    metadata = ("partition", "offset") + (("timestamp",) if timed or shown_by_time or not plain else ())
    unused = plain and not headers.needed and not dialects.get(source.dialect).envelope_rules(source) \
        and window_of(source) is None and all(_safe(e) for e in _expressions(tree))
    return ReadNeeds(headers, metadata, unused)


def header_use(source: SourceDef, *, forwarded: bool = False, used: frozenset[str] | None = None) -> HeaderUse:
    """What a read of `source` needs of each record's headers (`forwarded`: all of them);
    `used`: the column names (case-folded) the query refers to, None when not known (all)."""
    def wanted(c) -> bool:
        return used is None or c.name.casefold() in used or _can_fail(source, c)

    if forwarded or any(wanted(c) for c in source.with_role(HEADERS)):
        return HeaderUse(True)
    keys = tuple(dict.fromkeys(c.header_key for c in source.with_role(HEADER) if wanted(c)))
    return HeaderUse(bool(keys), keys if keys else None)


def _can_fail(source: SourceDef, column) -> bool:
    return column.role == HEADER and (column.type.name == "STRING"
                                      or dialects.get(source.dialect).requires_included_headers)


def used_columns(tree: n.Node) -> frozenset[str]:
    """Every column name (case-folded) a node of the tree refers to, views' trees included: a
    name any input has counts for all of them (a safe over-estimate, never an omission)."""
    names: set[str] = set()
    for node in n.walk(tree):
        for f in fields(node):
            value = getattr(node, f.name)
            if not isinstance(value, (n.Node, tuple)) or not _nodes(value):
                _collect(value, names)
    return frozenset(names)


def _nodes(value) -> bool:
    return isinstance(value, n.Node) or (isinstance(value, tuple) and any(isinstance(v, n.Node) for v in value))


def _collect(node, names: set[str]) -> None:
    if isinstance(node, ast.ColumnRef):
        names.add(node.name.casefold())
    elif isinstance(node, (tuple, list)):
        for item in node:
            _collect(item, names)
    elif isinstance(node, (ast.Node, Grouping)):
        for f in fields(node):
            _collect(getattr(node, f.name), names)


def _first_scan(tree: n.Node) -> n.Scan | None:
    """The FROM clause's first source, when it is one (not a view)."""
    leaf = tree
    while leaf.children:
        leaf = leaf.children[0]
    return leaf if isinstance(leaf, n.Scan) else None


def _plain(tree: n.Node, scan: n.Scan, forwarded: bool) -> bool:
    """One stream read, filtered and projected, nothing forwarded: no step keeps records."""
    return (not forwarded and scan.input.kind == STREAM and scan.input.source.kind == STREAM
            and not any(node.keeps_records for node in n.walk(tree)))


def _expressions(tree: n.Node) -> list[ast.Node]:
    """Every expression a plain tree evaluates per record: its outputs (`*` expanded), WHERE, ORDER BY."""
    found: list[ast.Node] = []
    for node in n.walk(tree):
        if isinstance(node, n.Project):
            found += [e for _, e in node.outputs] + list(node.order_by)
        elif isinstance(node, n.Filter):
            found.append(node.predicate)
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
