"""The error hierarchy.

User errors (`KStreamError` and subclasses) carry a ksqlDB-style message and are shown
without a traceback; anything else is an internal failure and keeps its traceback.
"""

from __future__ import annotations


class KStreamError(Exception):
    """A user error: bad SQL, an unknown stream, a broker that does not answer.

    Its message never carries a secret: credentials in URLs and known secret values are
    masked when the error is made (see `kafkasql_magic.redact`)."""

    def __init__(self, *args):
        from .redact import text

        super().__init__(*(text(a) if isinstance(a, str) else a for a in args))


class SqlSyntaxError(KStreamError):
    """SQL that does not parse; the message names line and column and shows a caret.

    With a `headline` (ksqlDB's "Syntax Error") the first line is `line L:C: <headline>` and
    the reason follows on its own line, as ksqlDB words it."""

    def __init__(self, message: str, line: int, column: int, excerpt: str = "", headline: str | None = None):
        self.reason = message
        self.line = line
        self.column = column
        self.excerpt = excerpt
        self.headline = headline
        text = f"line {line}:{column}: {headline}\n{message}" if headline else f"line {line}:{column}: {message}"
        if excerpt:
            text += "\n" + excerpt
        super().__init__(text)

    def headed(self, headline: str | None) -> "SqlSyntaxError":
        """This error under `headline` (itself when there is none or it has one)."""
        if headline is None or self.headline is not None:
            return self
        return type(self)(self.reason, self.line, self.column, self.excerpt, headline)


class StatementError(KStreamError):
    """A statement that parses but cannot run (unknown source, bad property, bad schema)."""


class KafkaError(KStreamError):
    """The broker is unreachable, or a topic is missing or was deleted."""


class BrokerUnreachable(KafkaError):
    """The broker did not answer in time: a running query waits for it (up to its outage limit)."""


class QueryTimeout(KStreamError):
    """A bounded push query did not see its LIMIT rows in time; the rows so far are attached."""

    def __init__(self, message: str, rows=None):
        self.rows = rows
        super().__init__(message)


class PlacedError(StatementError):
    """A mistake at a place in the statement; the message names line and column and, when the
    cell is known, shows it with a caret."""

    def __init__(self, message: str, line: int, column: int, excerpt: str = ""):
        self.reason = message
        self.line = line
        self.column = column
        self.excerpt = excerpt
        text = f"line {line}:{column}: {message}" if line else message
        if excerpt:
            text += "\n" + excerpt
        super().__init__(text)


class ExpressionTypeError(PlacedError):
    """An expression whose types do not fit (a STRING in WHERE, ABS('x'), a bad CAST)."""
