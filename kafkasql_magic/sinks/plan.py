"""A persistent query's sink: its columns, topic and formats (KLIP 33's inheritance), as pure
functions of the statement, the query's output columns and the leftmost source.

Formats come from the WITH clause, else from the leftmost source; a NONE key format is
replaced by the default key format when the query introduces a key, and a key format must
be able to hold the key (ksqlDB's messages).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .. import formats, types
from ..catalog import KEY, VALUE, Column, SourceDef
from ..dialects.ksql_sources import DEFAULT_KEY_FORMAT, check_key_types, check_value_wrapping, with_default_wrapping
from ..errors import StatementError
from ..formats import Field, FormatSpec
from ..sql import ast

#: Format options a sink inherits with the format itself (schema ids belong to the source's topic;
#: WRAP_SINGLE_VALUE is the statement's own or the session's default, never the source's).
INHERITED_OPTIONS = {"key": ("KEY_DELIMITER",), "value": ("VALUE_DELIMITER",)}
#: Statement kind -> ksqlDB's query id prefix.
QUERY_PREFIXES = {"STREAM": "CSAS", "TABLE": "CTAS", "INSERT": "INSERTQUERY", "SINK": "SINK"}


@dataclass(frozen=True)
class Output:
    """One result column of the query: name, ksql type, and whether it is part of the key."""

    name: str
    type: ast.Type
    key: bool = False


def keys_first(outputs: Sequence[Output], key_names: Sequence[str]) -> list[Output]:
    """The sink's schema as ksqlDB builds it: the key columns first, in the key's order
    (`key_names`: GROUP BY's or PARTITION BY's order, else the source key's), then the value
    columns in the projection's order. The key bytes follow it (`SELECT b, a ... GROUP BY a, b`
    writes the key `a,b`)."""
    rank = {name: i for i, name in enumerate(key_names)}
    return sorted(outputs, key=lambda o: (0, rank[o.name]) if o.key else (1, 0))


def query_id(kind: str, sink: str, number: int) -> str:
    """ksqlDB's ids: CSAS_<SINK>_<n>, CTAS_<SINK>_<n>, INSERTQUERY_<n>."""
    prefix = QUERY_PREFIXES[kind]
    return f"{prefix}_{number}" if kind == "INSERT" else f"{prefix}_{sink.upper()}_{number}"


#: WITH properties a persistent query's sink takes.
SINK_PROPERTIES = frozenset({
    "KAFKA_TOPIC", "PARTITIONS", "REPLICAS", "KEY_FORMAT", "VALUE_FORMAT", "FORMAT", "KEY_DELIMITER",
    "VALUE_DELIMITER", "WRAP_SINGLE_VALUE", "KEY_SCHEMA_ID", "VALUE_SCHEMA_ID", "TIMESTAMP"})


def properties(props: Sequence[ast.Property]) -> dict:
    """WITH (...) as {NAME: value}; unknown names refused as ksqlDB does."""
    out = {p.name.upper(): p.value.value for p in props}
    unknown = sorted(set(out) - SINK_PROPERTIES)
    if unknown:
        raise StatementError(f"Invalid config variable(s) in the WITH clause: {','.join(unknown)}")
    return out


def check_value_columns(outputs: Sequence[Output]) -> None:
    """A persistent query writes a value: selecting only key columns is refused (ksqlDB's words)."""
    if all(o.key for o in outputs):
        raise StatementError("The projection contains no value columns.")


def _listed(fields: Sequence[Field], key: bool) -> str:
    suffix = " KEY" if key else ""
    return "[" + ", ".join(f"`{f.name}` {types.display(f.type)}{suffix}" for f in fields) + "]"


def _check_format(spec: FormatSpec, fields: Sequence[Field], role: str, kind: str) -> None:
    if spec.name == "NONE":
        if fields:
            raise StatementError("The 'NONE' format can only be used when no columns are defined. "
                                 f"Got: {_listed(fields, role == 'key')}")
        return
    if role == "value":
        check_value_wrapping(spec)
    try:
        formats.lookup(spec.name).validate(fields, role, kind)
    except StatementError as exc:
        if role != "key":
            raise
        reason = str(exc).split(" Got: ")[0] + f" Got: {_listed(fields, True)}" if " Got: " in str(exc) else str(exc)
        raise StatementError(f"Key format does not support schema.\nformat: {spec.name}\nschema: "
                             f"Persistence{{columns={_listed(fields, True)}, features=[]}}\nreason: {reason}") from None


def formatted_statement(stmt: ast.CreateAsSelect, plan) -> str:
    """A CREATE ... AS SELECT over an aggregation as ksqlDB's formatter prints it in the message
    of a key format its GROUP BY cannot take: one qualified SELECT expression a line, each with
    its result name."""
    from ..engine.analysis.grouping import qualified
    from ..sql.render import render

    query, inputs = stmt.query, plan.inputs

    def text(expr):
        return render(qualified(expr, inputs))

    written = ", ".join(f"{p.name}={render(p.value)}" for p in stmt.properties)
    lines = [f"CREATE {stmt.kind} {stmt.name}{f' WITH ({written})' if written else ''} AS SELECT",
             ",\n".join(f"  {text(expr)} {name}" for name, expr in plan.outputs),
             f"FROM {inputs[0].name} {inputs[0].qualifiers[0]}"]
    lines += [f"WHERE {text(query.where)}"] if query.where is not None else []
    lines += [f"GROUP BY {', '.join(text(e) for e in query.group_by)}"] if query.group_by else []
    lines += [f"HAVING {text(query.having)}"] if query.having is not None else []
    return "\n".join(lines + ["EMIT CHANGES"])


def sink_formats(props: dict, leftmost: SourceDef, keyed: bool, settings: dict) -> tuple[FormatSpec, FormatSpec]:
    """(key, value) formats: WITH's, else the leftmost source's (KLIP 33)."""
    both = props.get("FORMAT")
    for part in ("KEY_FORMAT", "VALUE_FORMAT"):
        if both is not None and part in props:
            raise StatementError(
                f"Cannot supply both '{part}' and 'FORMAT' properties, as 'FORMAT' sets both key and "
                "value formats. Either use just 'FORMAT', or use 'KEY_FORMAT' and 'VALUE_FORMAT'.")
    specs = []
    for role, source_spec in (("key", leftmost.key_format), ("value", leftmost.value_format)):
        given = both or props.get(f"{role.upper()}_FORMAT")
        if given is not None:
            name, inherited = str(given).upper(), {}
        else:
            name = source_spec.name
            inherited = {k: v for k, v in source_spec.options.items() if k in INHERITED_OPTIONS[role]}
            if role == "key" and not keyed:
                name, inherited = "NONE", {}  # no key columns (PARTITION BY NULL): no key
            elif role == "key" and name == "NONE" and keyed:
                name = str(settings.get(DEFAULT_KEY_FORMAT) or "KAFKA").upper()
        formats.lookup(name)
        own = {k: v for k, v in props.items()
               if k.startswith(f"{role.upper()}_") and not k.endswith("_FORMAT")
               or (role == "value" and k == "WRAP_SINGLE_VALUE")}
        specs.append(FormatSpec(name, {**inherited, **own}))
    return specs[0], specs[1]


def sink_source(kind: str, name: str, props: dict, outputs: Sequence[Output], leftmost: SourceDef,
                settings: dict, registry_url: str | None, statement: str, *,
                partitioned_by_null: bool = False) -> SourceDef:
    """The catalog entry of a CREATE STREAM|TABLE ... AS SELECT sink, checked against its formats
    in ksqlDB's order: a key format other than NONE given for `PARTITION BY NULL`, then unknown
    format names, then each format against its columns."""
    topic = str(props.get("KAFKA_TOPIC") or name.upper())  # unquoted names are upper-cased in ksqlDB
    keys = [Field(o.name, o.type) for o in outputs if o.key]
    values = [Field(o.name, o.type) for o in outputs if not o.key]
    explicit_key = props.get("FORMAT") or props.get("KEY_FORMAT")
    if partitioned_by_null and explicit_key is not None and str(explicit_key).upper() != "NONE":
        raise StatementError(f"Key format specified for {kind.lower()} without key columns.")
    key_spec, value_spec = sink_formats(props, leftmost, bool(keys), settings)
    shared = {"KAFKA_TOPIC": topic, "SCHEMA_REGISTRY_URL": registry_url}
    key_spec = FormatSpec(key_spec.name, {**key_spec.options, **shared})
    value_spec = with_default_wrapping(FormatSpec(value_spec.name, {**value_spec.options, **shared}), len(values),
                                       settings)
    check_key_types((f.name, f.type) for f in keys)
    _check_format(key_spec, keys, "key", kind)
    _check_format(value_spec, values, "value", kind)
    stamp = props.get("TIMESTAMP")
    if stamp is not None:
        column = next((o for o in outputs if o.name.upper() == str(stamp).upper()), None)
        if column is None:
            raise StatementError(f"The TIMESTAMP column set in the WITH clause does not exist in the schema: "
                                 f"'{str(stamp).upper()}'")
        if column.type.name not in ("BIGINT", "TIMESTAMP"):
            raise StatementError(f"Timestamp column, `{column.name}`, should be LONG(INT64), TIMESTAMP, or a "
                                 "String with a timestamp_format specified.")
    columns = tuple(Column(o.name, o.type, KEY if o.key else VALUE) for o in outputs)
    return SourceDef(kind, name, topic, key_spec, value_spec, columns, statement=statement,
                     properties=dict(props))


def widens(got: ast.Type, want: ast.Type) -> bool:
    """Whether INSERT INTO takes a result column of type `got` into a target column of type
    `want`, as ksqlDB's `Column.canImplicitlyCast` decides: the same type, or a DECIMAL into a
    DECIMAL with at least its scale and its integer digits. Nothing else widens there (an INT
    result into a BIGINT column is refused, unlike in expressions)."""
    if got.name == "DECIMAL" and want.name == "DECIMAL":
        return got.scale <= want.scale and got.precision - got.scale <= want.precision - want.scale
    return types.display(got) == types.display(want)


def insert_target(catalog, stmt: ast.InsertValues | ast.InsertSelect, dialect: str) -> SourceDef:
    """The source an INSERT writes to, or ksqlDB's message when there is none: INSERT ... SELECT
    says where, counting as ksqlDB does (INSERT INTO's length past the statement's column)."""
    try:
        return catalog.get(stmt.target, dialect)
    except StatementError as unknown:
        if isinstance(stmt, ast.InsertValues):
            raise StatementError(f"Cannot insert values into an unknown stream/table: {stmt.target}").hinted(
                unknown.hint) from None
        raise StatementError(f"line {stmt.line}:{stmt.column + len('INSERT INTO')}: {stmt.target} does not exist.") \
            .hinted(unknown.hint) from None


def check_insert_select(target: SourceDef) -> None:
    """What ksqlDB refuses of an INSERT INTO ... SELECT target before it plans the query."""
    if target.kind == "TABLE":
        raise StatementError(f"INSERT INTO can only be used to insert into a stream. {target.name} is a table.")
    if target.header_columns:
        raise StatementError(f"Cannot insert into {target.name} because it has header columns")


def check_insert(target: SourceDef, outputs: Sequence[Output]) -> None:
    """INSERT INTO ... SELECT: the result's schema must be the target's, key columns first, then
    the value columns in order, each with its name and a type that `widens` into the target's
    (ksqlDB's `compatibleSchema`); the writer casts each column to the target's type."""
    want = list(target.star_columns)
    got = [*(o for o in outputs if o.key), *(o for o in outputs if not o.key)]
    fits = len(got) == len(want) and all(
        o.name == c.name and o.key == (c.role == KEY) and widens(o.type, c.type) for o, c in zip(got, want))
    if not fits:
        def schema(cols):
            return ", ".join(f"`{n}` {types.display(t)}{' KEY' if k else ''}" for n, t, k in cols)
        raise StatementError(
            "Incompatible schema between results and sink.\n"
            f"Result schema is {schema((o.name, o.type, o.key) for o in got)}\n"
            f"Sink schema is {schema((c.name, c.type, c.role == KEY) for c in want)}")
