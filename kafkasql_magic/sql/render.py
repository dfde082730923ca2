"""AST -> ksql text, for error messages, EXPLAIN and SHOW QUERIES.

`ExpressionWriter` holds the rules as a table keyed by AST class (sqlglot's generator style);
every entry writes its children through the writer it is given, so a dialect's writer (in
render_statements.py) changes names, types and a few forms and inherits the rest."""

from __future__ import annotations

from . import ast, ast_materialize
from .typetext import display


def _literal(r, e: ast.Literal) -> str:
    if e.kind == "STRING":
        return "'" + str(e.value).replace("'", "''") + "'"
    if e.kind == "NULL":
        return "NULL"
    if e.kind == "BOOLEAN":
        return "true" if e.value else "false"
    if e.kind == "DOUBLE":  # ksql reads a number as DOUBLE only with an exponent
        text = repr(float(e.value)).upper()
        return text if "E" in text else text + "E0"
    return str(e.value)


def type_text(t: ast.Type) -> str:
    return display(t)


def _call(r, e) -> str:
    return f"{r.function(e.name)}({'*' if e.star else ', '.join(r(a) for a in e.args)})"


def _not(e) -> str:
    return "NOT " if e.negated else ""


def _like(r, e) -> str:
    escape = " ESCAPE " + _literal(r, ast.Literal(e.escape, "STRING")) if e.escape is not None else ""
    return f"({r(e.operand)} {_not(e)}LIKE {r(e.pattern)}{escape})"


#: Constructors parsed as calls (ARRAY[...], MAP(k := v, ...)), rendered in ksql's syntax.
CONSTRUCTORS = {
    "ARRAY": lambda r, e: f"ARRAY[{', '.join(r(a) for a in e.args)}]",
    "MAP": lambda r, e: f"MAP({', '.join(f'{r(k)}:={r(v)}' for k, v in zip(e.args[::2], e.args[1::2]))})"
    if len(e.args) % 2 == 0 else _call(r, e),
}


def _unary(r, e) -> str:
    """`-(-a)`, not `--a`: two minus signs in a row start a comment."""
    operand = r(e.operand)
    return f"{e.op}({operand})" if operand[:1] in "-+" else f"{e.op}{operand}"


def _sort_key(r, k) -> str:
    return r(k.expr) + (" DESC" if k.descending else "") + (" NULLS FIRST" if k.nulls_first else " NULLS LAST")


RENDERERS = {
    ast.Literal: _literal,
    ast.ColumnRef: lambda r, e: (f"{r.ident(e.qualifier)}." if e.qualifier else "") + r.ident(e.name),
    ast.Dereference: lambda r, e: f"{r(e.base)}->{r.ident(e.field)}",
    ast.Subscript: lambda r, e: f"{r(e.base)}[{r(e.index)}]",
    ast_materialize.MapLookup: lambda r, e: f"{r(e.base)} {e.op} {r(e.key)}",
    ast_materialize.MapLiteral: lambda r, e: "MAP[" + ", ".join(f"{r(k)} => {r(v)}" for k, v in e.entries) + "]",
    ast_materialize.JsonPath: lambda r, e: f"{r(e.base)} {e.op} {r(e.path)}",
    ast.FunctionCall: lambda r, e: CONSTRUCTORS.get(e.name, _call)(r, e),
    ast.StructConstructor: lambda r, e: f"STRUCT({', '.join(f'{r.ident(n)}:={r(v)}' for n, v in e.fields)})",
    ast.BinaryOp: lambda r, e: f"({r(e.left)} {e.op} {r(e.right)})",
    ast.UnaryOp: _unary,
    ast.And: lambda r, e: f"({r(e.left)} AND {r(e.right)})",
    ast.Or: lambda r, e: f"({r(e.left)} OR {r(e.right)})",
    ast.Not: lambda r, e: f"(NOT {r(e.operand)})",
    ast.IsNull: lambda r, e: f"({r(e.operand)} IS {_not(e)}NULL)",
    ast.Like: _like,
    ast.InList: lambda r, e: f"({r(e.operand)} {_not(e)}IN ({', '.join(r(i) for i in e.items)}))",
    ast.Between: lambda r, e: f"({r(e.operand)} {_not(e)}BETWEEN {r(e.low)} AND {r(e.high)})",
    ast.Case: lambda r, e: "CASE" + (f" {r(e.operand)}" if e.operand else "")
    + "".join(f" WHEN {r(c)} THEN {r(v)}" for c, v in e.whens)
    + (f" ELSE {r(e.else_)}" if e.else_ is not None else "") + " END",
    ast.Lambda: lambda r, e: (r.ident(e.params[0]) if len(e.params) == 1
                              else f"({', '.join(r.ident(p) for p in e.params)})") + f" => {r(e.body)}",
    ast.Cast: lambda r, e: f"CAST({r(e.operand)} AS {r.type(e.type)})",
    ast_materialize.OrderedCall: lambda r, e: _call(r, e)[:-1] + " ORDER BY "
    + ", ".join(r.sort_key(k) for k in e.order_by) + ")",
}


class ExpressionWriter:
    """Expressions as ksql text: `writer(expr)`. Subclasses change the hooks and `table`."""

    table = RENDERERS

    def __call__(self, e: ast.Expr) -> str:
        return self.table[type(e)](self, e)

    def ident(self, name: str) -> str:
        return name if name.isidentifier() and name.upper() == name else f"`{name}`"

    def function(self, name: str) -> str:
        return name

    def type(self, t: ast.Type) -> str:
        return type_text(t)

    def sort_key(self, key) -> str:
        return _sort_key(self, key)


KSQL_EXPRESSIONS = ExpressionWriter()


def render(e: ast.Expr) -> str:
    return KSQL_EXPRESSIONS(e)
