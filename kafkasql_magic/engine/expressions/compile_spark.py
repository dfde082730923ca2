"""ksql expressions (AST) -> Spark columns, with ksqlDB's semantics where Spark differs."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ... import types
from ...dialects import KSQL, Dialect
from ...errors import StatementError
from ...sql import ast, collection_text, text_array
from ...sql.names import match
from ...sql.render import render
from ...typecheck.checker import reads_collection_text
from ...typecheck.messages import MESSAGES
from ...typecheck.time_units import time_unit
from ..aggregate.calls import is_aggregate
from . import jsonb_spark as jsonb
from .lambdas_spark import LAMBDA_FUNCTIONS
from .text_forms_spark import read_text_form

_INTEGRAL = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)

#: Literal kind -> Spark literal builder.
LITERALS: dict[str, Callable[[object], Column]] = {
    "STRING": lambda v: F.lit(v),
    "INT": lambda v: F.lit(v).cast("int"),
    "BIGINT": lambda v: F.lit(v).cast("bigint"),
    "DOUBLE": lambda v: F.lit(float(v)),
    "DECIMAL": lambda v: F.lit(Decimal(str(v))),
    "BOOLEAN": lambda v: F.lit(bool(v)),
    "NULL": lambda v: F.lit(None),
}

#: Binary operator -> Spark builder ('/' is handled apart: ksql divides integers exactly).
OPERATORS: dict[str, Callable[[Column, Column], Column]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "%": lambda a, b: a % b,
    "||": lambda a, b: F.concat(a, b),
    "=": lambda a, b: a == b,
    "<>": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}
COMPARISONS = frozenset({"=", "<>", "<", "<=", ">", ">="})


def quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


@dataclass
class Scope:
    """The columns an expression may name: a source's columns and pseudocolumns."""

    frame: DataFrame
    names: set[str]
    qualifiers: set[str]
    dialect: Dialect = KSQL  # the query's: its functions and casts

    def column(self, ref: ast.ColumnRef) -> Column:
        if ref.qualifier is not None and ref.qualifier not in self.qualifiers:
            raise StatementError(
                f"line {ref.line}:{ref.column}: '{ref.qualifier}' is not a valid stream/table name or alias."
            )
        name = match(ref.name, self.names, self.dialect.name)
        if name is None:
            raise StatementError(
                f"line {ref.line}:{ref.column}: Column '{_display_ref(ref)}' cannot be resolved."
            )
        return F.col(quoted(name))

    def type_of(self, col: Column) -> T.DataType:
        return self.frame.select(col).schema.fields[0].dataType


@dataclass
class JoinScope(Scope):
    """The columns of joined sources: `sides` maps each source's names and alias to its
    columns (name -> column of the joined frame); the first name is the one messages show.
    Unqualified names must be unambiguous."""

    sides: list[tuple[tuple[str, ...], dict[str, str]]] = field(default_factory=list)

    def column(self, ref: ast.ColumnRef) -> Column:
        candidates = self.sides
        if ref.qualifier is not None:
            candidates = [s for s in self.sides if ref.qualifier.lower() in {q.lower() for q in s[0]}]
            if not candidates:
                raise StatementError(
                    f"line {ref.line}:{ref.column}: '{ref.qualifier}' is not a valid stream/table name or alias.")
        found = []
        for qualifiers, columns in candidates:
            name = match(ref.name, columns, self.dialect.name)
            if name is not None:
                found.append((qualifiers[0], name, columns[name]))
        if not found:
            raise StatementError(f"line {ref.line}:{ref.column}: Column '{_display_ref(ref)}' cannot be resolved.")
        if len(found) > 1:
            raise StatementError(f"line {ref.line}:{ref.column}: Column '{ref.name}' is ambiguous. Could be any of: "
                                 + ", ".join(f"{q}.{n}" for q, n, _ in found))
        return F.col(quoted(found[0][2]))


def _display_ref(ref: ast.ColumnRef) -> str:
    return f"{ref.qualifier}.{ref.name}" if ref.qualifier else ref.name


@dataclass
class Compiler:
    """Compiles one expression; functions that can fail record (condition, message) pairs."""

    scope: Scope
    failures: list[tuple[Column, Column]] = field(default_factory=list)
    #: id of a compiled `+` node -> whether it joined strings, so that a chain of `+` asks
    #: Spark the type of each operand once (asking about the chain so far at every link is
    #: quadratic in the chain's length)
    _texts: dict[int, bool] = field(default_factory=dict)
    #: the parameters of the lambdas being compiled -> (Spark's lambda variable, its Spark type)
    lambdas: dict[str, tuple[Column, T.DataType]] = field(default_factory=dict)
    #: parameters bound to typed NULLs, to ask Spark a type inside a lambda (`spark_type`)
    placeholders: frozenset[str] = frozenset()

    def fail(self, condition: Column, message: Column) -> None:
        """Inside a lambda a condition names lambda variables, which mean nothing outside it:
        there the failing element is NULL without a processing-log entry."""
        if not self.lambdas:
            self.failures.append((condition, message))

    def bind(self, lam: ast.Lambda, variables: list[Column], kinds: list[T.DataType]) -> Column:
        """A lambda's body with its parameters bound to Spark's lambda variables."""
        outer = self.lambdas
        self.lambdas = {**outer, **{p: (v, k) for p, v, k in zip(lam.params, variables, kinds)}}
        try:
            return self.compile(lam.body)
        finally:
            self.lambdas = outer

    def spark_type(self, e: ast.Expr, column: Column) -> T.DataType:
        """The Spark type of `column` (compiled from `e`). Spark cannot type an expression over
        lambda variables outside its lambda: `e` is then compiled again with its lambda
        parameters as NULLs of their types, and that is typed."""
        live = set(self.lambdas) - self.placeholders
        if not any(isinstance(n, ast.ColumnRef) and n.qualifier is None and n.name in live for n in ast.walk(e)):
            return self.scope.type_of(column)
        probe = Compiler(self.scope, lambdas={p: (F.lit(None).cast(k), k) for p, (_, k) in self.lambdas.items()},
                         placeholders=frozenset(self.lambdas))
        return self.scope.type_of(probe.compile(e))

    def error(self) -> Column:
        """The first failure message for this row, or NULL."""
        result = None
        for condition, message in self.failures:
            result = F.when(condition, message) if result is None else result.when(condition, message)
        return result if result is not None else F.lit(None).cast("string")

    def predicate(self, e: ast.Expr) -> Column:
        """A condition (WHERE, HAVING, ON): a row where it is NULL is dropped as one where it is
        false, so its top-level comparisons stay Spark's own (an ON's equalities stay the
        equi-join keys Spark's stream joins need)."""
        if isinstance(e, ast.And):
            return self.predicate(e.left) & self.predicate(e.right)
        if isinstance(e, ast.BinaryOp) and e.op in COMPARISONS:
            return OPERATORS[e.op](self.compile(e.left), self.compile(e.right))
        return self.compile(e)

    def _truth(self, result: Column) -> Column:
        """A comparison's value in the query's dialect: ksqlDB's is false where SQL's is NULL."""
        return F.coalesce(result, F.lit(False)) if self.scope.dialect.null_comparisons_are_false else result

    def compile(self, e: ast.Expr) -> Column:
        handler = getattr(self, "_" + type(e).__name__, None)
        if handler is None:
            raise StatementError(f"line {e.line}:{e.column}: unsupported expression {type(e).__name__}")
        return handler(e)

    def _Literal(self, e: ast.Literal) -> Column:
        return LITERALS[e.kind](e.value)

    def _ColumnRef(self, e: ast.ColumnRef) -> Column:
        if e.qualifier is None and e.name in self.lambdas:
            return self.lambdas[e.name][0]
        return self.scope.column(e)

    def _Dereference(self, e: ast.Dereference) -> Column:
        base = self.compile(e.base)
        struct = self.spark_type(e.base, base)
        if not isinstance(struct, T.StructType):
            raise StatementError(f"line {e.line}:{e.column}: {render(e.base)} is not a STRUCT: cannot access '{e.field}'")
        names = struct.fieldNames()
        name = match(e.field, names, self.scope.dialect.name)
        if name is None:
            raise StatementError(f"line {e.line}:{e.column}: {render(e.base)} has no field '{e.field}' "
                                 f"(fields: {', '.join(names)})")
        return base.getField(name)

    def _Subscript(self, e: ast.Subscript) -> Column:
        return F.try_element_at(self.compile(e.base), self.compile(e.index))

    def _MapLookup(self, e) -> Column:
        """Materialize's `map -> key`: the value under `key`, NULL when absent; over JSON
        text, jsonb's `->` / `->>` (jsonb.py)."""
        base, key = self.compile(e.base), self.compile(e.key)
        if isinstance(self.spark_type(e.base, base), T.StringType):
            by_index = isinstance(self.spark_type(e.key, key), _INTEGRAL)
            return jsonb.jsonb_get(base, key, by_index=by_index, as_text=e.as_text)
        return F.try_element_at(base, key)

    def _MapLiteral(self, e) -> Column:
        """Materialize's `MAP[k => v, ...]`: a repeated key keeps its last value (the session's
        LAST_WIN policy); an entry whose key is NULL is left out, as `map_agg` leaves it."""
        entries = F.array(*[F.struct(self.compile(k).cast("string").alias("k"), self.compile(v).alias("v"))
                            for k, v in e.entries])
        return F.map_from_entries(F.filter(entries, lambda entry: entry["k"].isNotNull()))

    def _JsonPath(self, e) -> Column:
        """jsonb's `#>` / `#>>` over JSON text (jsonb.py); the path, a text array literal, was
        checked by the type checker."""
        return jsonb.jsonb_path(self.compile(e.base), text_array.parse(e.path.value), as_text=e.as_text)

    def _OrderedCall(self, e) -> Column:
        return self._FunctionCall(e.call)  # an aggregate: refused where the build did not replace it

    def _FunctionCall(self, e: ast.FunctionCall) -> Column:
        if is_aggregate(e.name):  # the build replaces those the analysis allows by columns
            raise StatementError(f"line {e.line}:{e.column}: Aggregate function {e.name} cannot be used here: "
                                 "only in the SELECT list and HAVING clause, and not inside another aggregate.")
        if e.name in LAMBDA_FUNCTIONS:
            return LAMBDA_FUNCTIONS[e.name](self, e)
        args = [F.lit(unit) if (unit := time_unit(e.name, i, a)) else self.compile(a) for i, a in enumerate(e.args)]
        fn = self.scope.dialect.function(e.name, len(args), lambda: [self._type_of(x, a) for x, a in zip(e.args, args)])
        return fn.build(self, args, e.args)

    def _type_of(self, e: ast.Expr, column: Column) -> ast.Type | None:
        try:
            return types.from_spark(self.spark_type(e, column))
        except Exception:  # a type with no ksql name: shown as unknown in the message
            return None

    def _StructConstructor(self, e: ast.StructConstructor) -> Column:
        return F.struct(*[self.compile(value).alias(name) for name, value in e.fields])

    def _BinaryOp(self, e: ast.BinaryOp) -> Column:
        left, right = self.compile(e.left), self.compile(e.right)
        if e.op == "+":
            self._texts[id(e)] = self._is_text(e.left, left) or self._is_text(e.right, right)
            if self._texts[id(e)]:
                return F.concat(left.cast("string"), right.cast("string"))  # ksql's + joins strings
        if e.op == "/":
            return self._divide(left, right, self.spark_type(e.left, left), self.spark_type(e.right, right))
        if e.op == "%":
            self.fail(right == 0, F.lit("/ by zero"))
            return F.when(right != 0, left % right)
        if e.op in COMPARISONS:
            return self._truth(OPERATORS[e.op](left, right))
        return OPERATORS[e.op](left, right)

    def _is_text(self, expr: ast.Expr, column: Column) -> bool:
        known = self._texts.get(id(expr))
        return known if known is not None else self.spark_type(expr, column) == T.StringType()

    def _divide(self, left: Column, right: Column, lt: T.DataType, rt: T.DataType) -> Column:
        """ksqlDB divides integers to an integer; Spark's `/` always gives a fraction."""
        if isinstance(lt, _INTEGRAL) and isinstance(rt, _INTEGRAL):
            wide = "bigint" if T.LongType in (type(lt), type(rt)) else "int"
            self.fail(right == 0, F.lit("/ by zero"))
            return F.when(right != 0, F.call_function("div", left, right).cast(wide))
        return left / right

    def _UnaryOp(self, e: ast.UnaryOp) -> Column:
        operand = self.compile(e.operand)
        return -operand if e.op == "-" else operand

    def _And(self, e: ast.And) -> Column:
        return self.compile(e.left) & self.compile(e.right)

    def _Or(self, e: ast.Or) -> Column:
        return self.compile(e.left) | self.compile(e.right)

    def _Not(self, e: ast.Not) -> Column:
        return ~self.compile(e.operand)

    def _IsNull(self, e: ast.IsNull) -> Column:
        operand = self.compile(e.operand)
        return operand.isNotNull() if e.negated else operand.isNull()

    def _Like(self, e: ast.Like) -> Column:
        result = F.like(self.compile(e.operand), self.compile(e.pattern),
                        F.lit(e.escape) if e.escape else None)
        return ~result if e.negated else result

    def _InList(self, e: ast.InList) -> Column:
        result = self._truth(self.compile(e.operand).isin(*[self.compile(i) for i in e.items]))
        return ~result if e.negated else result

    def _Between(self, e: ast.Between) -> Column:
        result = self._truth(self.compile(e.operand).between(self.compile(e.low), self.compile(e.high)))
        return ~result if e.negated else result

    def _Case(self, e: ast.Case) -> Column:
        operand = self.compile(e.operand) if e.operand is not None else None
        result = None
        for condition, value in e.whens:
            cond = self.compile(condition)
            if operand is not None:
                cond = operand == cond
            result = F.when(cond, self.compile(value)) if result is None else result.when(cond, self.compile(value))
        return result.otherwise(self.compile(e.else_)) if e.else_ is not None else result

    def _Cast(self, e: ast.Cast) -> Column:
        messages = MESSAGES[self.scope.dialect.name]
        if reads_collection_text(e, messages):  # '{1,2}'::int list (checked)
            return _collection_literal(collection_text.parse(e.operand.value, e.type, collection_text.typed_word), e.type)
        value = self.compile(e.operand)
        if (messages.reads_collection_text and e.type.name in collection_text.TEXT_FORMS
                and isinstance(self.spark_type(e.operand, value), T.StringType)):  # t::int list, at run time
            read, error = read_text_form(value, e.type, messages.collection_text_prefix(e.type))
            self.fail(error.isNotNull(), error)
            return read
        if e.type.name == "STRING":
            source_type = self._type_of(e.operand, value)
            text = self.scope.dialect.text_cast(value, source_type) if source_type is not None else None
            if text is not None:
                return text
        return value.try_cast(types.to_spark(e.type))


def _collection_literal(value, t: ast.Type) -> Column:
    """A list, map or record read from its text form (`collection_text`), as a literal of type `t`."""
    spark_type = types.to_spark(t)
    if value is None:
        return F.lit(None).cast(spark_type)
    if t.name == "STRUCT":
        return F.struct(*[_collection_literal(value[name], field_type).alias(name)
                          for name, field_type in t.fields]).cast(spark_type)
    if t.name == "ARRAY":
        return F.array(*[_collection_literal(v, t.element) for v in value]).cast(spark_type)
    if t.name == "MAP":
        entries = [c for k, v in value.items() for c in (F.lit(k), _collection_literal(v, t.value))]
        return F.create_map(*entries).cast(spark_type)
    return F.lit(value).cast(spark_type)
