"""AST -> ksql text, for error messages, EXPLAIN and SHOW QUERIES."""

from __future__ import annotations

from . import ast, ast_materialize
from .typetext import display


def _ident(name: str) -> str:
    return name if name.isidentifier() and name.upper() == name else f"`{name}`"


def _literal(e: ast.Literal) -> str:
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


def _call(e) -> str:
    return f"{e.name}({'*' if e.star else ', '.join(render(a) for a in e.args)})"


#: Constructors parsed as calls (ARRAY[...], MAP(k := v, ...)), rendered in ksql's syntax.
CONSTRUCTORS = {
    "ARRAY": lambda e: f"ARRAY[{', '.join(render(a) for a in e.args)}]",
    "MAP": lambda e: f"MAP({', '.join(f'{render(k)}:={render(v)}' for k, v in zip(e.args[::2], e.args[1::2]))})"
    if len(e.args) % 2 == 0 else _call(e),
}


RENDERERS = {
    ast.Literal: _literal,
    ast.ColumnRef: lambda e: (f"{_ident(e.qualifier)}." if e.qualifier else "") + _ident(e.name),
    ast.Dereference: lambda e: f"{render(e.base)}->{_ident(e.field)}",
    ast.Subscript: lambda e: f"{render(e.base)}[{render(e.index)}]",
    ast_materialize.MapLookup: lambda e: f"{render(e.base)} -> {render(e.key)}",
    ast.FunctionCall: lambda e: CONSTRUCTORS.get(e.name, _call)(e),
    ast.StructConstructor: lambda e: f"STRUCT({', '.join(f'{_ident(n)}:={render(v)}' for n, v in e.fields)})",
    ast.BinaryOp: lambda e: f"({render(e.left)} {e.op} {render(e.right)})",
    ast.UnaryOp: lambda e: f"{e.op}{render(e.operand)}",
    ast.And: lambda e: f"({render(e.left)} AND {render(e.right)})",
    ast.Or: lambda e: f"({render(e.left)} OR {render(e.right)})",
    ast.Not: lambda e: f"(NOT {render(e.operand)})",
    ast.IsNull: lambda e: f"({render(e.operand)} IS {'NOT ' if e.negated else ''}NULL)",
    ast.Like: lambda e: f"({render(e.operand)} {'NOT ' if e.negated else ''}LIKE {render(e.pattern)})",
    ast.InList: lambda e: f"({render(e.operand)} {'NOT ' if e.negated else ''}IN ({', '.join(render(i) for i in e.items)}))",
    ast.Between: lambda e: f"({render(e.operand)} {'NOT ' if e.negated else ''}BETWEEN {render(e.low)} AND {render(e.high)})",
    ast.Case: lambda e: "CASE" + (f" {render(e.operand)}" if e.operand else "")
    + "".join(f" WHEN {render(c)} THEN {render(v)}" for c, v in e.whens)
    + (f" ELSE {render(e.else_)}" if e.else_ is not None else "") + " END",
    ast.Lambda: lambda e: (_ident(e.params[0]) if len(e.params) == 1 else f"({', '.join(_ident(p) for p in e.params)})")
    + f" => {render(e.body)}",
    ast.Cast: lambda e: f"CAST({render(e.operand)} AS {type_text(e.type)})",
    ast_materialize.OrderedCall: lambda e: _call(e)[:-1] + " ORDER BY " + ", ".join(
        render(k.expr) + (" DESC" if k.descending else "") + (" NULLS FIRST" if k.nulls_first else " NULLS LAST")
        for k in e.order_by) + ")",
}


def render(e: ast.Expr) -> str:
    return RENDERERS[type(e)](e)
