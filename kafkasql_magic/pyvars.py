"""Python variables in SQL: `{name}` and `:name` become SQL literals of the variable's value.

A value is written as a literal, never spliced in as SQL text: a string becomes one quoted
string (quotes doubled, the only escape ksqlDB and Materialize strings have), numbers and
booleans their literal, None NULL; any other type is refused. So a value cannot add SQL.
Quoted strings, quoted identifiers and comments are left alone, as are ksqlDB's `${name}`
(DEFINE), Materialize's `::type` casts and `:=`.
"""

from __future__ import annotations

import decimal
import math
import re
from typing import Any, Mapping

from .errors import KStreamError

_PLACEHOLDER = re.compile(r"\{([A-Za-z_]\w*)\}|:([A-Za-z_]\w*)")
# Stretches of SQL that are never scanned for placeholders.
_OPAQUE = re.compile(r"'(?:[^']|'')*'?|\"(?:[^\"]|\"\")*\"?|`[^`]*`?|--[^\n]*|/\*.*?(?:\*/|$)", re.S)


class VariableError(KStreamError):
    """A placeholder names no Python variable, or one whose type has no SQL literal."""


def _literal(value: Any) -> str | None:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else None
    if isinstance(value, decimal.Decimal):
        return str(value) if value.is_finite() else None
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return None


def _where(text: str, pos: int) -> str:
    line = text.count("\n", 0, pos) + 1
    column = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return f"line {line}:{column}"


def substitute(text: str, namespace: Mapping[str, Any]) -> str:
    """`text` with every `{name}` / `:name` outside strings and comments replaced by a literal."""
    out, pos = [], 0
    for opaque in [*_OPAQUE.finditer(text), None]:
        end = opaque.start() if opaque else len(text)
        out.append(_substitute_plain(text, pos, end, namespace))
        if opaque:
            out.append(opaque.group())
            pos = opaque.end()
    return "".join(out)


def _substitute_plain(text: str, start: int, end: int, namespace: Mapping[str, Any]) -> str:
    out, pos = [], start
    for match in _PLACEHOLDER.finditer(text, start, end):
        before = text[match.start() - 1] if match.start() > 0 else ""
        if before == "$" or (match.group(2) and (before == ":" or before.isalnum() or before == "_")):
            continue  # ${name} (DEFINE), x::type, a:b
        name = match.group(1) or match.group(2)
        if name not in namespace:
            raise VariableError(f"No Python variable named {name!r} for {match.group()} at {_where(text, match.start())}")
        literal = _literal(namespace[name])
        if literal is None:
            raise VariableError(
                f"Python variable {name!r} at {_where(text, match.start())} is a {type(namespace[name]).__name__}: "
                "only str, int, float, Decimal, bool and None can be used in SQL")
        out.append(text[pos:match.start()])
        out.append(literal)
        pos = match.end()
    out.append(text[pos:end])
    return "".join(out)
