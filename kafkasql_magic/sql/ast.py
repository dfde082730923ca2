"""The AST shared by every dialect: frozen dataclasses that only describe, never do.

Every node carries the line and column (1-based) where it starts in the cell, so the
planner can point at the offending token. Positions do not take part in equality, so
tests can compare trees built by hand with parsed ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Node:
    line: int = field(default=0, compare=False, repr=False, kw_only=True)
    column: int = field(default=0, compare=False, repr=False, kw_only=True)


# ---------------------------------------------------------------- types
@dataclass(frozen=True)
class Type(Node):
    """A ksql type. `name` is canonical upper case: BOOLEAN, INT, BIGINT, DOUBLE, DECIMAL,
    STRING, BYTES, DATE, TIME, TIMESTAMP, ARRAY, MAP, STRUCT (INTEGER -> INT, VARCHAR -> STRING)."""

    name: str
    precision: int | None = None  # DECIMAL(p, s)
    scale: int | None = None
    element: Type | None = None  # ARRAY<element>
    key: Type | None = None  # MAP<key, value>
    value: Type | None = None
    fields: tuple[tuple[str, Type], ...] = ()  # STRUCT<name type, ...>


# ---------------------------------------------------------------- expressions
@dataclass(frozen=True)
class Expr(Node):
    pass


@dataclass(frozen=True)
class Literal(Expr):
    """`kind` is STRING, INT, BIGINT, DOUBLE, DECIMAL, BOOLEAN or NULL. Numbers keep the
    Python value (int, float; DECIMAL keeps the literal text in `value` as str)."""

    value: Any
    kind: str


@dataclass(frozen=True)
class ColumnRef(Expr):
    """A column, optionally qualified by a source name or alias (`s.col`)."""

    name: str
    qualifier: str | None = None


@dataclass(frozen=True)
class Dereference(Expr):
    """Struct field access: `base->field`."""

    base: Expr
    field: str


@dataclass(frozen=True)
class Subscript(Expr):
    """`base[index]`: 1-based for arrays (negative counts from the end), key for maps."""

    base: Expr
    index: Expr


@dataclass(frozen=True)
class FunctionCall(Expr):
    """`name` upper-cased; `star` for COUNT(*)."""

    name: str
    args: tuple[Expr, ...] = ()
    star: bool = False


@dataclass(frozen=True)
class BinaryOp(Expr):
    """Arithmetic (+ - * / %), string concatenation (||) and comparisons (= <> < <= > >=);
    `!=` is normalised to `<>`."""

    op: str
    left: Expr
    right: Expr


@dataclass(frozen=True)
class UnaryOp(Expr):
    """`-x` and `+x`."""

    op: str
    operand: Expr


@dataclass(frozen=True)
class And(Expr):
    left: Expr
    right: Expr


@dataclass(frozen=True)
class Or(Expr):
    left: Expr
    right: Expr


@dataclass(frozen=True)
class Not(Expr):
    operand: Expr


@dataclass(frozen=True)
class IsNull(Expr):
    operand: Expr
    negated: bool = False


@dataclass(frozen=True)
class Like(Expr):
    operand: Expr
    pattern: Expr
    negated: bool = False
    escape: str | None = None


@dataclass(frozen=True)
class InList(Expr):
    operand: Expr
    items: tuple[Expr, ...]
    negated: bool = False


@dataclass(frozen=True)
class Between(Expr):
    operand: Expr
    low: Expr
    high: Expr
    negated: bool = False


@dataclass(frozen=True)
class Case(Expr):
    """Searched CASE (`operand` None) or simple CASE (`CASE x WHEN 1 THEN ...`)."""

    whens: tuple[tuple[Expr, Expr], ...]
    else_: Expr | None = None
    operand: Expr | None = None


@dataclass(frozen=True)
class Cast(Expr):
    operand: Expr
    type: Type


# ---------------------------------------------------------------- select
@dataclass(frozen=True)
class StructConstructor(Expr):
    """ksql's STRUCT(name := value, ...)."""

    fields: tuple[tuple[str, Expr], ...]


@dataclass(frozen=True)
class Star(Node):
    """`*` or `s.*` in a select list."""

    qualifier: str | None = None


@dataclass(frozen=True)
class SelectItem(Node):
    expr: Expr
    alias: str | None = None


@dataclass(frozen=True)
class SourceRef(Node):
    name: str
    alias: str | None = None


@dataclass(frozen=True)
class Join(Node):
    """`[INNER | LEFT | RIGHT | FULL] JOIN source [WITHIN ...] ON condition`. `within` is
    ksqlDB's window for stream-stream joins, (before, after) in milliseconds."""

    kind: str
    source: SourceRef
    on: Expr
    within: tuple[int, int] | None = None


@dataclass(frozen=True)
class Window(Node):
    """ksqlDB's `WINDOW TUMBLING|HOPPING|SESSION`: `size` in ms (the gap of a SESSION window),
    `advance` the hop of a HOPPING window."""

    kind: str
    size: int
    advance: int | None = None


# ---------------------------------------------------------------- statements
@dataclass(frozen=True)
class Statement(Node):
    pass


@dataclass(frozen=True)
class ColumnDef(Node):
    """A declared column. `role` is None (value column), KEY, PRIMARY_KEY, HEADERS or HEADER
    (then `header_key` is the header name from `HEADER('k')`)."""

    name: str
    type: Type
    role: str | None = None
    header_key: str | None = None


@dataclass(frozen=True)
class Property(Node):
    """A WITH-clause property; `name` upper-cased, `value` a Literal."""

    name: str
    value: Literal


@dataclass(frozen=True)
class CreateSource(Statement):
    """CREATE [OR REPLACE] STREAM|TABLE [IF NOT EXISTS] name (cols) WITH (props)."""

    kind: str  # STREAM | TABLE
    name: str
    columns: tuple[ColumnDef, ...]
    properties: tuple[Property, ...] = ()
    or_replace: bool = False
    if_not_exists: bool = False


@dataclass(frozen=True)
class Select(Statement):
    """A query. `emit_changes` makes it a push query; without it a pull query."""

    items: tuple[Star | SelectItem, ...]
    source: SourceRef
    where: Expr | None = None
    group_by: tuple[Expr, ...] = ()
    having: Expr | None = None
    partition_by: tuple[Expr, ...] = ()
    emit_changes: bool = False
    limit: int | None = None
    joins: tuple[Join, ...] = ()
    window: Window | None = None
    order_by: tuple = ()  # ast_materialize.SortKey, Materialize's ORDER BY


@dataclass(frozen=True)
class Describe(Statement):
    name: str
    extended: bool = False


@dataclass(frozen=True)
class Show(Statement):
    """SHOW|LIST STREAMS|TABLES|TOPICS|QUERIES|PROPERTIES|VARIABLES [EXTENDED]."""

    what: str
    extended: bool = False


@dataclass(frozen=True)
class Drop(Statement):
    kind: str  # STREAM | TABLE
    name: str
    if_exists: bool = False
    delete_topic: bool = False


@dataclass(frozen=True)
class Print(Statement):
    """PRINT topic [FROM BEGINNING] [INTERVAL|SAMPLE n] [LIMIT n]."""

    topic: str
    from_beginning: bool = False
    limit: int | None = None
    interval: int | None = None


@dataclass(frozen=True)
class SetProperty(Statement):
    name: str
    value: str


@dataclass(frozen=True)
class UnsetProperty(Statement):
    name: str


@dataclass(frozen=True)
class Define(Statement):
    name: str
    value: str


@dataclass(frozen=True)
class Undefine(Statement):
    name: str


@dataclass(frozen=True)
class Explain(Statement):
    statement: Statement


@dataclass(frozen=True)
class ExplainQuery(Statement):
    """EXPLAIN query_id: a running persistent query."""

    query_id: str


@dataclass(frozen=True)
class InsertValues(Statement):
    """INSERT INTO s [(cols)] VALUES (...): parsed now; validated by the planner."""

    target: str
    columns: tuple[str, ...]
    values: tuple[Expr, ...]


@dataclass(frozen=True)
class InsertSelect(Statement):
    """INSERT INTO s SELECT ...: a persistent query appending to s."""

    target: str
    query: Select
    properties: tuple[Property, ...] = ()


@dataclass(frozen=True)
class CreateAsSelect(Statement):
    """CREATE [OR REPLACE] STREAM|TABLE name [WITH (...)] AS SELECT ...: a persistent query."""

    kind: str
    name: str
    query: Select
    properties: tuple[Property, ...] = ()
    or_replace: bool = False
    if_not_exists: bool = False


@dataclass(frozen=True)
class TerminateQuery(Statement):
    """TERMINATE query_id | TERMINATE ALL."""

    query_id: str | None  # None means ALL



# ---------------------------------------------------------------- Materialize dialect
@dataclass(frozen=True)
class SourceFormat(Node):
    """A Materialize format: TEXT, BYTES, JSON, CSV (`csv_columns`), REGEX (`regex`, as
    written), AVRO with an inline schema (`avro_schema`; records Confluent-framed unless
    `confluent_wire_format` is False, as Materialize's CONFLUENT WIRE FORMAT option) or a
    Confluent registry (`registry_url`; "" means the session's unless `registry_connection`
    names a CREATE CONNECTION ... TO CONFLUENT SCHEMA REGISTRY)."""

    name: str
    csv_columns: int | None = None
    avro_schema: str | None = None
    registry_url: str | None = None
    confluent_wire_format: bool = True
    regex: str | None = None
    registry_connection: str | None = None


@dataclass(frozen=True)
class Include(Node):
    """INCLUDE KEY | HEADERS | HEADER 'k' | PARTITION | OFFSET | TIMESTAMP | TOPIC [AS name] [BYTES]."""

    what: str
    alias: str | None = None
    header_key: str | None = None
    as_bytes: bool = False


@dataclass(frozen=True)
class CreateKafkaSource(Statement):
    """CREATE SOURCE name [(cols)] FROM KAFKA { BROKER '...' TOPIC '...' | CONNECTION c (TOPIC
    '...', START OFFSET (...), START TIMESTAMP n) } formats [INCLUDE ...] [ENVELOPE ...].
    With a CONNECTION the formats may be left out (Materialize's current syntax: tables
    decode, see ast_materialize.CreateSourceTable). `start_offsets` are per partition, in
    partition order; a negative `start_timestamp` is milliseconds before now.
    `value_errors_column` names the column of ENVELOPE UPSERT (VALUE DECODING ERRORS = INLINE)."""

    name: str
    topic: str
    columns: tuple[str, ...] = ()
    broker: str | None = None
    key_format: SourceFormat | None = None
    value_format: SourceFormat | None = None
    format: SourceFormat | None = None  # bare FORMAT: the value format, no key format
    includes: tuple[Include, ...] = ()
    envelope: str = "NONE"  # NONE | UPSERT | DEBEZIUM
    if_not_exists: bool = False
    connection: str | None = None
    start_offsets: tuple[int, ...] | None = None
    start_timestamp: int | None = None
    value_errors_column: str | None = None


@dataclass(frozen=True)
class CreateView(Statement):
    """CREATE [MATERIALIZED] VIEW name AS SELECT ...: a named query over sources."""

    name: str
    query: Select
    materialized: bool = False
    or_replace: bool = False
    if_not_exists: bool = False


@dataclass(frozen=True)
class Subscribe(Statement):
    """SUBSCRIBE [TO] name | SUBSCRIBE [TO] (SELECT ...): Materialize's live push query."""

    name: str | None = None
    query: Select | None = None


def children(node) -> list[Node]:
    """The nodes directly under `node`, in field order (CASE's (condition, result) pairs flattened)."""
    found = []
    for value in vars(node).values():
        for item in value if isinstance(value, tuple) else (value,):
            found += [p for p in (item if isinstance(item, tuple) else (item,)) if isinstance(p, Node)]
    return found


def walk(node):
    """Every AST node under `node` (itself included), depth first."""
    yield node
    for child in children(node):
        yield from walk(child)
