"""SQL dialects: statement splitting, `${var}` substitution, grammars and parsers.

`parse_statement(text, dialect="materialize")` and `parse(text, dialect=...)` pick a dialect
by name ("ksql", the default, or "materialize"); every dialect builds the same AST.
"""

from __future__ import annotations

from ..errors import KStreamError
from . import ast
from .materialize_parser import MATERIALIZE
from .parser import KSQL, Dialect
from .split import (
    StatementText,
    UndefinedVariableError,
    split_statements,
    substitute_variables,
)

DIALECTS: dict[str, Dialect] = {"ksql": KSQL, "materialize": MATERIALIZE}


def get_dialect(dialect: str | Dialect = "ksql") -> Dialect:
    """The dialect named `dialect` (case-insensitive); a Dialect is returned as is."""
    if isinstance(dialect, Dialect):
        return dialect
    try:
        return DIALECTS[dialect.lower()]
    except (KeyError, AttributeError):
        raise KStreamError(
            f"Unknown SQL dialect {dialect!r}: use one of {', '.join(sorted(DIALECTS))}."
        ) from None


def parse(text: str, *, dialect: str | Dialect = "ksql") -> list[ast.Statement]:
    """Parse every statement of a cell (no variable substitution)."""
    return get_dialect(dialect).parse(text)


def parse_statement(
    text: str, *, line: int = 1, column: int = 1, dialect: str | Dialect = "ksql"
) -> ast.Statement:
    """Parse one statement, optionally ending with `;`. `line`/`column` (1-based) say where
    `text` starts in the cell: positions in the AST and in errors are the cell's."""
    return get_dialect(dialect).parse_statement(text, line=line, column=column)


def reserved_words(dialect: str | Dialect = "ksql") -> frozenset[str]:
    """Keywords of `dialect` that are never identifiers unless quoted."""
    return get_dialect(dialect).reserved_words


__all__ = [
    "DIALECTS",
    "Dialect",
    "get_dialect",
    "parse",
    "parse_statement",
    "reserved_words",
    "split_statements",
    "substitute_variables",
    "StatementText",
    "UndefinedVariableError",
]
