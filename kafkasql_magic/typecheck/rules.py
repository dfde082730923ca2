"""The type rules as tables: literal types, which types compare, which CASTs exist (ksqlDB's
ComparisonUtil and CastEvaluator), arithmetic result types and DECIMAL limits."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from ..sql import ast
from . import signatures
from .signatures import decimal, is_numeric, widen

BOOLEAN = ast.Type("BOOLEAN")

#: Literal kind -> its type (DECIMAL literals get theirs from their digits).
LITERAL_TYPES = {"STRING": ast.Type("STRING"), "INT": ast.Type("INT"), "BIGINT": ast.Type("BIGINT"),
                 "DOUBLE": ast.Type("DOUBLE"), "BOOLEAN": BOOLEAN, "NULL": None}

EQUALITY = ("=", "<>")
TEMPORAL = ("DATE", "TIME", "TIMESTAMP")

#: Left operand's type -> the right operand types it compares with (ksqlDB's ComparisonUtil);
#: `True` in the second place means only = and <> are allowed.
COMPARABLE: dict[str, tuple[tuple[str, ...], bool]] = {
    **{n: (tuple(signatures.NUMERIC_RANK), False) for n in signatures.NUMERIC_RANK},
    "STRING": (("STRING",) + TEMPORAL, False),
    "BOOLEAN": (("BOOLEAN",), True),
    "ARRAY": (("ARRAY",), True),
    "MAP": (("MAP",), True),
    "STRUCT": (("STRUCT",), True),
    "TIME": (("TIME", "STRING"), False),
    "DATE": (("DATE", "TIMESTAMP", "STRING"), False),
    "TIMESTAMP": (("DATE", "TIMESTAMP", "STRING"), False),
    "BYTES": (("BYTES",), False),
}

#: Source type -> the types CAST turns it into (ksqlDB's CastEvaluator), besides itself.
CASTS: dict[str, tuple[str, ...]] = {
    "BOOLEAN": ("STRING",),
    "INT": ("BIGINT", "DECIMAL", "DOUBLE", "STRING"),
    "BIGINT": ("INT", "DECIMAL", "DOUBLE", "STRING"),
    "DECIMAL": ("INT", "BIGINT", "DECIMAL", "DOUBLE", "STRING"),
    "DOUBLE": ("INT", "BIGINT", "DECIMAL", "STRING"),
    "STRING": ("BOOLEAN", "INT", "BIGINT", "DECIMAL", "DOUBLE", "TIMESTAMP", "TIME", "DATE", "BYTES"),
    "ARRAY": ("ARRAY", "STRING"),
    "MAP": ("MAP", "STRING"),
    "STRUCT": ("STRUCT", "STRING"),
    "TIMESTAMP": ("STRING", "TIME", "DATE"),
    "DATE": ("TIMESTAMP", "STRING"),
    "TIME": ("STRING",),
    "BYTES": (),
}


def _decimal_arithmetic(op: str, a: ast.Type, b: ast.Type) -> ast.Type:
    """ksqlDB's result precision and scale for DECIMAL arithmetic, capped at 38 digits."""
    p1, s1, p2, s2 = a.precision or 10, a.scale or 0, b.precision or 10, b.scale or 0
    if op in ("+", "-"):
        scale = max(s1, s2)
        return decimal(max(p1 - s1, p2 - s2) + scale + 1, scale)
    if op == "*":
        return decimal(p1 + p2 + 1, s1 + s2)
    if op == "/":
        scale = max(6, s1 + p2 + 1)
        return decimal(p1 - s1 + s2 + scale, scale)
    scale = max(s1, s2)
    return decimal(min(p1 - s1, p2 - s2) + scale, scale)


def arithmetic_type(op: str, left: ast.Type, right: ast.Type, strings: bool = True) -> ast.Type | None:
    """The type of `left op right` for two numbers (or, if `strings`, `+` of two STRINGs: ksqlDB
    concatenates them); None if not allowed."""
    if strings and op == "+" and left.name == right.name == "STRING":
        return left
    if not (is_numeric(left) and is_numeric(right)):
        return None
    if "DOUBLE" in (left.name, right.name):
        return ast.Type("DOUBLE")
    if "DECIMAL" in (left.name, right.name):
        return _decimal_arithmetic(op, signatures.as_decimal(left), signatures.as_decimal(right))
    return widen(left, right)


def decimal_literal_type(text: str) -> ast.Type | None:
    """DECIMAL(digits, digits after the point) of a literal; None beyond 38 digits."""
    try:
        value = Decimal(text)
    except InvalidOperation:
        return None
    sign, digits, exponent = value.as_tuple()
    scale = max(0, -exponent)
    precision = max(len(digits) + max(exponent, 0), scale, 1)
    if precision > signatures.MAX_DECIMAL_PRECISION:
        return None
    return ast.Type("DECIMAL", precision, scale)


def decimal_problem(t: ast.Type) -> str | None:
    """What is wrong with a DECIMAL type's precision and scale (None when nothing is)."""
    if t.name != "DECIMAL" or t.precision is None:
        return None
    if not 1 <= t.precision <= signatures.MAX_DECIMAL_PRECISION:
        return "precision must be between 1 and 38"
    if t.scale is not None and t.scale > t.precision:
        return "precision must be >= scale"
    return None
