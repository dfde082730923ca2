"""The checker: walks an expression, types each node by the rules and the signature table,
and raises a positioned ExpressionTypeError worded by the dialect's messages."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from ..errors import ExpressionTypeError, did_you_mean
from ..sql import ast, collection_text
from ..sql.names import match
from ..sql.render import render
from ..sql.split import excerpt
from ..sql.typetext import display
from . import jsonb, lambdas, signatures, time_units
from .messages import COMPARISONS, MESSAGES, Messages
from .rules import (BOOLEAN, CASTS, COMPARABLE, EQUALITY, LITERAL_TYPES, arithmetic_type, decimal_literal_type,
                    decimal_problem)
from .signatures import is_numeric, widen

#: Columns every windowed aggregation can name (window bounds, epoch milliseconds).
WINDOW_COLUMNS = {"WINDOWSTART": ast.Type("BIGINT"), "WINDOWEND": ast.Type("BIGINT")}


class Checker:
    """Types expressions over one set of visible columns; errors name the cell's line and column
    and, when the cell's `text` is given, show it with a caret."""

    def __init__(self, columns: Mapping[str, ast.Type], dialect: str = "ksql", text: str | None = None,
                 aliases: Mapping[str, str] | None = None, untyped: frozenset[str] = frozenset(),
                 own: frozenset[str] = frozenset(), absent: frozenset[str] = frozenset()):
        self.messages: Messages = MESSAGES[dialect]
        self.dialect = dialect
        self.own = own  # columns declared in this dialect: named exactly (sql/names.py)
        self.untyped = untyped  # functions the dialect has that the signature table does not type
        self.absent = absent  # functions of the signature table the dialect does not have
        self.text = text
        self.aliases = {name.lower(): alias.lower() for name, alias in (aliases or {}).items()}
        self.types: dict[int, ast.Type | None] = {}
        self.plain: dict[str, ast.Type] = {}
        self.lambda_vars: dict[str, ast.Type | None] = {}  # the parameters of the lambdas around a node
        self.clause: str | None = None  # the clause being typed: ksqlDB names it in an unknown column's message
        self.qualified: dict[str, dict[str, ast.Type]] = {}
        for name, type_ in columns.items():
            qualifier, dot, column = name.rpartition(".")
            if dot:
                self.qualified.setdefault(qualifier.lower(), {})[column] = type_
            else:
                self.plain[name] = type_

    # ------------------------------------------------------------ errors
    def error(self, node: ast.Node, message: str, location: str = "parser") -> ExpressionTypeError:
        shown = excerpt(self.text, node.line, node.column) if self.text and node.line else ""
        return ExpressionTypeError(message, node.line, node.column, shown, location)

    def column_error(self, node: ast.Node, message: str) -> ExpressionTypeError:
        """A column that does not resolve, placed as the dialect's messages place it."""
        return self.error(node, message, self.messages.column_location)

    def describe(self, e: ast.Expr, t: ast.Type | None) -> str:
        return f"{render(e)} ({self.messages.type_name(t)})"

    # ------------------------------------------------------------ entry points
    def type_of(self, e: ast.Expr) -> ast.Type | None:
        """The type of `e`; every node typed so far stays in `self.types` (by id), so the planner
        can ask the type of a sub-expression (`v + v` on STRINGs concatenates) without re-typing."""
        if id(e) in self.types:
            return self.types[id(e)]
        handler = getattr(self, "_" + type(e).__name__, None)
        if handler is None:
            raise TypeError(f"no type rule for {type(e).__name__}")  # an internal error: a new AST node
        self.types[id(e)] = found = handler(e)
        return found

    def check_condition(self, e: ast.Expr, clause: str) -> None:
        """WHERE, HAVING and ON conditions must be BOOLEAN (a bare NULL is allowed)."""
        self.clause = "JOIN ON" if clause == "ON" else clause
        try:
            t = self.type_of(e)
        finally:
            self.clause = None
        if t is not None and t != BOOLEAN:
            raise self.error(e, self.messages.not_boolean(clause, render(e), t))

    # ------------------------------------------------------------ leaves
    def _Literal(self, e: ast.Literal) -> ast.Type | None:
        if e.kind != "DECIMAL":
            return LITERAL_TYPES[e.kind]
        t = decimal_literal_type(str(e.value))
        if t is None:
            raise self.error(e, f"Invalid numeric literal: {e.value}")
        return t

    def _ColumnRef(self, e: ast.ColumnRef) -> ast.Type:
        if e.qualifier is None and e.name in self.lambda_vars:
            return self.lambda_vars[e.name]
        if e.qualifier is not None and self.qualified:
            qualifier = e.qualifier.lower()
            columns = self.qualified.get(qualifier, self.qualified.get(self.aliases.get(qualifier, qualifier)))
            if columns is None:
                raise self.error(e, f"'{e.qualifier}' is not a valid stream/table name or alias.")
            found = self._found(e.qualifier, e.name, columns)
            known = list(columns)
        else:
            found = self._found(None, e.name, self.plain)
            if not found and e.qualifier is None:
                found = [f for q, columns in self.qualified.items() for f in self._found(q, e.name, columns)]
            known = [*self.plain, *(n for columns in self.qualified.values() for n in columns)]
        if not found:
            name = f"{e.qualifier}.{e.name}" if e.qualifier else e.name
            raise self.column_error(e, self.messages.unknown_column(name, self.clause)).hinted(
                did_you_mean(e.name, known))
        if len(found) > 1:
            raise self.column_error(e, self.messages.ambiguous_column(e.name, [f"{q.upper()}.{n}" for q, n, _ in found]))
        return found[0][2]

    # ------------------------------------------------------------ structure access
    def _Dereference(self, e: ast.Dereference) -> ast.Type | None:
        base = self.type_of(e.base)
        if base is None:
            return None
        if base.name != "STRUCT":
            raise self.error(e, f"Can only dereference Struct type, instead got {self.describe(e.base, base)}.")
        names = dict(base.fields)
        found = match(e.field, names, self.dialect)
        if found is None:
            raise self.error(e, f"Could not find field '{e.field}' in '{render(e.base)}'.")
        return names[found]

    def _MapLookup(self, e) -> ast.Type | None:
        return jsonb.map_lookup_type(self, e)

    def _JsonPath(self, e) -> ast.Type | None:
        return jsonb.json_path_type(self, e)

    def _MapLiteral(self, e) -> ast.Type:
        return jsonb.map_literal_type(self, e)

    def _Subscript(self, e: ast.Subscript) -> ast.Type | None:
        base, index = self.type_of(e.base), self.type_of(e.index)
        if base is None:
            return None
        if base.name == "ARRAY":
            if index is not None and index.name not in ("INT", "BIGINT"):
                raise self.error(e.index, f"Array index must be an INTEGER or BIGINT, but is "
                                          f"{self.describe(e.index, index)}.")
            return base.element
        if base.name == "MAP":
            if widen(base.key, index) is False:
                raise self.error(e.index, f"Map key must be {self.messages.type_name(base.key)}, but is "
                                          f"{self.describe(e.index, index)}.")
            return base.value
        hint = f" Use the dereference operator for STRUCTS: {render(e.base)}->{render(e.index)}" \
            if base.name == "STRUCT" else ""
        raise self.error(e, f"Subscript expression ({render(e)}) do not apply to {display(base)}.{hint}")

    # ------------------------------------------------------------ functions
    def _FunctionCall(self, e: ast.FunctionCall) -> ast.Type | None:
        if e.name.upper() in self.untyped:  # the dialect's own, over ksql's of the same name (PostgreSQL's
            args = [self.type_of(a) for a in e.args]  # encode is not ksqlDB's): the build resolves it,
            if e.name.upper() == "UNNEST" and args and args[0] is not None and args[0].name == "ARRAY":
                return args[0].element   # its arguments are still checked; unnest's rows are its elements
            if e.name.upper() == "ROW" and None not in args:  # a record of fields f1, f2, ...
                return ast.Type("STRUCT", fields=tuple((f"f{i}", t) for i, t in enumerate(args, start=1)))
            return None
        if lambdas.is_lambda_function(e.name):
            return lambdas.type_call(self, e)
        if not signatures.is_known(e.name) or e.name in self.absent:
            raise self.error(e, self.messages.unknown_function(e.name, [self.argument(a) for a in e.args]))
        if any(isinstance(a, ast.Lambda) for a in e.args):
            raise self.error(e, self.messages.no_overload(e.name, [self.argument(a) for a in e.args],
                                                          signatures.SIGNATURES[e.name]))
        if e.name in signatures.STAR_AGGREGATES and (e.star or (not e.args and self.dialect == "ksql")):
            # ksqlDB's COUNT() counts rows as COUNT(*) does; PostgreSQL has no count()
            return ast.Type("BIGINT")
        args = [time_units.TIMEUNIT if time_units.time_unit(e.name, i, a) else self.type_of(a)
                for i, a in enumerate(e.args)]
        if e.name == "ARRAY" and (not args or all(a is None for a in args)):
            raise self.error(e, self.messages.empty_array(bool(args)))
        if e.name == "MAP":
            return self._map(e, args)
        resolved = signatures.resolve(e.name, args)
        if resolved is None:
            raise self.error(e, self.messages.no_overload(e.name, args, signatures.SIGNATURES[e.name]))
        return resolved.result

    def _OrderedCall(self, e) -> ast.Type | None:
        """Materialize's `agg(x ORDER BY k)`: the call's type; the keys must type too."""
        for key in e.order_by:
            self.type_of(key.expr)
        return self.type_of(e.call)
    def argument(self, a: ast.Expr) -> ast.Type | None:
        return lambdas.LAMBDA if isinstance(a, ast.Lambda) else self.type_of(a)

    def _Lambda(self, e: ast.Lambda) -> ast.Type:
        raise self.error(e, "A lambda can only be an argument of TRANSFORM, FILTER or REDUCE.")

    def names_column(self, name: str) -> bool:
        """Whether `name` names a visible column (a lambda parameter may not)."""
        return any(self._found(q, name, columns) for q, columns in ((None, self.plain), *self.qualified.items()))

    def _own_of(self, qualifier: str | None) -> frozenset[str]:
        if qualifier is None:
            return self.own
        return frozenset(n.partition(".")[2] for n in self.own if n.partition(".")[0].lower() == qualifier.lower())

    def _found(self, qualifier, wanted: str, columns) -> list:
        """[(qualifier, name, type)] of the column `wanted` names (sql/names.py: exactly, or
        ignoring case across dialects)."""
        name = match(wanted, columns, self.dialect, self._own_of(qualifier))
        return [(qualifier, name, columns[name])] if name is not None else []

    def _map(self, e: ast.FunctionCall, args: list) -> ast.Type | None:
        """MAP(k := v, ...): every key and every value of one type (numbers widen)."""
        key = value = None
        if len(args) % 2:
            raise self.error(e, self.messages.no_overload(e.name, args, signatures.SIGNATURES[e.name]))
        for k, v in zip(args[::2], args[1::2]):
            key, value = widen(key, k), widen(value, v)
            if key is False or value is False:
                raise self.error(e, self.messages.no_overload(e.name, args, signatures.SIGNATURES[e.name]))
        return ast.Type("MAP", key=key, value=value)

    def _StructConstructor(self, e: ast.StructConstructor) -> ast.Type:
        return ast.Type("STRUCT", fields=tuple((name, self.type_of(value)) for name, value in e.fields))

    # ------------------------------------------------------------ operators
    def _BinaryOp(self, e: ast.BinaryOp) -> ast.Type | None:
        left, right = self.type_of(e.left), self.type_of(e.right)
        if e.op in COMPARISONS:
            self.comparable(e, e.left, left, e.op, e.right, right)
            return BOOLEAN
        if e.op == "||":
            if left is None or right is None:
                return left or right
            if left == right and left.name in ("STRING", "BYTES"):
                return left
            raise self.error(e, self.messages.bad_operands(render(e), e.op, left, right))
        if left is None or right is None:
            raise self.error(e, self.messages.null_arithmetic(render(e), e.op, left, right))
        result = arithmetic_type(e.op, left, right, self.messages.plus_concatenates_strings)
        if result is None:
            raise self.error(e, self.messages.bad_operands(render(e), e.op, left, right))
        return result

    def comparable(self, at: ast.Node, left_e: ast.Expr, left: ast.Type | None, op: str,
                   right_e: ast.Expr, right: ast.Type | None) -> None:
        if left is None or right is None:
            if isinstance(at, ast.BinaryOp) and not self.messages.null_comparison_allowed:
                # x = NULL; IN lists and BETWEEN may hold NULLs
                raise self.error(at, self.messages.null_comparison(left, op, right))
            return
        partners, equality_only = COMPARABLE.get(left.name, ((), True))
        if right.name not in partners or (equality_only and op not in EQUALITY):
            raise self.error(at, self.messages.not_comparable(self.describe(left_e, left), op,
                                                              self.describe(right_e, right), left, right))

    def _UnaryOp(self, e: ast.UnaryOp) -> ast.Type | None:
        operand = self.type_of(e.operand)
        if operand is not None and not is_numeric(operand):
            raise self.error(e, self.messages.bad_sign(render(e), e.op, operand))
        return operand

    def _logical(self, e, *operands: ast.Expr) -> ast.Type:
        found = [self.type_of(o) for o in operands]
        if any(t is not None and t != BOOLEAN for t in found):
            raise self.error(e, self.messages.not_logical(type(e).__name__.upper(), render(e), found))
        return BOOLEAN

    def _And(self, e: ast.And) -> ast.Type:
        return self._logical(e, e.left, e.right)

    def _Or(self, e: ast.Or) -> ast.Type:
        return self._logical(e, e.left, e.right)

    def _Not(self, e: ast.Not) -> ast.Type:
        return self._logical(e, e.operand)

    def _IsNull(self, e: ast.IsNull) -> ast.Type:
        self.type_of(e.operand)
        return BOOLEAN

    def _Like(self, e: ast.Like) -> ast.Type:
        for part in (e.operand, e.pattern):
            t = self.type_of(part)
            if t is not None and t.name != "STRING":
                raise self.error(part, self.messages.not_string("LIKE", self.describe(part, t)))
        return BOOLEAN

    def _InList(self, e: ast.InList) -> ast.Type:
        operand = self.type_of(e.operand)
        for item in e.items:
            self.comparable(item, e.operand, operand, "=", item, self.type_of(item))
        return BOOLEAN

    def _Between(self, e: ast.Between) -> ast.Type:
        operand = self.type_of(e.operand)
        self.comparable(e.low, e.operand, operand, ">=", e.low, self.type_of(e.low))
        self.comparable(e.high, e.operand, operand, "<=", e.high, self.type_of(e.high))
        return BOOLEAN

    def _Case(self, e: ast.Case) -> ast.Type | None:
        operand = self.type_of(e.operand) if e.operand is not None else None
        result: ast.Type | None = None
        for condition, value in e.whens:
            when = self.type_of(condition)
            if e.operand is not None:
                self.comparable(condition, e.operand, operand, "=", condition, when)
            elif when is not None and when != BOOLEAN:
                raise self.error(condition, f"WHEN operand type should be boolean.\n"
                                            f"Type for '{render(condition)}' is {display(when)}")
            then = self.type_of(value)
            wider = widen(result, then)
            if wider is False:
                raise self.error(value, "Invalid Case expression. Type for all 'THEN' clauses should be the "
                                        f"same.\nTHEN expression 'WHEN {render(condition)} THEN {render(value)}' "
                                        f"has type: {display(then)}.\nPrevious THEN expression(s) type: "
                                        f"{display(result)}.")
            result = wider
        if e.else_ is not None:
            default = self.type_of(e.else_)
            wider = widen(result, default)
            if wider is False:
                raise self.error(e.else_, "Invalid Case expression. Type for the default clause should be the "
                                          f"same as for 'THEN' clauses.\nTHEN type: {display(result)}.\n"
                                          f"DEFAULT type: {display(default)}.")
            result = wider
        return result

    def _Cast(self, e: ast.Cast) -> ast.Type:
        self.check_type(e.type)
        source = self.type_of(e.operand)
        if reads_collection_text(e, self.messages):
            try:
                collection_text.parse(e.operand.value, e.type, collection_text.typed_word)
            except ValueError as exc:
                raise self.error(e, self.messages.bad_collection_text(e.type, str(exc), e.operand.value)) from None
            return e.type
        if (self.messages.reads_collection_text and source is not None and source.name == "STRING"
                and e.type.name in collection_text.TEXT_FORMS):  # a text column's text form, read at run time
            return e.type
        targets = CASTS.get(source.name, ()) + self.messages.extra_casts.get(source.name, ()) if source else ()
        to_text = e.type.name == "STRING" and self.messages.casts_anything_to_text
        fields_differ = source is not None and source.name == e.type.name == "STRUCT" and \
            len(source.fields) != len(e.type.fields)  # a record casts to a record type field by field
        if source is not None and source != e.type and (e.type.name not in targets or fields_differ) and not to_text:
            raise self.error(e, self.messages.bad_cast(source, e.type))
        return e.type

    def check_type(self, t: ast.Type) -> None:
        """DECIMAL(p, s) needs 1 <= p <= 38 and s <= p, also inside ARRAY, MAP and STRUCT types;
        a custom type's name (Materialize) is resolved before, so one left names no type."""
        if t.name == "NAMED":  # a name CREATE TYPE has not made (analysis resolves the others)
            raise self.error(t, f'type "{getattr(t, "type_name", "")}" does not exist')
        problem = decimal_problem(t)
        if problem:
            raise self.error(t, self.messages.bad_decimal(problem, t))
        for inner in (t.element, t.key, t.value, *(ft for _, ft in t.fields)):
            if inner is not None:
                self.check_type(inner)


def reads_collection_text(e: ast.Cast, messages: Messages) -> bool:
    """A quoted literal cast to a list, map or record, read as its text form (Materialize)."""
    return (messages.reads_collection_text and isinstance(e.operand, ast.Literal) and e.operand.kind == "STRING"
            and e.type.name in collection_text.TEXT_FORMS)


def check_expression(expr: ast.Expr, columns: Mapping[str, ast.Type], dialect: str = "ksql",
                     text: str | None = None) -> ast.Type | None:
    """The ksql type of `expr` over `columns` (None for a bare NULL), or ExpressionTypeError."""
    return Checker(columns, dialect, text).type_of(expr)


def check_type(t: ast.Type, dialect: str = "ksql", text: str | None = None) -> None:
    """A declared type (CREATE columns, CAST targets) must be one Spark can hold."""
    Checker({}, dialect, text).check_type(t)


@dataclass(frozen=True)
class SelectTypes:
    """The types `check_select` found: one per SELECT item expression (None for `*`), and the
    checker, whose `type_of` answers for any sub-expression of the statement at once."""

    items: tuple[ast.Type | None, ...]
    checker: Checker


def check_select(select: ast.Select, columns: Mapping[str, ast.Type], dialect: str = "ksql",
                 text: str | None = None, untyped: frozenset[str] = frozenset(),
                 own: frozenset[str] = frozenset(), absent: frozenset[str] = frozenset()) -> SelectTypes:
    """Type-check every expression of `select` over the visible `columns` (pseudocolumns
    included; WINDOWSTART and WINDOWEND are added for a windowed query); `own` are those
    declared in `dialect` itself, named exactly (sql/names.py). A join's columns are
    keyed `QUALIFIER.NAME`, the qualifier being each source's alias, or its name when it has
    none (a source's name still resolves to its alias). `text` is the cell the statement came
    from, for a caret under the error; `untyped` and `absent` are the dialect's functions beyond
    the signature table and the table's functions it lacks. Raises ExpressionTypeError."""
    if select.window is not None:
        columns = {**WINDOW_COLUMNS, **columns}
    refs = (select.source, *(j.source for j in select.joins))
    checker = Checker(columns, dialect, text, {r.name: r.alias for r in refs if isinstance(r, ast.SourceRef) and r.alias}, untyped, own,
                      absent)
    for join in select.joins:
        checker.check_condition(join.on, "ON")
    if select.where is not None:
        checker.check_condition(select.where, "WHERE")
    checker.clause = "GROUP BY"
    for expr in select.group_by:
        checker.type_of(expr)
    checker.clause = "PARTITION BY"
    for expr in select.partition_by:
        checker.type_of(expr)
    checker.clause = "SELECT"
    items = tuple(checker.type_of(i.expr) if isinstance(i, ast.SelectItem) else None for i in select.items)
    checker.clause = None
    if select.having is not None:
        checker.check_condition(select.having, "HAVING")
    return SelectTypes(items, checker)
