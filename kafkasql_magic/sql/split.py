"""Cell text -> statements, and ksqlDB `DEFINE` variable substitution.

Both work on a light scan of the text that knows only what can hide a `;` or a `${name}`:
'string literals' ('' escapes a quote), `back-quoted` and "double-quoted" identifiers,
-- line comments and /* block comments */.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from ..errors import SqlSyntaxError, StatementError

__all__ = [
    "StatementText",
    "UndefinedVariableError",
    "split_statements",
    "substitute_variables",
    "excerpt",
]


@dataclass(frozen=True)
class StatementText:
    """One statement of a cell (without its `;`) and where it starts in the cell (1-based)."""

    text: str
    line: int
    column: int


class UndefinedVariableError(SqlSyntaxError, StatementError):
    """`${name}` without a `DEFINE name = '...'`; positioned like a syntax error."""


_PIECES = re.compile(
    r"""
      (?P<string>'[^']*(?:''[^']*)*')
    | (?P<backquoted>`[^`]*(?:``[^`]*)*`)
    | (?P<quoted>"[^"]*(?:""[^"]*)*")
    | (?P<line_comment>--[^\n]*)
    | (?P<block_comment>/\*(?:[^*]|\*+[^*/])*\*+/)
    | (?P<semicolon>;)
    | (?P<space>\s+)
    | (?P<unterminated>['`"]|/\*)
    | (?P<word>[^\s'`"\-/;]+|[-/])
    """,
    re.VERBOSE,
)
_UNTERMINATED = {
    "'": "unterminated string literal",
    "`": "unterminated quoted identifier",
    '"': "unterminated quoted identifier",
    "/*": "unterminated comment",
}
_COMMENTS = ("line_comment", "block_comment")
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_@]*)\}")
_DEFINING = ("DEFINE", "UNDEFINE")


class _Positions:
    """Offsets in a text -> 1-based (line, column), shifted by where the text starts."""

    def __init__(self, text: str, line: int = 1, column: int = 1):
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.line = line
        self.column = column

    def __call__(self, offset: int) -> tuple[int, int]:
        index = bisect.bisect_right(self.starts, offset) - 1
        column = offset - self.starts[index] + 1
        if index == 0:
            column += self.column - 1
        return self.line + index, column


def excerpt(text: str, line: int, column: int, width: int = 100) -> str:
    """Line `line` of `text` with a caret under `column` (both 1-based)."""
    lines = text.split("\n")
    if not 1 <= line <= len(lines):
        return ""
    source = lines[line - 1].rstrip("\r")
    start = 0
    if len(source) > width:  # keep a window around the column
        start = max(0, min(column - 1 - width // 2, len(source) - width))
        source = source[start : start + width]
    prefix = source[: column - 1 - start]
    caret = "".join("\t" if c == "\t" else " " for c in prefix) + "^"
    return f"{source}\n{caret}"


def _pieces(text: str, line: int = 1, column: int = 1):
    """Yield (kind, match) covering `text`; raise SqlSyntaxError on an unterminated piece."""
    for match in _PIECES.finditer(text):
        kind = match.lastgroup
        if kind == "unterminated":
            where = _Positions(text, line, column)(match.start())
            padded = "\n" * (line - 1) + " " * (column - 1) + text
            raise SqlSyntaxError(_UNTERMINATED[match.group()], *where, excerpt(padded, *where))
        yield kind, match


def check_terminated(text: str, line: int = 1, column: int = 1) -> None:
    """Raise SqlSyntaxError if a string, quoted identifier or comment is left open."""
    for _ in _pieces(text, line, column):
        pass


def split_statements(text: str) -> list[StatementText]:
    """Split a cell on `;` outside strings, quoted identifiers and comments.

    Statements holding only whitespace and comments are dropped; the last statement may
    lack its `;`. Each statement starts at its first token (leading comments skipped).
    """
    statements: list[StatementText] = []
    position = _Positions(text)
    start = end = None  # offsets of the first and past the last token of the statement
    for kind, match in _pieces(text):
        if kind == "semicolon":
            if start is not None:
                statements.append(StatementText(text[start:end], *position(start)))
            start = end = None
        elif kind != "space":
            if start is None and kind not in _COMMENTS:
                start = match.start()
            if start is not None:
                end = match.end()
    if start is not None:
        statements.append(StatementText(text[start:end], *position(start)))
    return statements


def substitute_variables(
    text: str, variables: dict[str, str], *, line: int = 1, column: int = 1
) -> str:
    """Replace every `${name}` with its value (names are case-insensitive), as ksqlDB's
    `DEFINE` does: in strings and identifiers alike, but not in comments nor in the name a
    DEFINE or UNDEFINE statement defines. `line`/`column` say where `text` starts in the
    cell, for the position of an UndefinedVariableError."""
    if "${" not in text:
        return text
    values = {name.lower(): value for name, value in variables.items()}
    out: list[str] = []
    first_word = None  # the statement's first word, upper-cased
    skip_next_word = False  # the name after DEFINE / UNDEFINE
    for kind, match in _pieces(text, line, column):
        piece = match.group()
        if kind == "semicolon":
            first_word, skip_next_word = None, False
        elif kind in _COMMENTS or kind == "space":
            pass
        elif first_word is None:
            first_word = piece.upper()
            skip_next_word = first_word in _DEFINING
            if not skip_next_word:
                piece = _substitute(piece, values, text, match.start(), line, column)
        elif skip_next_word:
            skip_next_word = False
            name = re.match(r"\$\{[^}]*\}|[^=\s]*", piece).end()
            piece = piece[:name] + _substitute(piece[name:], values, text, match.start() + name, line, column)
        else:
            piece = _substitute(piece, values, text, match.start(), line, column)
        out.append(piece)
    return "".join(out)


def _substitute(piece: str, values: dict[str, str], text: str, offset: int, line: int, column: int) -> str:
    def value(match: re.Match) -> str:
        name = match.group(1)
        try:
            return values[name.lower()]
        except KeyError:
            where = _Positions(text, line, column)(offset + match.start())
            padded = "\n" * (line - 1) + " " * (column - 1) + text
            raise UndefinedVariableError(
                f"Undefined variable: {name}", *where, excerpt(padded, *where)
            ) from None

    return _VARIABLE.sub(value, piece)
