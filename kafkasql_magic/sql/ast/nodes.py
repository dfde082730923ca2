"""The AST's base node, types and expressions: frozen dataclasses that only describe.

Every node carries the line and column (1-based) where it starts in the cell, so the
planner can point at the offending token. Positions do not take part in equality, so
tests can compare trees built by hand with parsed ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any


@dataclass(frozen=True)
class Node:
    line: int = field(default=0, compare=False, repr=False, kw_only=True)
    column: int = field(default=0, compare=False, repr=False, kw_only=True)


# ---------------------------------------------------------------- types
@dataclass(frozen=True)
class Type(Node):
    """A ksql type. `name` is canonical upper case: BOOLEAN, INT, BIGINT, DOUBLE, DECIMAL,
    STRING, BYTES, DATE, TIME, TIMESTAMP, ARRAY, MAP, STRUCT (INTEGER -> INT, VARCHAR -> STRING)."""

    name: str
    precision: int | None = None  # DECIMAL(p, s)
    scale: int | None = None
    element: Type | None = None  # ARRAY<element>
    key: Type | None = None  # MAP<key, value>
    value: Type | None = None
    fields: tuple[tuple[str, Type], ...] = ()  # STRUCT<name type, ...>


# ---------------------------------------------------------------- expressions
@dataclass(frozen=True)
class Expr(Node):
    pass


@dataclass(frozen=True)
class Literal(Expr):
    """`kind` is STRING, INT, BIGINT, DOUBLE, DECIMAL, BOOLEAN or NULL. Numbers keep the
    Python value (int, float; DECIMAL keeps the literal text in `value` as str)."""

    value: Any
    kind: str


@dataclass(frozen=True)
class ColumnRef(Expr):
    """A column, optionally qualified by a source name or alias (`s.col`)."""

    name: str
    qualifier: str | None = None


@dataclass(frozen=True)
class Dereference(Expr):
    """Struct field access: `base->field`."""

    base: Expr
    field: str


@dataclass(frozen=True)
class Subscript(Expr):
    """`base[index]`: 1-based for arrays (negative counts from the end), key for maps."""

    base: Expr
    index: Expr


@dataclass(frozen=True)
class FunctionCall(Expr):
    """`name` upper-cased; `star` for COUNT(*)."""

    name: str
    args: tuple[Expr, ...] = ()
    star: bool = False


@dataclass(frozen=True)
class BinaryOp(Expr):
    """Arithmetic (+ - * / %), string concatenation (||) and comparisons (= <> < <= > >=);
    `!=` is normalised to `<>`."""

    op: str
    left: Expr
    right: Expr


@dataclass(frozen=True)
class UnaryOp(Expr):
    """`-x` and `+x`."""

    op: str
    operand: Expr


@dataclass(frozen=True)
class And(Expr):
    left: Expr
    right: Expr


@dataclass(frozen=True)
class Or(Expr):
    left: Expr
    right: Expr


@dataclass(frozen=True)
class Not(Expr):
    operand: Expr


@dataclass(frozen=True)
class IsNull(Expr):
    operand: Expr
    negated: bool = False


@dataclass(frozen=True)
class Like(Expr):
    operand: Expr
    pattern: Expr
    negated: bool = False
    escape: str | None = None


@dataclass(frozen=True)
class InList(Expr):
    operand: Expr
    items: tuple[Expr, ...]
    negated: bool = False


@dataclass(frozen=True)
class Between(Expr):
    operand: Expr
    low: Expr
    high: Expr
    negated: bool = False


@dataclass(frozen=True)
class Case(Expr):
    """Searched CASE (`operand` None) or simple CASE (`CASE x WHEN 1 THEN ...`)."""

    whens: tuple[tuple[Expr, Expr], ...]
    else_: Expr | None = None
    operand: Expr | None = None


@dataclass(frozen=True)
class Cast(Expr):
    operand: Expr
    type: Type


# ---------------------------------------------------------------- select
@dataclass(frozen=True)
class StructConstructor(Expr):
    """ksql's STRUCT(name := value, ...)."""

    fields: tuple[tuple[str, Expr], ...]


@dataclass(frozen=True)
class Lambda(Expr):
    """ksqlDB's `x => body` / `(x, y) => body`: only an argument of TRANSFORM, FILTER or REDUCE.
    The body names its parameters as unqualified columns; they shadow nothing (a parameter
    may not be named like a column)."""

    params: tuple[str, ...]
    body: Expr


def children(node) -> list[Node]:
    """The nodes directly under `node`, in field order (CASE's (condition, result) pairs flattened)."""
    found = []
    for value in vars(node).values():
        for item in value if isinstance(value, tuple) else (value,):
            found += [p for p in (item if isinstance(item, tuple) else (item,)) if isinstance(p, Node)]
    return found


def walk(node):
    """Every AST node under `node` (itself included), depth first."""
    yield node
    for child in children(node):
        yield from walk(child)


def substitute(node, table: dict):
    """`node` with every sub-expression found in `table` replaced by its entry."""
    if isinstance(node, Expr) and node in table:
        return table[node]
    if isinstance(node, tuple):
        return tuple(substitute(item, table) for item in node)
    if not isinstance(node, Node):
        return node
    return replace(node, **{f.name: substitute(getattr(node, f.name), table) for f in fields(node)
                            if f.name not in ("line", "column")})
