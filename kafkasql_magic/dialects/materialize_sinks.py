"""Materialize's CREATE SINK, checked against the relation it reads: pure, no Spark.

`plan_sink` turns the statement, the relation's columns and its known unique keys into a
`SinkSpec` (what to write, how), or refuses it with Materialize's messages: an upsert sink
without KEY, a KEY not known to be unique (unless NOT ENFORCED), a HEADERS column that is not
map[text => text] or map[text => bytea], HEADERS with ENVELOPE DEBEZIUM.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Sequence

from ..errors import StatementError
from ..formats import Field
from ..sql import ast
from ..sql.ast_materialize import CreateSink, SinkTopicOptions
from ..typecheck import Checker
from ..typecheck.messages import MESSAGES
from . import limits

#: The formats a sink writes, and which column types each can hold (None: every type).
SINK_FORMATS: dict[str, frozenset[str] | None] = {
    "JSON": None,
    "AVRO": None,
    "TEXT": None,
    "BYTES": frozenset({"BYTES", "STRING"}),
}
#: Formats that hold exactly one column.
SINGLE_COLUMN = frozenset({"TEXT", "BYTES"})
#: Map value types a HEADERS column may have.
HEADER_VALUE_TYPES = frozenset({"STRING", "BYTES"})
#: Header keys Materialize keeps for itself: such entries of a HEADERS map are not written.
RESERVED_HEADER_PREFIX = "materialize-"
#: The schema Materialize's objects live in when none is named (their names in messages).
DEFAULT_SCHEMA = "materialize.public"
#: COMPRESSION TYPE's values; Materialize's default is lz4.
COMPRESSION_TYPES = ("none", "gzip", "snappy", "lz4", "zstd")
DEFAULT_COMPRESSION = "lz4"
#: Types a PARTITION BY expression may have: those that cast to uint8, the hash it stands for.
PARTITION_HASH_TYPES = frozenset({"INT", "BIGINT", "DECIMAL", "DOUBLE"})


@dataclass(frozen=True)
class SinkFormat:
    """One role's format: TEXT, BYTES, JSON or AVRO (with the registry URL it registers at)."""

    name: str
    registry_url: str | None = None


#: The Schema Registry's compatibility levels, as Materialize accepts them (upper case only).
COMPATIBILITY_LEVELS = ("BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE",
                        "NONE")


@dataclass(frozen=True)
class AvroShape:
    """How a sink's generated Avro schemas are named and documented (the registry format's
    options): each record's fullname, the docs of the key's and the value's records and of their
    fields (by column), whether nullable fields default to null, and the compatibility level each
    subject gets when it has none of its own."""

    key_name: str = "row"
    value_name: str = "envelope"
    null_defaults: bool = False
    key_doc: str | None = None
    value_doc: str | None = None
    key_field_docs: tuple[tuple[str, str], ...] = ()
    value_field_docs: tuple[tuple[str, str], ...] = ()
    key_compatibility: str | None = None
    value_compatibility: str | None = None


@dataclass(frozen=True)
class SinkSpec:
    """A checked sink: the relation's columns (all of them go in the value, as in
    Materialize), the KEY columns, the HEADERS column, formats and envelope."""

    name: str
    relation: str
    topic: str
    broker: str | None
    envelope: str  # UPSERT | DEBEZIUM
    columns: tuple[Field, ...]
    key: tuple[Field, ...]
    headers: str | None
    key_format: SinkFormat | None
    value_format: SinkFormat
    #: The relation's unique key (a table's key, a GROUP BY's keys): what Debezium's "before"
    #: is looked up by. Empty for an append-only relation.
    relation_key: tuple[str, ...] = ()
    #: The connection options after TOPIC (compression, topic creation, PARTITION BY), checked.
    topic_options: SinkTopicOptions = SinkTopicOptions()
    #: WITH (SNAPSHOT = false): the relation's rows at creation are not written, only later changes.
    snapshot: bool = True
    avro: AvroShape = AvroShape()

    @property
    def compression(self) -> str:
        return self.topic_options.compression or DEFAULT_COMPRESSION


def qualified(name: str) -> str:
    """A name as Materialize shows it in messages: "materialize.public.name"."""
    return f'"{DEFAULT_SCHEMA}.{name}"'


def _quoted_list(names: Sequence[str]) -> str:
    return ", ".join(f'"{n}"' for n in names)


def uniqueness_message(relation: str, key: Sequence[str], known: Sequence[Sequence[str]]) -> str:
    """Materialize's error (with its DETAIL) for an upsert KEY not known to be unique."""
    if known:
        valid = "The following keys are known to be unique for the underlying relation:\n" + "\n".join(
            f"  ({_quoted_list(k)})" for k in known)
    else:
        valid = "There are no known valid unique keys for the underlying relation."
    return ("upsert key could not be validated as unique\nDETAIL: Materialize could not prove that the "
            f"specified upsert envelope key ({_quoted_list(key)}) was a unique key of the underlying relation "
            f"{qualified(relation)}. {valid}")


def _format(fmt: ast.SourceFormat | None, role: str) -> SinkFormat | None:
    if fmt is None:
        return None
    if fmt.name not in SINK_FORMATS or (fmt.name == "AVRO" and fmt.registry_url is None):
        shown = "AVRO USING SCHEMA" if fmt.name == "AVRO" else fmt.name
        raise StatementError(f"line {fmt.line}:{fmt.column}: {shown} is not a sink format: sinks write "
                             "AVRO USING CONFLUENT SCHEMA REGISTRY, JSON, TEXT or BYTES")
    return SinkFormat(fmt.name, fmt.registry_url or None)


def _check_fits(fmt: SinkFormat | None, fields: Sequence[Field], role: str) -> None:
    if fmt is None:
        return
    if fmt.name in SINGLE_COLUMN and len(fields) != 1:
        raise StatementError(f"{fmt.name} format requires a single-column {role}: the sink's {role} has "
                             f"{len(fields)} columns ({', '.join(f.name for f in fields)})")
    allowed = SINK_FORMATS[fmt.name]
    for f in fields:
        if allowed is not None and f.type.name not in allowed:
            raise StatementError(f"{fmt.name} format cannot write column {f.name} of type "
                                 f"{f.type.name.lower()} (it writes bytea or text)")


def _key(stmt: CreateSink, columns: dict[str, Field], known: Sequence[Sequence[str]]) -> tuple[Field, ...]:
    seen: set[str] = set()
    for name in stmt.key:
        if name in seen:
            raise StatementError(f"Repeated column name in sink key: {name}")
        seen.add(name)
        if name not in columns:
            raise StatementError(f"No such column: {name}")
    unique = any(set(k) <= seen for k in known)
    if stmt.key and not unique and stmt.envelope == "UPSERT" and not stmt.key_not_enforced:
        raise StatementError(uniqueness_message(stmt.relation, stmt.key, known))
    if not stmt.key and stmt.envelope == "UPSERT":
        raise StatementError("upsert sinks must specify a key")
    return tuple(columns[n] for n in stmt.key)


def _headers(stmt: CreateSink, columns: dict[str, Field]) -> str | None:
    if stmt.headers is None:
        return None
    if stmt.envelope == "DEBEZIUM":
        raise StatementError("HEADERS option is not supported with ENVELOPE DEBEZIUM")
    column = columns.get(stmt.headers)
    if column is None:
        raise StatementError(f"HEADERS column ({stmt.headers}) is unknown")
    t = column.type
    if t.name != "MAP" or t.key is None or t.key.name != "STRING" or t.value.name not in HEADER_VALUE_TYPES:
        raise StatementError("HEADERS column must have type map[text => text] or map[text => bytea]")
    return column.name


def _avro_shape(stmt: CreateSink, columns: dict[str, Field]) -> AvroShape:
    """The registry format's schema options, checked with Materialize's messages. A doc names
    the sink's relation (TYPE) or one of its columns (COLUMN); without KEY or VALUE it is for
    both schemas, and a KEY or VALUE doc wins over it."""
    formats = [f for f in (stmt.format, stmt.value_format, stmt.key_format) if f is not None]
    options = next((f.avro_options for f in formats if f.avro_options is not None), None)
    if options is None:
        return AvroShape()
    if not stmt.key and options.key_fullname is not None:
        raise StatementError("Cannot specify AVRO KEY FULLNAME without a corresponding KEY field")
    if stmt.key and (options.key_fullname is None) != (options.value_fullname is None):
        raise StatementError("Must specify both AVRO KEY FULLNAME and AVRO VALUE FULLNAME when specifying "
                             "generated schema names")
    docs: dict[tuple[str, str | None], str] = {}  # (KEY | VALUE, column or None for the record) -> text
    for doc in sorted(options.docs, key=lambda d: d.schema != ""):  # KEY / VALUE docs after (over) the shared ones
        *relation, column = doc.name if doc.kind == "COLUMN" else (*doc.name, None)
        if not relation or relation[-1].lower() != stmt.relation.lower():
            raise StatementError(f"DOC ON {doc.kind} names {'.'.join(doc.name)}: here a doc is for the sink's "
                                 f"relation {stmt.relation} (DOC ON TYPE {stmt.relation}) or its columns")
        if column is not None and column not in columns:
            raise StatementError(f'column "{".".join(doc.name)}" does not exist')
        for schema in ((doc.schema,) if doc.schema else ("KEY", "VALUE")):
            docs[(schema, column)] = doc.text
    for level in (options.key_compatibility, options.value_compatibility):
        if level is not None and level not in COMPATIBILITY_LEVELS:
            raise StatementError(f"invalid compatibility level: {level}")
    return AvroShape(options.key_fullname or "row", options.value_fullname or "envelope", options.null_defaults,
                     docs.get(("KEY", None)), docs.get(("VALUE", None)),
                     tuple((c, t) for (s, c), t in docs.items() if s == "KEY" and c is not None),
                     tuple((c, t) for (s, c), t in docs.items() if s == "VALUE" and c is not None),
                     options.key_compatibility, options.value_compatibility)


def with_endpoints(stmt: CreateSink, endpoint: Callable[[str, str], str]) -> CreateSink:
    """`stmt` with its connections replaced by the broker and registry URLs they name;
    `endpoint(name, kind)` is the catalog's lookup (an unknown or wrong-kind name fails there)."""
    changes: dict = {}
    if stmt.connection is not None:
        changes.update(broker=endpoint(stmt.connection, "KAFKA"), connection=None)
    for role in ("format", "key_format", "value_format"):
        fmt = getattr(stmt, role)
        if fmt is not None and fmt.registry_connection is not None:
            url = endpoint(fmt.registry_connection, "CONFLUENT SCHEMA REGISTRY")
            changes[role] = replace(fmt, registry_url=url, registry_connection=None)
    return replace(stmt, **changes)


def _topic_options(stmt: CreateSink, columns: dict[str, Field], key: Sequence[Field],
                   functions: frozenset[str]) -> SinkTopicOptions:
    """The options after TOPIC, checked as Materialize checks them."""
    options = stmt.topic_options or SinkTopicOptions()
    if options.compression is not None and options.compression not in COMPRESSION_TYPES:
        raise StatementError(f"invalid COMPRESSION TYPE: {options.compression}: expected one of "
                             + ", ".join(COMPRESSION_TYPES))
    for word, count in (("TOPIC PARTITION COUNT", options.partition_count),
                        ("TOPIC REPLICATION FACTOR", options.replication_factor)):
        if count is not None and count < 1:
            raise StatementError(f"invalid {word}: must be greater than 0, not {count}")
    if options.partition_by is not None:
        _check_partition_by(stmt, options.partition_by, columns, key, functions)
    return options


def _check_partition_by(stmt: CreateSink, expr: ast.Expr, columns: dict[str, Field], key: Sequence[Field],
                        functions: frozenset[str]) -> None:
    """A hash that casts to uint8, over key columns only when the envelope is DEBEZIUM (a delete
    has no `after` row to compute it from). Materialize's messages."""
    named = {c.name for c in key}
    if stmt.envelope == "DEBEZIUM":
        for ref in ast.walk(expr):
            if isinstance(ref, ast.ColumnRef) and ref.name in columns and ref.name not in named:
                raise StatementError(f'PARTITION BY expression cannot refer to non-key column "{ref.name}"')
    hash_type = Checker({n: c.type for n, c in columns.items()}, "materialize", untyped=functions).type_of(expr)
    if hash_type is not None and hash_type.name not in PARTITION_HASH_TYPES:
        shown = MESSAGES["materialize"].type_name(hash_type)
        raise StatementError(f"PARTITION BY does not support casting from {shown} to uint8")


def plan_sink(stmt: CreateSink, columns: Sequence[Field], unique_keys: Sequence[Sequence[str]],
              functions: frozenset[str] = frozenset()) -> SinkSpec:
    """The sink `stmt` describes over a relation with `columns` whose known unique keys are
    `unique_keys` (column names), or a StatementError in Materialize's words; `functions` are
    the dialect's own that the type checker does not type (a PARTITION BY may call them)."""
    limits.topic_name(stmt.topic)
    by_name = {c.name: c for c in columns}
    key = _key(stmt, by_name, unique_keys)
    options = _topic_options(stmt, by_name, key, functions)
    headers = _headers(stmt, by_name)
    if stmt.format is not None:
        value_format = _format(stmt.format, "value")
        key_format = value_format if key else None
    else:
        key_format, value_format = _format(stmt.key_format, "key"), _format(stmt.value_format, "value")
        if not key:
            key_format = None
    if stmt.envelope == "DEBEZIUM" and value_format.name in SINGLE_COLUMN:
        raise StatementError(f"ENVELOPE DEBEZIUM writes {{\"before\": ..., \"after\": ...}} records: its value "
                             f"format must be JSON or AVRO, not {value_format.name}")
    _check_fits(key_format, key, "key")
    _check_fits(value_format, columns, "value")
    relation_key = tuple(unique_keys[0]) if unique_keys else ()
    return SinkSpec(stmt.name, stmt.relation, stmt.topic, stmt.broker, stmt.envelope, tuple(columns), key,
                    headers, key_format, value_format, relation_key, options, stmt.snapshot, _avro_shape(stmt, by_name))
