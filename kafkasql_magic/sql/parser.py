"""ksql text -> AST, with the grammar in ksql.lark (LALR, built once per process).

`parse_statement` parses one statement; `parse` splits a cell and parses each statement.
Errors are SqlSyntaxError with the line and column in the original cell and a caret excerpt.
"""

from __future__ import annotations

import functools
from pathlib import Path

from lark import Lark, Token
from lark.exceptions import UnexpectedCharacters, UnexpectedToken, VisitError
from lark.lexer import PatternStr

from . import ast
from ..errors import SqlSyntaxError
from .builder import BUILDER, Invalid
from .split import check_terminated, excerpt, split_statements

__all__ = ["parse", "parse_statement", "reserved_words", "FUTURE_RESERVED"]

GRAMMAR = Path(__file__).with_name("ksql.lark")

# Reserved although no statement uses them yet, so that adding joins and windows later
# does not take identifiers away from anyone.
FUTURE_RESERVED = frozenset(
    "JOIN LEFT RIGHT INNER FULL OUTER ON WITHIN WINDOW DISTINCT".split()
)

_KEYWORDS: dict[str, str] = {}  # upper-cased word -> terminal name; filled by _parser()


def _retype_keyword(token: Token) -> Token:
    token.type = _KEYWORDS.get(token.upper(), "NAME")
    return token


@functools.cache
def _parser() -> Lark:
    lark = Lark(
        GRAMMAR.read_text(),
        parser="lalr",
        lexer="basic",
        propagate_positions=True,
        maybe_placeholders=True,
        lexer_callbacks={"NAME": _retype_keyword},
    )
    _KEYWORDS.update(
        {t.pattern.value: t.name for t in lark.terminals
         if isinstance(t.pattern, PatternStr) and t.pattern.value.isalpha()}
    )
    _KEYWORDS.update({word: word for word in FUTURE_RESERVED})
    return lark


def _terminals_of(lark: Lark, rule: str) -> frozenset[str]:
    """Terminals a one-token rule accepts, looking into inlined (`_name`) rules."""
    found = set()
    for r in lark.rules:
        if r.origin.name == rule:
            for symbol in r.expansion:
                if symbol.is_term:
                    found.add(symbol.name)
                elif symbol.name.startswith("_"):
                    found |= _terminals_of(lark, symbol.name)
    return frozenset(found)


def _identifier_terminals(lark: Lark) -> frozenset[str]:
    return _terminals_of(lark, "identifier")


@functools.cache
def _token_sets() -> dict:
    """Terminal names grouped as error messages name them."""
    lark = _parser()
    by_value = {t.pattern.value: t.name for t in lark.terminals if isinstance(t.pattern, PatternStr)}
    names = lambda values: frozenset(by_value[v] for v in values.split() if v in by_value)  # noqa: E731
    identifiers = _identifier_terminals(lark)
    names_rules = ("identifier", "alias_name", "describe_name", "query_id", "variable_name")
    literals = frozenset({"STRING_LITERAL", "INTEGER_VALUE", "DECIMAL_VALUE", "FLOAT_VALUE"})
    return {
        "identifier": identifiers,
        # the token sets of the rules that take one name, largest first
        "names": sorted({_terminals_of(lark, r) for r in names_rules}, key=len, reverse=True),
        "expression": identifiers | literals | names("( - + NOT CASE CAST TRUE FALSE NULL"),
        "type": names("BOOLEAN INT INTEGER BIGINT DOUBLE STRING VARCHAR BYTES DATE TIME TIMESTAMP "
                      "DECIMAL ARRAY MAP STRUCT"),
        "operator": names("= <> != < <= > >= + - || * / % -> [ ( . AND OR IS LIKE NOT IN BETWEEN"),
        "number": literals - {"STRING_LITERAL"},
        "statement": names("SELECT CREATE INSERT DESCRIBE SHOW LIST DROP PRINT SET UNSET DEFINE "
                           "UNDEFINE EXPLAIN TERMINATE"),
        "star": by_value["*"],
        "display": {name: value for value, name in by_value.items()},
    }


@functools.cache
def reserved_words() -> frozenset[str]:
    """Keywords that are never identifiers (quote them: `FROM`)."""
    identifiers = _identifier_terminals(_parser())
    return frozenset(name for name in _KEYWORDS.values() if name not in identifiers)


# ---------------------------------------------------------------- parsing
def parse(text: str) -> list[ast.Statement]:
    """Parse every statement of a cell (no variable substitution)."""
    return [parse_statement(s.text, line=s.line, column=s.column) for s in split_statements(text)]


def parse_statement(text: str, *, line: int = 1, column: int = 1) -> ast.Statement:
    """Parse one statement, optionally ending with `;`. `line`/`column` (1-based) say where
    `text` starts in the cell: positions in the AST and in errors are the cell's."""
    check_terminated(text, line, column)
    # Padding makes the lexer count lines and columns as in the cell.
    padded = "\n" * (line - 1) + " " * (column - 1) + text
    try:
        tree = _parser().parse(padded)
        return BUILDER.transform(tree)
    except UnexpectedToken as e:
        raise _unexpected_token(e, padded, line, column) from None
    except UnexpectedCharacters as e:
        raise _unexpected_character(e, padded) from None
    except VisitError as e:
        if isinstance(e.orig_exc, Invalid):
            message, at_line, at_column = e.orig_exc.args
            raise SqlSyntaxError(message, at_line, at_column, excerpt(padded, at_line, at_column)) from None
        raise


def _unexpected_token(e: UnexpectedToken, text: str, line: int, column: int) -> SqlSyntaxError:
    token = e.token
    if token.type == "$END":
        if token.end_line is not None:
            line, column = token.end_line, token.end_column
        message = "unexpected end of statement,"
    else:
        line, column = token.line, token.column
        message = f"mismatched input '{token}'"
    accepts = e.accepts or e.expected
    expected = _describe_expected(accepts)
    if expected:
        message += f" expecting {expected}"
    if token.type in reserved_words() and _only_names(accepts):
        message += f" ('{token.upper()}' is a reserved word: quote it as `{token.upper()}` to use it as a name)"
    return SqlSyntaxError(message, line, column, excerpt(text, line, column))


def _unexpected_character(e: UnexpectedCharacters, text: str) -> SqlSyntaxError:
    rest = text[e.pos_in_stream:]
    if rest.startswith("${"):
        message = f"undefined variable '{rest[: rest.find('}') + 1] or rest[:2]}'"
    else:
        message = f"unexpected character '{rest[:1]}'"
    return SqlSyntaxError(message, e.line, e.column, excerpt(text, e.line, e.column))


def _only_names(accepts) -> bool:
    """Whether a name (or an expression) is all that could come next, give or take a `*`."""
    sets = _token_sets()
    others = set(accepts) - sets["expression"] - {sets["star"]}
    return "NAME" in accepts and not others


def _describe_expected(accepts, limit: int = 12) -> str:
    sets = _token_sets()
    rest = set(accepts)
    groups = []
    if sets["statement"] <= rest:
        groups.append("a statement")
        rest -= sets["statement"]
    if {"INTEGER_VALUE", "NAME"} <= rest:
        groups.append("an expression")
        rest -= sets["expression"]
    elif "NAME" in rest:
        groups.append("an identifier")
        rest -= next((names for names in sets["names"] if names <= rest), {"NAME"})
    elif "BIGINT" in rest:
        groups.append("a type")
        rest -= sets["type"]
    if len(rest & sets["operator"]) >= 3:
        groups.append("an operator")
        rest -= sets["operator"]
    if rest & sets["number"]:
        groups.append("a number")
        rest -= sets["number"]
    if "STRING_LITERAL" in rest:
        groups.append("a string")
        rest.discard("STRING_LITERAL")
    if "$END" in rest:
        groups.append("end of statement")
        rest.discard("$END")
    display = sets["display"]
    words = sorted(display.get(n, n) if display.get(n, "").isalpha() else f"'{display.get(n, n)}'" for n in rest)
    items = words + groups
    if len(items) > limit:
        items = items[:limit] + ["..."]
    if len(items) <= 1:
        return "".join(items)
    return "one of: " + ", ".join(items)
