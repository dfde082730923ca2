"""The AST's statements and their parts (SELECT items, FROM items, joins, windows, DDL)."""

from __future__ import annotations

from dataclasses import dataclass

from .nodes import Expr, Literal, Node, Type


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
    """`[INNER | LEFT | RIGHT | FULL] JOIN source [WITHIN ... [GRACE PERIOD ...]] ON condition`.
    `within` is ksqlDB's window for stream-stream joins, (before, after) in milliseconds; `grace`
    its GRACE PERIOD in ms (None when not written)."""

    kind: str
    source: SourceRef
    on: Expr
    within: tuple[int, int] | None = None
    grace: int | None = None


@dataclass(frozen=True)
class Window(Node):
    """ksqlDB's `WINDOW TUMBLING|HOPPING|SESSION`: `size` in ms (the gap of a SESSION window),
    `advance` the hop of a HOPPING window; `retention` and `grace` (ms) as written (None when
    not: the analysis applies ksqlDB's defaults)."""

    kind: str
    size: int
    advance: int | None = None
    retention: int | None = None
    grace: int | None = None


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
    """A query. `emit_changes` makes it a push query; without it a pull query. `emit_final`
    (EMIT FINAL, also a push query) emits a window's row once, when the window closes."""

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
    emit_final: bool = False


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
    names a CREATE CONNECTION ... TO CONFLUENT SCHEMA REGISTRY), or PROTOBUF: MESSAGE
    `protobuf_message` of a FileDescriptorSet given inline (`protobuf_descriptors`, the bytea
    text as written), in a file (`protobuf_file`), or a registry's latest schema."""

    name: str
    csv_columns: int | None = None
    avro_schema: str | None = None
    registry_url: str | None = None
    confluent_wire_format: bool = True
    regex: str | None = None
    registry_connection: str | None = None
    avro_options: AvroSchemaOptions | None = None  # a sink's schemas: (AVRO ... FULLNAME, DOC ON, ...)
    protobuf_message: str | None = None
    protobuf_descriptors: str | None = None
    protobuf_file: str | None = None


@dataclass(frozen=True)
class AvroDoc(Node):
    """[KEY | VALUE] DOC ON {TYPE | COLUMN} name = 'text': a doc in a sink's generated Avro schemas."""

    schema: str  # KEY, VALUE, or "" for both
    kind: str  # TYPE | COLUMN
    name: tuple[str, ...]  # as written: a relation (TYPE), a relation and its column (COLUMN)
    text: str


@dataclass(frozen=True)
class AvroSchemaOptions(Node):
    """The options of FORMAT AVRO USING CONFLUENT SCHEMA REGISTRY CONNECTION r (...) that shape
    the Avro schemas a sink registers."""

    key_fullname: str | None = None  # AVRO KEY FULLNAME (default: row)
    value_fullname: str | None = None  # AVRO VALUE FULLNAME (default: envelope)
    null_defaults: bool = False  # NULL DEFAULTS: nullable fields default to null
    docs: tuple[AvroDoc, ...] = ()
    key_compatibility: str | None = None  # KEY COMPATIBILITY LEVEL: the key subject's, when it has none
    value_compatibility: str | None = None  # VALUE COMPATIBILITY LEVEL


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
    """SUBSCRIBE [TO] name | SUBSCRIBE [TO] (SELECT ...): Materialize's live push query.
    `options`: its WITH options, each a Property (name upper-cased, a BOOLEAN Literal);
    `envelope`: ENVELOPE UPSERT | DEBEZIUM (KEY (...)) as (kind, key columns), or None."""

    name: str | None = None
    query: Select | None = None
    options: tuple[Property, ...] = ()
    envelope: tuple[str, tuple[str, ...]] | None = None
