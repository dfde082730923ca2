"""The error hierarchy.

User errors (`KStreamError` and subclasses) carry a ksqlDB-style message and are shown
without a traceback; anything else is an internal failure and keeps its traceback.
"""

from __future__ import annotations

import difflib
import re
import textwrap

#: Message lines longer than this are wrapped at word boundaries when shown.
WIDTH = 100
_CARET = re.compile(r"^\s*\^+\s*$")


class KStreamError(Exception):
    """A user error: bad SQL, an unknown stream, a broker that does not answer.

    Its message never carries a secret: credentials in URLs and known secret values are
    masked when the error is made (see `kafkasql_magic.redact`). `hint` (e.g. names close to
    an unknown one) is shown under the message, never part of it: the message stays ksqlDB's."""

    hint: str | None = None
    #: (n, count) when the error is statement n's of several: what ran before it stays done
    statement: tuple[int, int] | None = None

    def __init__(self, *args):
        from .redact import text

        super().__init__(*(text(a) if isinstance(a, str) else a for a in args))

    def hinted(self, hint: str | None) -> "KStreamError":
        self.hint = hint
        return self

    def _render_traceback_(self) -> list[str]:
        """What IPython shows in place of a traceback (its hook for exceptions that render
        themselves): the class, the message and the hint, long lines wrapped at word boundaries."""
        notes = [note for note in (self.hint, statement_note(*self.statement) if self.statement else None) if note]
        return shown_lines("\n".join([f"{type(self).__name__}: {self}", *notes]))


def statement_note(index: int, count: int) -> str:
    """Which statement of a cell failed, and what that means for the others."""
    def span(first: int, last: int) -> str:
        return f"statement {first}" if first == last else f"statements {first}-{last}"

    note = f"Statement {index} of {count} failed"
    if index > 1:
        note += f"; {span(1, index - 1)} before it ran (what {'it' if index == 2 else 'they'} did stays done)"
    if index < count:
        note += f"; {span(index + 1, count)} did not run"
    return note + "."


def shown_lines(text: str, width: int = WIDTH) -> list[str]:
    """`text` as lines of at most `width` characters, broken between words; a line that a caret
    line points into, and the caret line itself, are kept whole so the caret stays under its column."""
    lines = text.split("\n")
    shown: list[str] = []
    for i, line in enumerate(lines):
        pointed = i + 1 < len(lines) and _CARET.match(lines[i + 1])
        if pointed or _CARET.match(line) or len(line) <= width:
            shown.append(line)
        else:
            indent = line[: len(line) - len(line.lstrip())]
            shown += textwrap.wrap(line, width, subsequent_indent=indent + "  ", break_long_words=False,
                                   break_on_hyphens=False)
    return shown


def did_you_mean(name: str, known) -> str | None:
    """"Did you mean ...?" with the known names closest to `name` (ignoring case), or None."""
    by_folded: dict[str, str] = {}
    for k in known:
        by_folded.setdefault(k.casefold(), k)
    close = difflib.get_close_matches(name.casefold(), list(by_folded), n=3, cutoff=0.6)
    if not close:
        return None
    names = [by_folded[c] for c in close]
    return "Did you mean " + (f"{', '.join(names[:-1])} or " if len(names) > 1 else "") + names[-1] + "?"


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


class SparkExited(KStreamError):
    """Spark's JVM exited while a statement ran: its message says why (`spark_exit.explain`)."""


class QueryStopped(KeyboardInterrupt):
    """The notebook's Interrupt (or Ctrl-C) ended a query the caller was waiting for, and the query
    stopped cleanly. Still a `KeyboardInterrupt`, so a script ends as before; a notebook shows
    its one line instead of a traceback through the package."""

    def __init__(self, message: str = "Query stopped."):
        super().__init__(message)

    def _render_traceback_(self) -> list[str]:
        return [str(self)]


class PlacedError(StatementError):
    """A mistake at a place in the statement; the message names line and column and, when the
    cell is known, shows it with a caret."""

    #: How a message says where: as ksqlDB's parser does (`line 1:8: `), or as its analyzer does
    #: an unknown or ambiguous column (`Line: 1, Col: 8: `).
    LOCATIONS = {"parser": "line {line}:{column}: ", "analyzer": "Line: {line}, Col: {column}: "}

    def __init__(self, message: str, line: int, column: int, excerpt: str = "", location: str = "parser"):
        self.reason = message
        self.line = line
        self.column = column
        self.excerpt = excerpt
        self.location = location
        text = self.LOCATIONS[location].format(line=line, column=column) + message if line else message
        if excerpt:
            text += "\n" + excerpt
        super().__init__(text)


class ExpressionTypeError(PlacedError):
    """An expression whose types do not fit (a STRING in WHERE, ABS('x'), a bad CAST)."""
