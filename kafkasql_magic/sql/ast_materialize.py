"""AST nodes only the Materialize dialect writes: secrets, connections, source tables, ORDER BY
keys, subqueries in FROM and the map operator. Frozen dataclasses like those of ast.py (same
positions, same equality rules); they live here because ast.py is full.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .ast import Expr, FunctionCall, Include, Node, Select, SourceFormat, Statement, Type


# ---------------------------------------------------------------- secrets and connections
@dataclass(frozen=True)
class CreateSecret(Statement):
    """CREATE SECRET [IF NOT EXISTS] name AS '...'. The value never shows in a repr."""

    name: str
    value: str = field(repr=False)
    if_not_exists: bool = False


@dataclass(frozen=True)
class ConnectionOption(Node):
    """One option of CREATE CONNECTION: `name` in Materialize's words, upper case and
    single-spaced (BROKER, SECURITY PROTOCOL, SASL PASSWORD, URL, ...); either `value` (text
    as written) or `secret` (the name of a secret holding the value)."""

    name: str
    value: str | None = None
    secret: str | None = None


@dataclass(frozen=True)
class CreateConnection(Statement):
    """CREATE CONNECTION [IF NOT EXISTS] name TO KAFKA (...) | TO CONFLUENT SCHEMA REGISTRY (...)
    [WITH (VALIDATE = false)]. `kind` is KAFKA or CONFLUENT SCHEMA REGISTRY; `validate` asks
    for the service to be reached at CREATE time, as Materialize does by default."""

    name: str
    kind: str
    options: tuple[ConnectionOption, ...] = ()
    if_not_exists: bool = False
    validate: bool = True


# ---------------------------------------------------------------- CREATE SOURCE ... FROM LOAD GENERATOR
@dataclass(frozen=True)
class CreateLoadGenerator(Statement):
    """CREATE SOURCE [IF NOT EXISTS] name FROM LOAD GENERATOR generator [(options)]: a source
    that makes its own records (loadgen/). `generator` upper case as written (COUNTER);
    `tick_interval` the TICK INTERVAL text as written, `up_to` UP TO's count."""

    name: str
    generator: str
    tick_interval: str | None = None
    up_to: int | None = None
    if_not_exists: bool = False


# ---------------------------------------------------------------- CREATE TABLE ... FROM SOURCE
@dataclass(frozen=True)
class CreateSourceTable(Statement):
    """CREATE TABLE name [(cols)] FROM SOURCE source [(REFERENCE ref)] [formats] [INCLUDE ...]
    [ENVELOPE ...]: Materialize's current form of a Kafka source's decoding, equivalent to a
    CREATE SOURCE with the same formats, includes and envelope over the source's topic
    (`reference`, when given, names that topic). Fields mean what CreateKafkaSource's mean."""

    name: str
    source: str
    reference: str | None = None
    columns: tuple[str, ...] = ()
    key_format: SourceFormat | None = None
    value_format: SourceFormat | None = None
    format: SourceFormat | None = None
    includes: tuple[Include, ...] = ()
    envelope: str = "NONE"  # NONE | UPSERT | DEBEZIUM
    value_errors_column: str | None = None
    if_not_exists: bool = False


# ---------------------------------------------------------------- queries
@dataclass(frozen=True)
class SortKey(Node):
    """One ORDER BY key. `nulls_first` is resolved as PostgreSQL does when not written:
    NULLS LAST ascending, NULLS FIRST descending."""

    expr: Expr
    descending: bool = False
    nulls_first: bool = False


@dataclass(frozen=True)
class Subquery(Node):
    """`(SELECT ...) [AS] alias` in FROM or JOIN, where a SourceRef may stand."""

    query: Select
    alias: str | None = None


def base_relation(item: Node) -> str:
    """The catalog name a FROM item reads: a relation's name, or (through subqueries) the
    relation the innermost subquery's FROM names."""
    while isinstance(item, Subquery):
        item = item.query.source
    return item.name


@dataclass(frozen=True)
class MapLiteral(Expr):
    """`MAP['k' => v, ...]`: a map of text keys; a repeated key keeps its last value."""

    entries: tuple[tuple[Expr, Expr], ...]


@dataclass(frozen=True)
class MapLookup(Expr):
    """`map -> key`: the value under `key` in a map (NULL when absent). Over jsonb (JSON text),
    `doc -> 'key'` / `doc -> 0` is a member / array element as jsonb, and `doc ->> ...`
    (`as_text`) the same as text: the type of `base` decides which."""

    base: Expr
    key: Expr
    as_text: bool = False

    @property
    def op(self) -> str:
        return "->>" if self.as_text else "->"


@dataclass(frozen=True)
class JsonPath(Expr):
    """jsonb's `doc #> '{a,0}'`: the member at a path (names and array indexes, negative from
    the end) as jsonb, and `doc #>> ...` (`as_text`) as text; `path` is a text array literal."""

    base: Expr
    path: Expr
    as_text: bool = False

    @property
    def op(self) -> str:
        return "#>>" if self.as_text else "#>"


@dataclass(frozen=True)
class OrderedCall(Expr):
    """`name(args ORDER BY keys)`: an aggregate whose input order the keys decide
    (map_agg's last value per key, list_agg's order)."""

    call: FunctionCall
    order_by: tuple[SortKey, ...]

    # the call's own name and arguments, so an ordered aggregate call is handled as any other
    @property
    def name(self) -> str:
        return self.call.name

    @property
    def args(self) -> tuple[Expr, ...]:
        return self.call.args

    @property
    def star(self) -> bool:
        return self.call.star


# ---------------------------------------------------------------- sinks
@dataclass(frozen=True)
class CreateSink(Statement):
    """CREATE SINK [IF NOT EXISTS] name FROM relation INTO KAFKA {BROKER 'b' | CONNECTION c}
    (TOPIC 't') [KEY (cols) [NOT ENFORCED]] [HEADERS col] formats ENVELOPE {UPSERT | DEBEZIUM}.
    Exactly one of `broker` / `connection` is set; `format` alone sets both key and value
    formats, as in CREATE SOURCE."""

    name: str
    relation: str
    topic: str
    envelope: str  # UPSERT | DEBEZIUM
    broker: str | None = None
    connection: str | None = None
    key: tuple[str, ...] = ()
    key_not_enforced: bool = False
    headers: str | None = None
    key_format: SourceFormat | None = None
    value_format: SourceFormat | None = None
    format: SourceFormat | None = None
    if_not_exists: bool = False
    topic_options: SinkTopicOptions | None = None  # None: none given
    snapshot: bool = True  # WITH (SNAPSHOT = false): only the changes after the sink is created


@dataclass(frozen=True)
class SinkTopicOptions(Node):
    """The connection options of a CREATE SINK after its TOPIC: how records are compressed and
    partitioned, and how the topic is made when it does not exist."""

    compression: str | None = None  # COMPRESSION TYPE, lower-cased as written
    partition_count: int | None = None  # TOPIC PARTITION COUNT
    replication_factor: int | None = None  # TOPIC REPLICATION FACTOR
    config: tuple[tuple[str, str], ...] = ()  # TOPIC CONFIG MAP['k' => 'v', ...]
    partition_by: Expr | None = None  # PARTITION BY: each record's partition, a hash of its row
    # Materialize's exactly-once bookkeeping (its producer's transactional ids, its progress topic's
    # consumer group): kept as written; this sink's producer is not transactional and keeps no
    # progress topic, so nothing uses them (its progress is its checkpoint)
    transactional_id_prefix: str | None = None  # TRANSACTIONAL ID PREFIX
    progress_group_id_prefix: str | None = None  # PROGRESS GROUP ID PREFIX


@dataclass(frozen=True)
class ShowCreateSink(Statement):
    """SHOW CREATE SINK name: the sink's name and its CREATE SINK statement."""

    name: str


@dataclass(frozen=True)
class DropSink(Statement):
    """DROP SINK [IF EXISTS] name: its query stops; the topic stays, as in Materialize."""

    name: str
    if_exists: bool = False


# ---------------------------------------------------------------- custom types
@dataclass(frozen=True)
class NamedType(Type):
    """A type named by CREATE TYPE (`name` is NAMED): the catalog's types resolve it."""

    type_name: str = ""


@dataclass(frozen=True)
class CommentOn(Statement):
    """COMMENT ON kind name IS 'text' | NULL: `kind` as Materialize names the object (table,
    source, view, materialized view, sink, type, connection, secret, column); `column_name` for
    a column's comment; `text` None removes the comment."""

    kind: str
    name: str
    column_name: str | None
    text: str | None


@dataclass(frozen=True)
class CreateType(Statement):
    """CREATE TYPE name AS (field type, ...) | AS LIST (ELEMENT TYPE = t) | AS MAP (KEY TYPE = text,
    VALUE TYPE = t): `type` is the STRUCT, ARRAY or MAP it names (its parts may be NamedTypes)."""

    name: str
    type: Type
