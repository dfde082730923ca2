"""Materialize's statements and expressions as Materialize writes them: PostgreSQL names
(lower case unless "quoted"), PostgreSQL type names, `(record).field`, and its own DDL —
CREATE SOURCE ... FROM KAFKA, CREATE TABLE ... FROM SOURCE, CREATE SINK, CREATE SECRET (its
value masked), CREATE CONNECTION, views, SUBSCRIBE, SHOW and DROP."""

from __future__ import annotations

import re

from .. import redact
from . import ast
from . import ast_materialize as mz
from .materialize_parser import MATERIALIZE
from .render import RENDERERS
from .render_statements import StatementWriter, if_exists, if_not_exists, quoted

__all__ = ["MaterializeWriter", "MATERIALIZE_WRITER", "TYPE_TEXT", "MASKED_OPTIONS"]

#: ast.Type names -> Materialize's (ARRAY, MAP and DECIMAL are written by `type`).
TYPE_TEXT = {"BOOLEAN": "boolean", "INT": "integer", "BIGINT": "bigint", "DOUBLE": "double precision",
             "STRING": "text", "BYTES": "bytea", "DATE": "date", "TIME": "time", "TIMESTAMP": "timestamp"}

#: Connection options Materialize takes only from a secret: one written as text is masked.
MASKED_OPTIONS = frozenset({"SASL PASSWORD", "SSL KEY", "PASSWORD"})

_PLAIN_NAME = re.compile(r"[^\W\d][\w$]*")


def _dereference(w, e: ast.Dereference) -> str:
    base = w(e.base) if isinstance(e.base, ast.Dereference) else f"({w(e.base)})"
    return f"{base}.{w.ident(e.field)}"


# ---------------------------------------------------------------- formats, includes, envelopes
def _format(w, f: ast.SourceFormat) -> str:
    if f.name == "CSV":
        return f"CSV WITH {f.csv_columns} COLUMNS"
    if f.name == "REGEX":
        return f"REGEX {quoted(f.regex)}"
    if f.name == "AVRO" and f.avro_schema is not None:
        return f"AVRO USING SCHEMA {quoted(f.avro_schema)}" + (
            "" if f.confluent_wire_format else " (CONFLUENT WIRE FORMAT = false)")
    if f.name == "AVRO" and f.registry_connection is not None:
        return f"AVRO USING CONFLUENT SCHEMA REGISTRY CONNECTION {w.ident(f.registry_connection)}" + _avro_options(
            w, f.avro_options)
    if f.name == "AVRO":
        return f"AVRO USING CONFLUENT SCHEMA REGISTRY {quoted(redact.url(f.registry_url))}"
    if f.name == "PROTOBUF":
        return _protobuf(w, f)
    return f.name


def _protobuf(w, f: ast.SourceFormat) -> str:
    message = "" if f.protobuf_message is None else f" MESSAGE {quoted(f.protobuf_message)}"
    if f.protobuf_descriptors is not None:
        return f"PROTOBUF{message} USING SCHEMA {quoted(f.protobuf_descriptors)}"
    if f.protobuf_file is not None:
        return f"PROTOBUF{message} USING SCHEMA FILE {quoted(f.protobuf_file)}"
    if f.registry_connection is not None:
        return f"PROTOBUF{message} USING CONFLUENT SCHEMA REGISTRY CONNECTION {w.ident(f.registry_connection)}"
    return f"PROTOBUF{message} USING CONFLUENT SCHEMA REGISTRY {quoted(redact.url(f.registry_url))}"


def _formats(w, s) -> str:
    if s.format is not None:
        return f" FORMAT {_format(w, s.format)}"
    if s.key_format is not None:
        return f" KEY FORMAT {_format(w, s.key_format)} VALUE FORMAT {_format(w, s.value_format)}"
    return ""


def _avro_options(w, o: ast.AvroSchemaOptions | None) -> str:
    if o is None:
        return ""
    given = [f"AVRO KEY FULLNAME {quoted(o.key_fullname)}"] if o.key_fullname is not None else []
    given += [f"AVRO VALUE FULLNAME {quoted(o.value_fullname)}"] if o.value_fullname is not None else []
    given += ["NULL DEFAULTS"] if o.null_defaults else []
    given += [(f"{d.schema} " if d.schema else "") + f"DOC ON {d.kind} {'.'.join(w.ident(n) for n in d.name)} = "
              f"{quoted(d.text)}" for d in o.docs]
    given += [f"{role} COMPATIBILITY LEVEL {quoted(level)}" for role, level in
              (("KEY", o.key_compatibility), ("VALUE", o.value_compatibility)) if level is not None]
    return f" ({', '.join(given)})"


def _include(w, i: ast.Include) -> str:
    what = f"HEADER {quoted(i.header_key)}" if i.what == "HEADER" else i.what
    return what + (f" AS {w.ident(i.alias)}" if i.alias is not None else "") + (" BYTES" if i.as_bytes else "")


def _includes_and_envelope(w, s) -> str:
    text = f" INCLUDE {', '.join(_include(w, i) for i in s.includes)}" if s.includes else ""
    if s.value_errors_column is not None:
        alias = "" if s.value_errors_column == "error" else f" AS {w.ident(s.value_errors_column)}"
        return text + f" ENVELOPE UPSERT (VALUE DECODING ERRORS = (INLINE{alias}))"
    return text + (f" ENVELOPE {s.envelope}" if s.envelope != "NONE" else "")


def _names(w, names) -> str:
    return f" ({', '.join(w.ident(n) for n in names)})" if names else ""


# ---------------------------------------------------------------- statements
def _kafka(w, s: ast.CreateKafkaSource) -> str:
    if s.connection is None:
        broker = f"BROKER {quoted(redact.url(s.broker))} " if s.broker is not None else ""
        return f"{broker}TOPIC {quoted(s.topic)}"
    options = [f"TOPIC {quoted(s.topic)}"]
    options += [f"START OFFSET ({', '.join(map(str, s.start_offsets))})"] if s.start_offsets is not None else []
    options += [f"START TIMESTAMP {s.start_timestamp}"] if s.start_timestamp is not None else []
    return f"CONNECTION {w.ident(s.connection)} ({', '.join(options)})"


def _create_source(w, s: ast.CreateKafkaSource) -> str:
    return (f"CREATE SOURCE {if_not_exists(s)}{w.ident(s.name)}{_names(w, s.columns)} FROM KAFKA {_kafka(w, s)}"
            f"{_formats(w, s)}{_includes_and_envelope(w, s)}")


def _create_load_generator(w, s: mz.CreateLoadGenerator) -> str:
    options = ([f"TICK INTERVAL {quoted(s.tick_interval)}"] if s.tick_interval is not None else []) + (
        [f"UP TO {s.up_to}"] if s.up_to is not None else [])
    return (f"CREATE SOURCE {if_not_exists(s)}{w.ident(s.name)} FROM LOAD GENERATOR {s.generator}"
            + (f" ({', '.join(options)})" if options else ""))


def _create_source_table(w, s: mz.CreateSourceTable) -> str:
    reference = f" (REFERENCE {w.ident(s.reference)})" if s.reference is not None else ""
    return (f"CREATE TABLE {if_not_exists(s)}{w.ident(s.name)}{_names(w, s.columns)} FROM SOURCE "
            f"{w.ident(s.source)}{reference}{_formats(w, s)}{_includes_and_envelope(w, s)}")


def _option(w, o: mz.ConnectionOption) -> str:
    if o.name == "BROKERS":
        return f"BROKERS ({', '.join(quoted(b) for b in o.value.split(','))})"
    if o.name in ("BROKER", "URL"):
        return f"{o.name} {quoted(redact.url(o.value))}"
    if o.secret is not None:
        return f"{o.name} = SECRET {w.ident(o.secret)}"
    return f"{o.name} = {quoted(redact.HIDDEN if o.name in MASKED_OPTIONS else redact.url(o.value))}"


def _create_connection(w, s: mz.CreateConnection) -> str:
    options = ", ".join(_option(w, o) for o in s.options)
    return (f"CREATE CONNECTION {if_not_exists(s)}{w.ident(s.name)} TO {s.kind} ({options})"
            + ("" if s.validate else " WITH (VALIDATE = false)"))


def _create_sink(w, s: mz.CreateSink) -> str:
    target = f"BROKER {quoted(redact.url(s.broker))}" if s.broker is not None else f"CONNECTION {w.ident(s.connection)}"
    key = f" KEY{_names(w, s.key)}" + (" NOT ENFORCED" if s.key_not_enforced else "") if s.key else ""
    headers = f" HEADERS {w.ident(s.headers)}" if s.headers is not None else ""
    return (f"CREATE SINK {if_not_exists(s)}{w.ident(s.name)} FROM {w.ident(s.relation)} INTO KAFKA {target} "
            f"(TOPIC {quoted(s.topic)}{_topic_options(w, s.topic_options)}){key}{headers}{_formats(w, s)} "
            f"ENVELOPE {s.envelope}" + ("" if s.snapshot else " WITH (SNAPSHOT = false)"))


def _topic_options(w, o: mz.SinkTopicOptions | None) -> str:
    if o is None:
        return ""
    given = [(o.compression, lambda: f"COMPRESSION TYPE {quoted(o.compression)}"),
             (o.partition_count, lambda: f"TOPIC PARTITION COUNT {o.partition_count}"),
             (o.replication_factor, lambda: f"TOPIC REPLICATION FACTOR {o.replication_factor}"),
             (o.config or None, lambda: "TOPIC CONFIG MAP[" + ", ".join(
                 f"{quoted(k)} => {quoted(v)}" for k, v in o.config) + "]"),
             (o.partition_by, lambda: f"PARTITION BY = {w(o.partition_by)}"),
             (o.transactional_id_prefix, lambda: f"TRANSACTIONAL ID PREFIX {quoted(o.transactional_id_prefix)}"),
             (o.progress_group_id_prefix, lambda: f"PROGRESS GROUP ID PREFIX {quoted(o.progress_group_id_prefix)}")]
    return "".join(f", {text()}" for value, text in given if value is not None)


def _create_type(w, s: mz.CreateType) -> str:
    t = s.type
    if t.name == "ARRAY":
        return f"CREATE TYPE {w.ident(s.name)} AS LIST (ELEMENT TYPE = {w.type(t.element)})"
    if t.name == "MAP":
        return f"CREATE TYPE {w.ident(s.name)} AS MAP (KEY TYPE = {w.type(t.key)}, VALUE TYPE = {w.type(t.value)})"
    return f"CREATE TYPE {w.ident(s.name)} AS (" + ", ".join(f"{w.ident(n)} {w.type(ft)}" for n, ft in t.fields) + ")"


def _comment_on(w, s: mz.CommentOn) -> str:
    target = (f"{w.ident(s.name)}.{w.ident(s.column_name)}" if s.column_name is not None else w.ident(s.name))
    return f"COMMENT ON {s.kind.upper()} {target} IS {'NULL' if s.text is None else quoted(s.text)}"


def _create_view(w, s: ast.CreateView) -> str:
    return (f"CREATE {'OR REPLACE ' if s.or_replace else ''}{'MATERIALIZED ' if s.materialized else ''}VIEW "
            f"{if_not_exists(s)}{w.ident(s.name)} AS {w.select(s.query)}")


MATERIALIZE_STATEMENTS = {
    ast.Select: lambda w, s: w.select(s),
    ast.CreateKafkaSource: _create_source,
    mz.CreateSourceTable: _create_source_table,
    mz.CreateLoadGenerator: _create_load_generator,
    mz.CreateSecret: lambda w, s: f"CREATE SECRET {if_not_exists(s)}{w.ident(s.name)} AS {quoted(redact.HIDDEN)}",
    mz.CreateConnection: _create_connection,
    ast.CreateView: _create_view,
    mz.CreateType: _create_type,
    mz.CommentOn: _comment_on,
    mz.CreateSink: _create_sink,
    ast.Subscribe: lambda w, s: (f"SUBSCRIBE {w.ident(s.name)}" if s.query is None else f"SUBSCRIBE ({w.select(s.query)})") + (
        f" ENVELOPE {s.envelope[0]} (KEY (" + ", ".join(w.ident(k) for k in s.envelope[1]) + "))" if s.envelope else "") + (
        " WITH (" + ", ".join(f"{o.name} = {str(o.value.value).lower()}" for o in s.options) + ")" if s.options else ""),
    ast.Show: lambda w, s: f"SHOW {s.what}",
    ast.Describe: lambda w, s: f"SHOW COLUMNS FROM {w.ident(s.name)}",
    ast.Drop: lambda w, s: f"DROP {s.kind} {if_exists(s)}{w.ident(s.name)}",
    mz.DropSink: lambda w, s: f"DROP SINK {if_exists(s)}{w.ident(s.name)}",
    mz.ShowCreateSink: lambda w, s: f"SHOW CREATE SINK {w.ident(s.name)}",
}


class MaterializeWriter(StatementWriter):
    """Materialize's syntax over the shared writer."""

    statements = MATERIALIZE_STATEMENTS
    table = {**RENDERERS, ast.Dereference: _dereference,
             mz.MapLookup: lambda w, e: f"({w(e.base)} {e.op} {w(e.key)})",
             mz.JsonPath: lambda w, e: f"({w(e.base)} {e.op} {w(e.path)})"}

    @property
    def reserved(self) -> frozenset[str]:
        return MATERIALIZE.reserved_words

    def ident(self, name: str) -> str:
        plain = _PLAIN_NAME.fullmatch(name) and name.lower() == name and name.upper() not in self.reserved
        return name if plain else '"' + name.replace('"', '""') + '"'

    def function(self, name: str) -> str:
        return name.lower()

    def type(self, t: ast.Type) -> str:
        if t.name == "ARRAY":
            return f"{self.type(t.element)}[]"
        if t.name == "MAP":
            return f"map[{self.type(t.key)}=>{self.type(t.value)}]"
        if isinstance(t, mz.NamedType):
            return self.ident(t.type_name)
        if t.name == "DECIMAL":
            return f"numeric({t.precision}, {t.scale})" if t.precision is not None else "numeric"
        return TYPE_TEXT[t.name]

    def from_item(self, source) -> str:
        if isinstance(source, mz.Subquery):
            return f"({self.select(source.query)})" + (f" AS {self.ident(source.alias)}" if source.alias else "")
        return super().from_item(source)

    def sort_key(self, key: mz.SortKey) -> str:
        """ASC and PostgreSQL's NULLS default (LAST ascending, FIRST descending) left unwritten."""
        nulls = "" if key.nulls_first == key.descending else (" NULLS FIRST" if key.nulls_first else " NULLS LAST")
        return self(key.expr) + (" DESC" if key.descending else "") + nulls


MATERIALIZE_WRITER = MaterializeWriter()
