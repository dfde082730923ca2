"""What the AST builders share: positions, unquoting, durations, and the error a rule raises
for a value the grammar accepts but the language does not."""

from __future__ import annotations

from lark import Token

from . import ast


class Invalid(Exception):
    """(message, line, column): a token the grammar accepts but ksql does not (big numbers)."""


_TYPE_NAMES = {"INTEGER": "INT", "VARCHAR": "STRING"}
_INT32 = range(-(2**31), 2**31)
_INT64 = range(-(2**63), 2**63)

#: WITHIN units (ksqlDB accepts singular and plural) -> milliseconds.
TIME_UNITS_MS = {"MILLISECONDS": 1, "SECONDS": 1000, "MINUTES": 60_000, "HOURS": 3_600_000, "DAYS": 86_400_000}
#: The longest WITHIN or window duration: record times plus or minus it must stay within
#: BIGINT milliseconds.
MAX_DURATION_DAYS = 36_500


def _unquote(token: str) -> str:
    quote = token[0]
    return token[1:-1].replace(quote * 2, quote)


def _name(token: Token) -> str:
    """Unquoted identifiers are upper-cased; quoted ones keep their case."""
    return _unquote(token) if token[0] in "`\"" else token.upper()


def _pos(meta) -> dict:
    return {"line": meta.line, "column": meta.column} if not meta.empty else {}


def _integer(value: int, meta) -> ast.Literal:
    if value not in _INT64:
        raise Invalid(f"Invalid numeric literal: {value}", meta.line, meta.column)
    return ast.Literal(value, "INT" if value in _INT32 else "BIGINT", **_pos(meta))


def _positive(ms: int, what: str, meta) -> int:
    """Window durations must be at least a millisecond."""
    if ms <= 0:
        raise Invalid(f"Window {what} must be a positive duration", meta.line, meta.column)
    return ms


def _assignments(entries, meta) -> bool:
    """Whether MAP(...) / STRUCT(...) entries are `k := v` (a constructor) or plain arguments."""
    assigned = {value is not None for _, value in entries}
    if len(assigned) > 1:
        raise Invalid("Every entry of a constructor needs `:=` (MAP(k := v, ...), STRUCT(f := v, ...)).",
                      meta.line, meta.column)
    return assigned == {True}


def _flag(self, meta, *children):
    return True
