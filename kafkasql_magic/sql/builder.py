"""Parse tree (from ksql.lark) -> AST nodes: one method per grammar rule, nothing else.
Other dialects subclass `Builder` (materialize_parser.MaterializeBuilder)."""

from __future__ import annotations

from lark import Transformer, v_args

from . import ast
from .build_helpers import (MAX_DURATION_DAYS, TIME_UNITS_MS, _TYPE_NAMES, Invalid, _assignments, _flag,  # noqa: F401
                            _integer, _name, _pos, _positive, _unquote)

__all__ = ["Invalid", "Builder", "BUILDER"]


@v_args(meta=True, inline=True)
class Builder(Transformer):
    """Builds AST nodes from the parse tree; each method is named after a grammar rule.
    Other dialects subclass it for their own rules and identifier/type tables."""

    __visit_tokens__ = False

    def start(self, meta, statement):
        return statement

    # ---- statements
    def create_source(self, meta, or_replace, kind, if_not_exists, name, columns, properties):
        return ast.CreateSource(kind, name, columns or (), properties or (), bool(or_replace),
                                bool(if_not_exists), **_pos(meta))

    def create_as_select(self, meta, or_replace, kind, if_not_exists, name, properties, query):
        return ast.CreateAsSelect(kind, name, query, properties or (), bool(or_replace),
                                  bool(if_not_exists), **_pos(meta))

    or_replace = if_not_exists = if_exists = delete_topic = from_beginning = extended = _flag

    def source_kind(self, meta, token):
        return token.upper()

    def table_elements(self, meta, *columns):
        return columns

    def column_def(self, meta, name, type_, constraint):
        role, header_key = constraint or (None, None)
        return ast.ColumnDef(name, type_, role, header_key, **_pos(meta))

    def key_column(self, meta):
        return "KEY", None

    def primary_key_column(self, meta):
        return "PRIMARY_KEY", None

    def headers_column(self, meta):
        return "HEADERS", None

    def header_column(self, meta, key):
        return "HEADER", _unquote(key)

    def with_properties(self, meta, *properties):
        return properties

    def property(self, meta, name, value):
        return ast.Property(name.upper(), value, **_pos(meta))

    def string_property_name(self, meta, token):
        return _unquote(token)

    def insert_select(self, meta, target, properties, query):
        return ast.InsertSelect(target, query, properties or (), **_pos(meta))

    def insert_values(self, meta, target, columns, *values):
        return ast.InsertValues(target, columns or (), tuple(v for v in values if v is not None), **_pos(meta))

    def column_list(self, meta, *names):
        return names

    def describe(self, meta, name):
        return ast.Describe(name, **_pos(meta))

    def describe_extended(self, meta, name):
        return ast.Describe(name, True, **_pos(meta))

    def show(self, meta, what, extended):
        return ast.Show(what, bool(extended), **_pos(meta))

    def show_what(self, meta, token):
        return token.upper()

    def drop(self, meta, kind, if_exists, name, delete_topic):
        return ast.Drop(kind, name, bool(if_exists), bool(delete_topic), **_pos(meta))

    def print(self, meta, topic, from_beginning, interval, limit):
        return ast.Print(topic, bool(from_beginning), limit and limit[1], interval, **_pos(meta))

    def print_interval(self, meta, value):
        return int(value)

    def set_property(self, meta, name, value):
        return ast.SetProperty(_unquote(name), _unquote(value), **_pos(meta))

    def unset_property(self, meta, name):
        return ast.UnsetProperty(_unquote(name), **_pos(meta))

    def define(self, meta, name, value):
        return ast.Define(name, _unquote(value), **_pos(meta))

    def undefine(self, meta, name):
        return ast.Undefine(name, **_pos(meta))

    def explain(self, meta, statement):
        return ast.Explain(statement, **_pos(meta))

    def explain_query(self, meta, query_id):
        return ast.ExplainQuery(str(query_id).upper(), **_pos(meta))

    def terminate(self, meta, query_id):
        return ast.TerminateQuery(query_id, **_pos(meta))

    def terminate_all(self, meta):
        return ast.TerminateQuery(None, **_pos(meta))

    # ---- queries
    def query(self, meta, *children):
        items = tuple(c for c in children if isinstance(c, (ast.Star, ast.SelectItem)))
        source = next(c for c in children if isinstance(c, ast.SourceRef))
        joins = tuple(c for c in children if isinstance(c, ast.Join))
        window = next((c for c in children if isinstance(c, ast.Window)), None)
        clauses = dict(c for c in children if isinstance(c, tuple))
        return ast.Select(items, source, clauses.get("where"), clauses.get("group_by", ()),
                          clauses.get("having"), clauses.get("partition_by", ()),
                          "emit_changes" in clauses or "emit_final" in clauses, clauses.get("limit"), joins,
                          window, emit_final="emit_final" in clauses, **_pos(meta))

    def tumbling(self, meta, _name, size, retention, grace):
        return ast.Window("TUMBLING", _positive(size, "SIZE", meta), None, retention, grace, **_pos(meta))

    def hopping(self, meta, _name, size, advance, retention, grace):
        return ast.Window("HOPPING", _positive(size, "SIZE", meta), _positive(advance, "ADVANCE BY", meta),
                          retention, grace, **_pos(meta))

    def session(self, meta, _name, gap, retention, grace):
        return ast.Window("SESSION", _positive(gap, "the session gap", meta), None, retention, grace, **_pos(meta))

    def retention(self, meta, duration):
        return duration

    def grace_period(self, meta, duration):
        return duration

    def join(self, meta, kind, source, *rest):
        *timing, on = rest  # [within] may be a None placeholder
        within, grace = timing[0] if timing and timing[0] is not None else (None, None)
        return ast.Join(kind or "INNER", source, on, within, grace, **_pos(meta))

    def join_kind(self, meta, word, *outer):
        return word.upper()

    def within(self, meta, *durations):
        """((before, after), grace): `WITHIN n` is n before and after; grace is None when not given."""
        *window, grace = durations
        before, after = window if len(window) == 2 else (window[0], window[0])
        return (before, after), grace

    def duration(self, meta, amount, unit):
        unit_ms = TIME_UNITS_MS.get(unit.upper()) or TIME_UNITS_MS.get(unit.upper() + "S")
        if unit_ms is None:
            raise Invalid(f"Unknown time unit '{unit}' (use one of {', '.join(TIME_UNITS_MS)})",
                          meta.line, meta.column)
        ms = int(amount) * unit_ms
        if ms > MAX_DURATION_DAYS * TIME_UNITS_MS["DAYS"]:
            raise Invalid(f"Duration too long: {amount} {unit} (at most {MAX_DURATION_DAYS:,} DAYS)",
                          meta.line, meta.column)
        return ms

    def where_clause(self, meta, condition):
        return "where", condition

    def having(self, meta, condition):
        return "having", condition

    def limit_clause(self, meta, value):
        return "limit", int(value)

    def group_by(self, meta, *expressions):
        if not expressions:
            raise Invalid("GROUP BY requires at least one expression", meta.line, meta.column)
        return "group_by", expressions

    def partition_by(self, meta, *expressions):
        if not expressions:
            raise Invalid("PARTITION BY requires at least one expression", meta.line, meta.column)
        return "partition_by", expressions

    def emit_changes(self, meta):
        return "emit_changes", True

    def emit_final(self, meta):
        return "emit_final", True

    def star(self, meta):
        return ast.Star(**_pos(meta))

    def qualified_star(self, meta, qualifier):
        return ast.Star(qualifier, **_pos(meta))

    def select_expression(self, meta, expression, alias=None):
        return ast.SelectItem(expression, alias, **_pos(meta))

    def source(self, meta, name, alias=None):
        return ast.SourceRef(name, alias, **_pos(meta))

    # ---- types
    def base_type(self, meta, token):
        name = token.upper()
        return ast.Type(_TYPE_NAMES.get(name, name), **_pos(meta))

    def decimal_type(self, meta, precision, scale):
        return ast.Type("DECIMAL", int(precision), int(scale), **_pos(meta))

    def array_type(self, meta, element):
        return ast.Type("ARRAY", element=element, **_pos(meta))

    def map_type(self, meta, key, value):
        return ast.Type("MAP", key=key, value=value, **_pos(meta))

    def struct_type(self, meta, *fields):
        return ast.Type("STRUCT", fields=fields, **_pos(meta))

    def struct_field(self, meta, name, type_):
        return name, type_

    # ---- expressions
    def or_(self, meta, left, right):
        return ast.Or(left, right, **_pos(meta))

    def and_(self, meta, left, right):
        return ast.And(left, right, **_pos(meta))

    def not_(self, meta, operand):
        return ast.Not(operand, **_pos(meta))

    def comparison(self, meta, left, op, right):
        return ast.BinaryOp(op, left, right, **_pos(meta))

    def binary(self, meta, left, op, right):
        return ast.BinaryOp(op, left, right, **_pos(meta))

    def comparison_operator(self, meta, token):
        return "<>" if token == "!=" else str(token)

    def additive_operator(self, meta, token):
        return str(token)

    multiplicative_operator = additive_operator

    def is_null(self, meta, operand):
        return ast.IsNull(operand, **_pos(meta))

    def is_not_null(self, meta, operand):
        return ast.IsNull(operand, True, **_pos(meta))

    def like(self, meta, operand, pattern, escape, negated=False):
        return ast.Like(operand, pattern, negated, escape, **_pos(meta))

    def not_like(self, meta, operand, pattern, escape):
        return self.like(meta, operand, pattern, escape, True)

    def escape(self, meta, token):
        return _unquote(token)

    def in_list(self, meta, operand, *items):
        return ast.InList(operand, items, **_pos(meta))

    def not_in_list(self, meta, operand, *items):
        return ast.InList(operand, items, True, **_pos(meta))

    def between(self, meta, operand, low, high):
        return ast.Between(operand, low, high, **_pos(meta))

    def not_between(self, meta, operand, low, high):
        return ast.Between(operand, low, high, True, **_pos(meta))

    def negative(self, meta, operand):
        """`-` before a number is part of the literal, as in ksqlDB's grammar."""
        if isinstance(operand, ast.Literal) and operand.kind in ("INT", "BIGINT"):
            return _integer(-operand.value, meta)
        if isinstance(operand, ast.Literal) and operand.kind == "DOUBLE":
            return ast.Literal(-operand.value, "DOUBLE", **_pos(meta))
        if isinstance(operand, ast.Literal) and operand.kind == "DECIMAL":
            text = operand.value
            return ast.Literal(text[1:] if text.startswith("-") else "-" + text, "DECIMAL", **_pos(meta))
        return ast.UnaryOp("-", operand, **_pos(meta))

    def positive(self, meta, operand):
        return ast.UnaryOp("+", operand, **_pos(meta))

    def dereference(self, meta, base, field):
        return ast.Dereference(base, field, **_pos(meta))

    def subscript(self, meta, base, index):
        return ast.Subscript(base, index, **_pos(meta))

    def column(self, meta, name):
        return ast.ColumnRef(name, **_pos(meta))

    def qualified_column(self, meta, qualifier, name):
        return ast.ColumnRef(name, qualifier, **_pos(meta))

    def function_call(self, meta, name, *args):
        return ast.FunctionCall(name.upper(), tuple(a for a in args if a is not None), **_pos(meta))

    def subscript_or_array(self, meta, base, *items):
        """`ARRAY[a, b]` constructs an array (as in ksqlDB); any other `x[i]` is a subscript."""
        items = tuple(i for i in items if i is not None)
        if base == ast.ColumnRef("ARRAY"):
            return ast.FunctionCall("ARRAY", items, **_pos(meta))
        if len(items) != 1:
            raise Invalid("A subscript takes one index: x[i].", meta.line, meta.column)
        return ast.Subscript(base, items[0], **_pos(meta))

    def call_or_constructor(self, meta, name, *entries):
        """f(a, b), or the constructors MAP(k := v, ...) (as MAP(k, v, ...): the function table
        pairs them) and STRUCT(f := v, ...)."""
        entries = [e if isinstance(e, tuple) else (e, None) for e in entries if e is not None]
        if not entries and name.upper() == "STRUCT":  # ksqlDB's empty struct
            return ast.StructConstructor((), **_pos(meta))
        if not _assignments(entries, meta):
            return ast.FunctionCall(name.upper(), tuple(k for k, _ in entries), **_pos(meta))
        if name.upper() == "MAP":
            return ast.FunctionCall("MAP", tuple(x for e in entries for x in e), **_pos(meta))
        if name.upper() != "STRUCT":
            raise Invalid(f"Only MAP(...) and STRUCT(...) take `:=` entries, not {name}(...).", meta.line, meta.column)
        for field, _ in entries:
            if not isinstance(field, ast.ColumnRef) or field.qualifier is not None:
                raise Invalid("A STRUCT field name must be an identifier (STRUCT(name := value)).",
                              field.line, field.column)
        return ast.StructConstructor(tuple((f.name, v) for f, v in entries), **_pos(meta))

    def lambda_(self, meta, *children):
        """`x => body`, `(x) => body` (parsed as an expression, so it must be a bare name) or
        `(x, y) => body`; parameter names are identifiers (upper-cased unless quoted)."""
        *params, body = children
        if len(params) == 1 and not isinstance(param := params[0], str):
            if not isinstance(param, ast.ColumnRef) or param.qualifier is not None:
                raise Invalid("A lambda's parameters must be names: x => ..., (x, y) => ...", param.line, param.column)
            params = [param.name]
        return ast.Lambda(tuple(params), body, **_pos(meta))

    def assignment(self, meta, key, value):
        return (key, value)

    def count_star(self, meta, name):
        return ast.FunctionCall(name.upper(), (), True, **_pos(meta))

    def searched_case(self, meta, *children):
        *whens, else_ = children
        return ast.Case(tuple(whens), else_, **_pos(meta))

    def simple_case(self, meta, operand, *children):
        *whens, else_ = children
        return ast.Case(tuple(whens), else_, operand, **_pos(meta))

    def when_clause(self, meta, condition, result):
        return condition, result

    def cast(self, meta, operand, type_):
        return ast.Cast(operand, type_, **_pos(meta))

    # ---- literals
    def string_literal(self, meta, token):
        return ast.Literal(_unquote(token), "STRING", **_pos(meta))

    def integer_literal(self, meta, token):
        return _integer(int(token), meta)

    def decimal_literal(self, meta, token):
        return ast.Literal(str(token), "DECIMAL", **_pos(meta))

    def double_literal(self, meta, token):
        value = float(token)
        if value == float("inf"):
            raise Invalid(f"Number overflows DOUBLE: {token}", meta.line, meta.column)
        return ast.Literal(value, "DOUBLE", **_pos(meta))

    def true_literal(self, meta):
        return ast.Literal(True, "BOOLEAN", **_pos(meta))

    def false_literal(self, meta):
        return ast.Literal(False, "BOOLEAN", **_pos(meta))

    def null_literal(self, meta):
        return ast.Literal(None, "NULL", **_pos(meta))

    # ---- identifiers
    def identifier(self, meta, token):
        return _name(token)

    alias_name = describe_name = query_id = identifier

    def variable_name(self, meta, token):
        return str(token)

    def topic_name(self, meta, token):
        return _unquote(token) if token[0] in "'`\"" else str(token)


BUILDER = Builder()
