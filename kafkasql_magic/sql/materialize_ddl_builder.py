"""Builder rules for Materialize's DDL around sources: FROM KAFKA CONNECTION options, CREATE
TABLE ... FROM SOURCE, CREATE SECRET and CREATE CONNECTION. MaterializeBuilder's base, one
method per grammar rule of materialize.lark, as in builder.py."""

from __future__ import annotations

from lark import v_args

from . import ast_materialize as mz_ast
from .builder import Builder, Invalid, _pos, _unquote

__all__ = ["MaterializeDdlRules", "split_formats"]


_OPTION_WORDS = {"topic": "TOPIC", "start_offsets": "START OFFSET", "start_timestamp": "START TIMESTAMP",
                 "group_id_prefix": "GROUP ID PREFIX"}


def split_formats(formats, sink: bool = False) -> tuple:
    """(key format, value format, bare format) from the formats rule (None: no format). The
    registry's schema options (FULLNAME, NULL DEFAULTS, DOC ON) are a sink's only."""
    if formats is None:
        return None, None, None
    kind, *chosen = formats
    for f in chosen:
        if not sink and f is not None and f.avro_options is not None:
            raise Invalid("AVRO KEY FULLNAME, AVRO VALUE FULLNAME, NULL DEFAULTS and DOC ON shape the Avro schemas "
                          "a sink registers: a source takes none of them", f.avro_options.line, f.avro_options.column)
    return tuple(chosen) if kind == "key_value" else (None, None, chosen[0])


#: The load generator's options as Materialize names them in its messages.
_LOAD_GENERATOR_OPTION_WORDS = {"tick_interval": "TICK INTERVAL", "up_to": "UP TO"}
#: The sink's connection options as Materialize names them in its messages.
_SINK_OPTION_WORDS = {"compression": "COMPRESSION TYPE", "partition_count": "TOPIC PARTITION COUNT",
                      "replication_factor": "TOPIC REPLICATION FACTOR", "config": "TOPIC CONFIG",
                      "partition_by": "PARTITION BY", "transactional_id_prefix": "TRANSACTIONAL ID PREFIX",
                      "progress_group_id_prefix": "PROGRESS GROUP ID PREFIX"}


def _text(expr) -> str | None:
    """A string literal's text, else None."""
    value = getattr(expr, "value", None)
    return value if isinstance(value, str) else None


def _topic_options(options) -> mz_ast.SinkTopicOptions | None:
    """Each option once (Materialize's check), as one node."""
    found = {}
    for key, value, (line, column) in options:
        if key in found:
            raise Invalid(f"{_SINK_OPTION_WORDS[key]} specified more than once", line, column)
        found[key] = value
    return mz_ast.SinkTopicOptions(**found) if found else None


def _snapshot(options) -> bool:
    """WITH (SNAPSHOT [= true | false]): whether the sink starts with the relation's current rows
    (Materialize's default) or writes only the changes after it is created."""
    snapshot, seen = True, set()
    for option in options:
        if option.name != "SNAPSHOT":
            raise Invalid(f'Expected SNAPSHOT, found identifier "{option.name.lower()}"', option.line, option.column)
        if option.name in seen:
            raise Invalid(f"{option.name} specified more than once", option.line, option.column)
        seen.add(option.name)
        snapshot = option.value.value
    return snapshot


@v_args(meta=True, inline=True)
class MaterializeDdlRules(Builder):
    """The ksql builder plus the rules of materialize.lark for connections, secrets and source
    tables; MaterializeBuilder builds on it."""

    def kafka_connection(self, meta, connection, *options):
        """Materialize's checks: each option once, a TOPIC, not both START options."""
        found = {"connection": connection}
        for (key, value), (line, column) in options:
            if key in found:
                raise Invalid(f"{_OPTION_WORDS[key]} specified more than once", line, column)
            found[key] = value
        if "topic" not in found:
            raise Invalid("KAFKA CONNECTION without TOPIC", meta.line, meta.column)
        if "start_offsets" in found and "start_timestamp" in found:
            raise Invalid("cannot specify START TIMESTAMP and START OFFSET at same time", meta.line, meta.column)
        return found

    def topic_option(self, meta, topic):
        return ("topic", _unquote(topic)), (meta.line, meta.column)

    def start_offset_option(self, meta, *offsets):
        return ("start_offsets", tuple(int(o) for o in offsets)), (meta.line, meta.column)

    def start_timestamp_option(self, meta, value):
        return ("start_timestamp", value), (meta.line, meta.column)

    def group_id_prefix_option(self, meta, prefix):
        return ("group_id_prefix", _unquote(prefix)), (meta.line, meta.column)

    def signed_integer(self, meta, minus, token):
        return -int(token) if minus else int(token)

    def minus(self, meta):
        return True

    # ---- CREATE SOURCE ... FROM LOAD GENERATOR
    def create_load_generator(self, meta, if_not_exists, name, generator, *options):
        """Each option once, as Materialize checks (which generator takes which: loadgen/)."""
        found = {}
        for (key, value), (line, column) in (o for o in options if o is not None):
            if key in found:
                raise Invalid(f"{_LOAD_GENERATOR_OPTION_WORDS[key]} specified more than once", line, column)
            found[key] = value
        return mz_ast.CreateLoadGenerator(name, generator.upper(), if_not_exists=bool(if_not_exists), **found,
                                          **_pos(meta))

    def tick_interval_option(self, meta, interval):
        return ("tick_interval", _unquote(interval)), (meta.line, meta.column)

    def up_to_option(self, meta, count):
        return ("up_to", int(count)), (meta.line, meta.column)

    # ---- CREATE TABLE ... FROM SOURCE
    def create_source_table(self, meta, if_not_exists, name, columns, source, reference,
                            formats, includes, envelope):
        """Without (REFERENCE ...) the table reads the source's one topic, as Kafka tables do."""
        key_format, value_format, format_ = split_formats(formats)
        kind, errors_column = envelope or ("NONE", None)
        return mz_ast.CreateSourceTable(
            name, source, reference, columns or (), key_format, value_format, format_, includes or (),
            kind, errors_column, bool(if_not_exists), **_pos(meta),
        )

    def reference(self, meta, name):
        return name

    # ---- CREATE SECRET, CREATE CONNECTION
    def create_secret(self, meta, if_not_exists, name, value):
        return mz_ast.CreateSecret(name, _unquote(value), bool(if_not_exists), **_pos(meta))

    def create_connection(self, meta, if_not_exists, name, kind, *rest):
        *options, validate = rest
        seen = set()
        for option in options:
            if option.name in seen:
                raise Invalid(f"{option.name} specified more than once", option.line, option.column)
            seen.add(option.name)
        return mz_ast.CreateConnection(name, kind, tuple(options), bool(if_not_exists),
                                       True if validate is None else validate, **_pos(meta))

    def validate(self, meta, flag):
        return flag

    def connection_kind(self, meta, *tokens):
        return " ".join(t.upper() for t in tokens)

    option_name = connection_kind

    def broker_option(self, meta, broker):
        return mz_ast.ConnectionOption("BROKER", _unquote(broker), **_pos(meta))

    def brokers_option(self, meta, *brokers):
        return mz_ast.ConnectionOption("BROKERS", ",".join(_unquote(b) for b in brokers), **_pos(meta))

    def url_option(self, meta, url):
        return mz_ast.ConnectionOption("URL", _unquote(url), **_pos(meta))

    def connection_option(self, meta, name, value):
        text, secret = value
        return mz_ast.ConnectionOption(name, text, secret, **_pos(meta))

    def text_value(self, meta, token):
        return _unquote(token), None

    def option_word(self, meta, token):
        return token

    def word_value(self, meta, token):
        """A bare word (SASL_SSL, PLAIN) is the option's value as written, upper-cased."""
        return (_unquote(token) if token[0] == '"' else token.upper()), None

    def secret_value(self, meta, name):
        return None, name

    # ---- CREATE SINK
    def create_sink(self, meta, if_not_exists, name, relation, target, key, headers, formats, envelope, options):
        """Materialize requires the ENVELOPE clause; it is optional in the grammar so that
        leaving it out gets Materialize's message rather than a parse error."""
        if envelope is None:
            raise Invalid("ENVELOPE clause is required", meta.end_line, meta.end_column)
        key_format, value_format, format_ = split_formats(formats, sink=True)
        columns, not_enforced = key or ((), False)
        return mz_ast.CreateSink(
            name, relation, target["topic"], envelope, target.get("broker"), target.get("connection"),
            tuple(columns), not_enforced, headers, key_format, value_format, format_, bool(if_not_exists),
            target["options"], _snapshot(options or ()), **_pos(meta))

    def sink_broker(self, meta, broker, topic, *options):
        return {"broker": _unquote(broker), "topic": _unquote(topic), "options": _topic_options(options)}

    def sink_connection(self, meta, connection, topic, *options):
        return {"connection": connection, "topic": _unquote(topic), "options": _topic_options(options)}

    def sink_compression(self, meta, name):
        return "compression", name, (meta.line, meta.column)

    def compression_name(self, meta, token):
        return (_unquote(token) if token.startswith("'") else str(token)).lower()

    def sink_partition_count(self, meta, count):
        return "partition_count", int(count), (meta.line, meta.column)

    def sink_replication_factor(self, meta, factor):
        return "replication_factor", int(factor), (meta.line, meta.column)

    def sink_topic_config(self, meta, config):
        """A map literal of text keys and text values (Kafka's topic configs)."""
        entries = getattr(config, "entries", None)
        if entries is None or not all(_text(k) is not None and _text(v) is not None for k, v in entries):
            raise Invalid("TOPIC CONFIG must be a map of text to text, e.g. MAP['cleanup.policy' => 'compact']",
                          meta.line, meta.column)
        return "config", tuple((_text(k), _text(v)) for k, v in entries), (meta.line, meta.column)

    def sink_partition_by(self, meta, expr):
        return "partition_by", expr, (meta.line, meta.column)

    def sink_transactional_id_prefix(self, meta, prefix):
        return "transactional_id_prefix", _unquote(prefix), (meta.line, meta.column)

    def sink_progress_group_id_prefix(self, meta, prefix):
        return "progress_group_id_prefix", _unquote(prefix), (meta.line, meta.column)

    def sink_key(self, meta, columns, not_enforced):
        return columns, bool(not_enforced)

    def not_enforced(self, meta):
        return True

    def sink_headers(self, meta, column):
        return column

    def sink_envelope(self, meta, kind):
        return kind

    def sink_envelope_kind(self, meta, token):
        return token.upper()
