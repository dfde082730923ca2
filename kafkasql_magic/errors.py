"""The error hierarchy.

User errors (`KStreamError` and subclasses) carry a ksqlDB-style message and are shown
without a traceback; anything else is an internal failure and keeps its traceback.
"""

from __future__ import annotations


class KStreamError(Exception):
    """A user error: bad SQL, an unknown stream, a broker that does not answer."""


class SqlSyntaxError(KStreamError):
    """SQL that does not parse; the message names line and column and shows a caret."""

    def __init__(self, message: str, line: int, column: int, excerpt: str = ""):
        self.reason = message
        self.line = line
        self.column = column
        self.excerpt = excerpt
        text = f"line {line}:{column}: {message}"
        if excerpt:
            text += "\n" + excerpt
        super().__init__(text)


class StatementError(KStreamError):
    """A statement that parses but cannot run (unknown source, bad property, bad schema)."""


class KafkaError(KStreamError):
    """The broker is unreachable, or a topic is missing or was deleted."""


class QueryTimeout(KStreamError):
    """A bounded push query did not see its LIMIT rows in time; the rows so far are attached."""

    def __init__(self, message: str, rows=None):
        self.rows = rows
        super().__init__(message)


class ExpressionTypeError(StatementError):
    """An expression whose types do not fit (a STRING in WHERE, ABS('x'), a bad CAST); the
    message names line and column and, when the cell is known, shows it with a caret."""

    def __init__(self, message: str, line: int, column: int, excerpt: str = ""):
        self.reason = message
        self.line = line
        self.column = column
        self.excerpt = excerpt
        text = f"line {line}:{column}: {message}" if line else message
        if excerpt:
            text += "\n" + excerpt
        super().__init__(text)
