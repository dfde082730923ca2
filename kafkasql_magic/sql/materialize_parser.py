"""The Materialize dialect: materialize.lark plus tables, over the shared parser and AST.

`MATERIALIZE` is a `parser.Dialect`: same LALR machinery, keyword handling and positioned
errors as ksql, with PostgreSQL's identifier rules (unquoted names lower-cased, "quoted" kept),
Materialize's type names, and errors worded as Materialize words them
(`Expected an identifier, found FROM`). Statements map onto the shared AST: CREATE SOURCE ->
CreateKafkaSource, CREATE VIEW -> CreateView, SUBSCRIBE -> Subscribe, SELECT -> Select (a
snapshot, `emit_changes` False), SHOW COLUMNS -> Describe, SHOW/DROP -> Show/Drop.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

from lark import Token, v_args

from . import ast
from . import ast_materialize as mz_ast
from . import ast_tables as tables
from .builder import Builder, Invalid, _pos, _unquote
from .materialize_ddl_builder import MaterializeDdlRules, split_formats
from .parser import Dialect
from .table_builder import TableRules

#: The widest CSV a source may declare: every column is a Spark column, planned and decoded.
MAX_CSV_COLUMNS = 10_000

__all__ = ["MATERIALIZE", "MaterializeDialect", "MaterializeBuilder", "FUTURE_RESERVED"]

# Reserved in PostgreSQL and kept from identifiers now, so that joins, ordering and set
# operations can come later without taking names away from anyone.
FUTURE_RESERVED = frozenset(
    "CROSS NATURAL DISTINCT ALL UNION EXCEPT "
    "INTERSECT FETCH ILIKE".split()
)

# Materialize / PostgreSQL type names -> ast.Type names (multi-word names joined by a space).
TYPE_NAMES = {
    "TEXT": "STRING", "VARCHAR": "STRING", "STRING": "STRING", "UUID": "STRING",
    "JSON": "STRING", "JSONB": "STRING", "BYTEA": "BYTES",
    "SMALLINT": "INT", "INT2": "INT", "INT": "INT", "INT4": "INT", "INTEGER": "INT",
    "BIGINT": "BIGINT", "INT8": "BIGINT",
    "REAL": "DOUBLE", "FLOAT4": "DOUBLE", "FLOAT": "DOUBLE", "FLOAT8": "DOUBLE",
    "DOUBLE": "DOUBLE", "DOUBLE PRECISION": "DOUBLE",
    "BOOLEAN": "BOOLEAN", "BOOL": "BOOLEAN", "DATE": "DATE", "TIME": "TIME",
    "TIMESTAMP": "TIMESTAMP", "TIMESTAMPTZ": "TIMESTAMP",
    "TIMESTAMP WITH TIME ZONE": "TIMESTAMP", "TIMESTAMP WITHOUT TIME ZONE": "TIMESTAMP",
}

_INT64 = range(-(2**63), 2**63)


def _flag(self, meta, *children):
    return True


def _named(message: str | None, meta) -> str:
    """A schema given inline or in a file names its message, as Materialize's grammar requires."""
    if message is None:
        raise Invalid("FORMAT PROTOBUF USING SCHEMA needs the message: FORMAT PROTOBUF MESSAGE 'name' USING SCHEMA ...",
                      meta.line, meta.column)
    return message


class _Lateral(NamedTuple):
    """`, unnest(list) [AS u]` after the first FROM item (its table_function subquery)."""

    function: mz_ast.Subquery
    meta: object


def _with_elements(item, lateral: _Lateral) -> mz_ast.Subquery:
    """`FROM t, unnest(t.l) AS u` as `FROM (SELECT t.*, unnest(t.l) AS u FROM t) AS t`: a row per
    element of each row's list, in a column named as the alias (else `unnest`), beside the
    item's own columns, which keep their qualifier."""
    name = item.alias or getattr(item, "name", None)
    if name is None:
        raise Invalid("a subquery before unnest(...) in FROM needs an alias: FROM (SELECT ...) AS s, unnest(s.l)",
                      lateral.meta.line, lateral.meta.column)
    (element,) = lateral.function.query.items
    inner = ast.Select(items=(ast.Star(name, line=item.line, column=item.column), element), source=item)
    return mz_ast.Subquery(inner, name, line=item.line, column=item.column)


@v_args(meta=True, inline=True)
class MaterializeBuilder(TableRules, MaterializeDdlRules):
    """The ksql builder's expression and query rules, with PostgreSQL identifiers and
    Materialize's statements and types (connections, secrets and source options: the base)."""

    type_names = TYPE_NAMES

    # ---- PostgreSQL's functions named by a join word: left(s, n), right(s, n)
    def left_call(self, meta, text, count):
        return ast.FunctionCall("LEFT", (text, count), **_pos(meta))

    def right_call(self, meta, text, count):
        return ast.FunctionCall("RIGHT", (text, count), **_pos(meta))

    # ---- identifiers and literals

    def identifier(self, meta, token):
        """Unquoted identifiers are lower-cased; "quoted" ones keep their case."""
        return _unquote(token) if token[0] == '"' else token.lower()

    alias_name = identifier

    def integer_literal(self, meta, token):
        """Beyond BIGINT an integer is a NUMERIC, as in PostgreSQL."""
        value = int(token)
        if value not in _INT64:
            return ast.Literal(str(token), "DECIMAL", **_pos(meta))
        return super().integer_literal(meta, token)

    def negative(self, meta, operand):
        """-9223372036854775808 is still a BIGINT."""
        if (isinstance(operand, ast.Literal) and operand.kind == "DECIMAL" and operand.value.isdigit()
                and -int(operand.value) in _INT64):
            return super().negative(meta, ast.Literal(int(operand.value), "BIGINT"))
        return super().negative(meta, operand)

    def typed_literal(self, meta, type_, token):
        literal = ast.Literal(_unquote(token), "STRING", line=token.line, column=token.column)
        return ast.Cast(literal, type_, **_pos(meta))

    concat_operator = Builder.additive_operator

    # ---- types
    def base_type(self, meta, *tokens):
        return ast.Type(self.type_names[" ".join(t.upper() for t in tokens)], **_pos(meta))

    literal_type = base_type

    def decimal_type(self, meta, precision, scale):
        if precision is None:
            return ast.Type("DECIMAL", **_pos(meta))
        return ast.Type("DECIMAL", int(precision), int(scale or 0), **_pos(meta))

    def varchar_type(self, meta, length):
        return ast.Type("STRING", **_pos(meta))

    def array_type(self, meta, element):
        return ast.Type("ARRAY", element=element, **_pos(meta))

    def map_type(self, meta, key, value):
        return ast.Type("MAP", key=key, value=value, **_pos(meta))

    # ---- CREATE SOURCE
    def create_kafka_source(self, meta, if_not_exists, name, columns, kafka, formats, includes, envelope):
        key_format, value_format, format_ = split_formats(formats)
        kind, errors_column = envelope or ("NONE", None)
        return ast.CreateKafkaSource(
            name, kafka["topic"], columns or (), kafka.get("broker"), key_format, value_format, format_,
            includes or (), kind, bool(if_not_exists), connection=kafka.get("connection"),
            start_offsets=kafka.get("start_offsets"), start_timestamp=kafka.get("start_timestamp"),
            value_errors_column=errors_column, **_pos(meta),
        )

    def kafka_broker(self, meta, broker, topic):
        return {"broker": _unquote(broker) if broker is not None else None, "topic": _unquote(topic)}

    def key_value_formats(self, meta, key, value):
        return "key_value", key, value, None

    def bare_format(self, meta, format_):
        return "bare", format_

    def simple_format(self, meta, token):
        return ast.SourceFormat(token.upper(), **_pos(meta))

    def regex_format(self, meta, pattern):
        return ast.SourceFormat("REGEX", regex=_unquote(pattern), **_pos(meta))

    def csv_format(self, meta, columns):
        count = int(columns)
        if not 1 <= count <= MAX_CSV_COLUMNS:
            raise Invalid(f"CSV WITH {columns} COLUMNS: a CSV format has 1 to {MAX_CSV_COLUMNS:,} columns",
                          meta.line, meta.column)
        return ast.SourceFormat("CSV", csv_columns=count, **_pos(meta))

    def avro_schema_format(self, meta, schema, framed):
        return ast.SourceFormat("AVRO", avro_schema=_unquote(schema),
                                confluent_wire_format=True if framed is None else framed, **_pos(meta))

    def wire_format(self, meta, flag):
        return flag

    def wire_flag(self, meta, token):
        return token.upper() == "TRUE"

    def avro_registry_format(self, meta, url):
        return ast.SourceFormat("AVRO", registry_url=_unquote(url), **_pos(meta))

    def avro_registry_connection(self, meta, connection, options):
        return ast.SourceFormat("AVRO", registry_url="", registry_connection=connection, avro_options=options,
                                **_pos(meta))

    def protobuf_schema_format(self, meta, message, descriptors):
        return ast.SourceFormat("PROTOBUF", protobuf_message=_named(message, meta),
                                protobuf_descriptors=_unquote(descriptors), **_pos(meta))

    def protobuf_file_format(self, meta, message, path):
        return ast.SourceFormat("PROTOBUF", protobuf_message=_named(message, meta), protobuf_file=_unquote(path),
                                **_pos(meta))

    def protobuf_message(self, meta, name):
        return _unquote(name)

    def protobuf_registry_format(self, meta, message, url):
        return ast.SourceFormat("PROTOBUF", protobuf_message=message, registry_url=_unquote(url), **_pos(meta))

    def protobuf_registry_connection(self, meta, message, connection):
        return ast.SourceFormat("PROTOBUF", protobuf_message=message, registry_url="", registry_connection=connection,
                                **_pos(meta))

    def csr_options(self, meta, *options):
        """Each option once (Materialize's check), DOC ON as many as given."""
        found, docs = {}, []
        for option in options:
            if isinstance(option, ast.AvroDoc):
                docs.append(option)
                continue
            key, value, word, (line, column) = option
            if key in found:
                raise Invalid(f"{word} specified more than once", line, column)
            found[key] = value
        return ast.AvroSchemaOptions(**found, docs=tuple(docs), **_pos(meta))

    def csr_key_fullname(self, meta, name):
        return "key_fullname", _unquote(name), "AVRO KEY FULLNAME", (meta.line, meta.column)

    def csr_value_fullname(self, meta, name):
        return "value_fullname", _unquote(name), "AVRO VALUE FULLNAME", (meta.line, meta.column)

    def csr_null_defaults(self, meta, flag):
        return "null_defaults", True if flag is None else flag, "NULL DEFAULTS", (meta.line, meta.column)

    def csr_key_compatibility(self, meta, level):
        return "key_compatibility", _unquote(level), "KEY COMPATIBILITY LEVEL", (meta.line, meta.column)

    def csr_value_compatibility(self, meta, level):
        return "value_compatibility", _unquote(level), "VALUE COMPATIBILITY LEVEL", (meta.line, meta.column)

    def csr_doc_on(self, meta, schema, kind, *rest):
        *name, text = rest
        return ast.AvroDoc(schema or "", kind, tuple(name), _unquote(text), **_pos(meta))

    def doc_schema(self, meta, token):
        return token.upper()

    def doc_kind(self, meta, token):
        return token.upper()

    def includes(self, meta, *items):
        return items

    def include(self, meta, what, alias):
        return ast.Include(what, alias, **_pos(meta))

    def include_header(self, meta, key, alias, as_bytes):
        return ast.Include("HEADER", alias, _unquote(key), bool(as_bytes), **_pos(meta))

    def include_what(self, meta, token):
        return token.upper()

    def as_name(self, meta, name):
        return name

    as_bytes = materialized = _flag

    def envelope(self, meta, kind):
        return kind, None

    def upsert_inline_errors(self, meta, column):
        return "UPSERT", column

    def inline_errors(self, meta, alias):
        """INLINE [AS name]: decode errors go to the column `name` ("error" by default)."""
        return alias or "error"

    envelope_kind = include_what

    # ---- views, SUBSCRIBE, SHOW, DROP
    def create_view(self, meta, or_replace, materialized, if_not_exists, name, query):
        if isinstance(query, tables.CreateValuesView):  # AS VALUES: a constant relation
            return replace(query, name=name, materialized=bool(materialized), or_replace=bool(or_replace),
                           if_not_exists=bool(if_not_exists))
        return ast.CreateView(name, query, bool(materialized), bool(or_replace), bool(if_not_exists),
                              **_pos(meta))

    def subscribe_name(self, meta, name, envelope, options):
        return ast.Subscribe(name, options=options or (), envelope=envelope, **_pos(meta))

    def subscribe_query(self, meta, query, envelope, options):
        return ast.Subscribe(query=query, options=options or (), envelope=envelope, **_pos(meta))

    def subscribe_envelope(self, meta, kind, keys):
        return kind, tuple(keys)

    def subscribe_options(self, meta, *options):
        return tuple(options)

    def subscribe_option(self, meta, name, flag):
        value = ast.Literal(True if flag is None else flag, "BOOLEAN", **_pos(meta))
        return ast.Property(name.upper(), value, **_pos(meta))

    def show_objects(self, meta, what):
        return ast.Show(what, **_pos(meta))

    def show_columns(self, meta, name):
        return ast.Describe(name, **_pos(meta))

    def show_create_sink(self, meta, name):
        return mz_ast.ShowCreateSink(name, **_pos(meta))

    def comment_on(self, meta, target, text):
        kind, name, column = target
        return mz_ast.CommentOn(kind, name, column, text, **_pos(meta))

    def comment_text(self, meta, token=None):
        return None if token is None else _unquote(token)

    def comment_kind(self, meta, *words):
        return " ".join(str(w).lower() for w in words)

    def comment_object(self, meta, kind, name):
        return kind, name, None

    def comment_column(self, meta, relation, column):
        return "column", relation, column

    def drop_object(self, meta, kind, if_exists, name):
        if kind == "SINK":
            return mz_ast.DropSink(name, bool(if_exists), **_pos(meta))
        return ast.Drop(kind, name, bool(if_exists), **_pos(meta))

    def drop_sink(self, meta):
        return "SINK"

    def drop_source(self, meta):
        return "SOURCE"

    def drop_view(self, meta):
        return "VIEW"

    def drop_table(self, meta):
        return "TABLE"

    def drop_secret(self, meta):
        return "SECRET"

    def drop_connection(self, meta):
        return "CONNECTION"

    def drop_type(self, meta):
        return "TYPE"

    # ---- SELECT: subqueries in FROM, ORDER BY, the map operator
    def query(self, meta, *children):
        """The shared Select, with a Subquery allowed where a source stands and ORDER BY keys."""
        sources = [c for c in children if isinstance(c, (ast.SourceRef, mz_ast.Subquery))]
        if not sources:  # no FROM: one row
            if any(isinstance(c, ast.Star) for c in children):
                raise Invalid("SELECT * with no tables specified is not valid", meta.line, meta.column)
            sources = [ast.SourceRef(tables.ONE_ROW, **_pos(meta))]
            children = (*children, sources[0])
        order_by = next((c[1] for c in children if isinstance(c, tuple) and c[:1] == ("order_by",)), ())
        first = sources[0]
        source, elements = first, {}
        for lateral in (c for c in children if isinstance(c, _Lateral)):  # each over the one before
            source = _with_elements(source, lateral)
            (item,) = lateral.function.query.items  # `u.u`: the element's relation and column
            elements[ast.ColumnRef(item.alias, lateral.function.alias or "unnest")] = ast.ColumnRef(
                item.alias, source.alias)
        rest = [c for c in children if not (isinstance(c, tuple) and c[:1] == ("order_by",))
                and not isinstance(c, _Lateral)]
        placeholder = ast.SourceRef("", **_pos(meta))
        select = super().query(meta, *[placeholder if c is first else c for c in rest])
        if elements:
            select, order_by = ast.substitute(select, elements), ast.substitute(order_by, elements)
        return replace(select, source=source, order_by=order_by)

    def subquery(self, meta, query, alias):
        return mz_ast.Subquery(query, alias, **_pos(meta))

    def table_function(self, meta, name, *rest):
        """`unnest(list) [AS u]` in FROM: the subquery `(SELECT unnest(list) AS u) AS u` over
        one row; its column is named as the alias, else `unnest` (PostgreSQL's rule)."""
        *arguments, alias = rest
        if name.upper() != "UNNEST" or len(arguments) != 1:
            raise Invalid(f"table function {name} is not supported: only unnest(list) may stand in FROM",
                          meta.line, meta.column)
        call = ast.FunctionCall("UNNEST", tuple(arguments), **_pos(meta))
        inner = ast.Select(items=(ast.SelectItem(call, alias or "unnest"),),
                           source=ast.SourceRef(tables.ONE_ROW, **_pos(meta)))
        return mz_ast.Subquery(inner, alias, **_pos(meta))

    def lateral(self, meta, function):
        return _Lateral(function, meta)

    def subquery_alias(self, meta, name):
        return name

    def order_by(self, meta, *keys):
        return "order_by", keys

    def sort_key(self, meta, expression, direction, nulls):
        descending = direction == "DESC"
        return mz_ast.SortKey(expression, descending, descending if nulls is None else nulls, **_pos(meta))

    def sort_direction(self, meta, token):
        return token.upper()

    def nulls_order(self, meta, position):
        return position

    def nulls_position(self, meta, token):
        return token.upper() == "FIRST"

    def ordered_call(self, meta, name, *rest):
        *args, (_, order_by) = rest
        call = ast.FunctionCall(name.upper(), tuple(args), **_pos(meta))
        return mz_ast.OrderedCall(call, order_by, **_pos(meta))

    def map_literal(self, meta, *entries):
        return mz_ast.MapLiteral(tuple(e for e in entries if e is not None), **_pos(meta))

    def list_literal(self, meta, *items):
        """LIST[a, b]: a list, which is ksqlDB's ARRAY here."""
        return ast.FunctionCall("ARRAY", tuple(i for i in items if i is not None), **_pos(meta))

    def map_entry(self, meta, key, value):
        return key, value

    def map_lookup(self, meta, base, key):
        return mz_ast.MapLookup(base, key, **_pos(meta))

    def json_text_lookup(self, meta, base, key):
        return mz_ast.MapLookup(base, key, as_text=True, **_pos(meta))

    def json_path(self, meta, base, path):
        return mz_ast.JsonPath(base, path, **_pos(meta))

    def json_text_path(self, meta, base, path):
        return mz_ast.JsonPath(base, path, as_text=True, **_pos(meta))


class MaterializeDialect(Dialect):
    """materialize.lark with Materialize's tables and error wording."""

    name = "materialize"
    grammar = Path(__file__).with_name("materialize.lark")
    builder = MaterializeBuilder()
    future_reserved = FUTURE_RESERVED
    name_rules = ("identifier", "alias_name")
    expression_words = "( - + NOT CASE CAST TRUE FALSE NULL DATE TIME TIMESTAMP TIMESTAMPTZ LEFT RIGHT"
    type_words = " ".join(name for name in TYPE_NAMES if " " not in name) + " NUMERIC DECIMAL MAP"
    opening_terminals = frozenset({"_MAP_OPEN", "_LIST_OPEN"})
    operator_words = "= <> != < <= > >= + - || -> * / % :: [ ( . AND OR IS LIKE NOT IN BETWEEN"
    statement_words = "SELECT CREATE SUBSCRIBE SHOW DROP INSERT UPDATE DELETE"
    syntax_headline = None  # Materialize puts the reason on the first line

    def expected_list(self, items: list[str]) -> str:
        if len(items) <= 1:
            return "".join(items)
        return "one of " + " or ".join(items)

    reports_missing = False  # Materialize's own parser says "Expected '(', found X"

    def mismatch_message(self, token: Token, expected: str) -> str:
        found = self.describe_found(token)
        return f"Expected {expected}, found {found}" if expected else f"Unexpected {found}"

    def describe_found(self, token: Token) -> str:
        if token.type == "$END":
            return "EOF"
        if token.type == "NAME":
            return f'identifier "{token}"'
        if token.type == "QUOTED_IDENTIFIER":
            return f'identifier "{_unquote(token)}"'
        if token.type == "STRING_LITERAL":
            return f"string literal {token}"
        if token.type in self.literal_terminals:
            return f'number "{token}"'
        if token.isidentifier():
            return token.upper()  # a keyword
        return f"'{token}'"

    def hint(self, token: Token, accepts) -> str:
        if token == "." and len(self.token_sets["operator"] & set(accepts)) >= 3:  # in an expression
            return "(a.b is column b of source a: write (a.b).c for field c of a record)"
        return super().hint(token, accepts)

    def reserved_hint(self, word: str) -> str:
        return f'({word} is a reserved word: quote it as "{word.lower()}" to use it as a name)'


MATERIALIZE = MaterializeDialect()
