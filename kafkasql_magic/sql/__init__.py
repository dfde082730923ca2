"""The ksql dialect: statement splitting, `${var}` substitution, grammar and parser."""

from .parser import parse, parse_statement, reserved_words
from .split import (
    StatementText,
    UndefinedVariableError,
    split_statements,
    substitute_variables,
)

__all__ = [
    "parse",
    "parse_statement",
    "reserved_words",
    "split_statements",
    "substitute_variables",
    "StatementText",
    "UndefinedVariableError",
]
