"""SQL text -> AST, one `Dialect` per grammar (LALR, built once per process).

A dialect is a grammar plus tables, not a second engine (sqlglot style): `Dialect` holds the
machinery every grammar shares (case-insensitive keywords, reserved words, positioned errors
with caret excerpts), and a dialect is an instance of it or of a subclass that changes tables
and wording. `KSQL` is the ksqlDB dialect (ksql.lark); the Materialize dialect lives in
materialize_parser.py. `kafkasql_magic.sql` picks a dialect by name.

Errors are SqlSyntaxError with the line and column in the original cell and a caret excerpt.
"""

from __future__ import annotations

import functools
from pathlib import Path

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedToken, VisitError
from lark.lexer import PatternStr

from . import ast
from ..errors import SqlSyntaxError
from .builder import BUILDER, Invalid
from .split import check_terminated, excerpt, split_statements

__all__ = ["Dialect", "KSQL", "FUTURE_RESERVED"]

GRAMMAR = Path(__file__).with_name("ksql.lark")

# Reserved although no statement uses them yet, so that adding them later does not take
# identifiers away from anyone.
FUTURE_RESERVED = frozenset(
    "DISTINCT".split()
)


#: How deep a statement's parse tree may nest: parentheses, function calls, CASE, NOT, signs
#: and every operator of a chain (`a + b + c` is two levels) count one level each. Deeper
#: trees would exhaust Python's stack in the steps after parsing.
MAX_NESTING = 150

#: Grammar rule -> (most children, what they are): lists longer than this are refused before
#: planning, whose cost grows with them.
MAX_ITEMS = {
    "in_list": (10_000, "values in an IN list"),
    "not_in_list": (10_000, "values in an IN list"),
    "function_call": (1_000, "arguments of a function"),
    "call_or_constructor": (1_000, "arguments of a function"),
    "searched_case": (1_000, "WHEN branches in a CASE"),
    "simple_case": (1_000, "WHEN branches in a CASE"),
}


def _position(node) -> tuple[int, int]:
    if isinstance(node, Token):
        return node.line, node.column
    return (node.meta.line, node.meta.column) if not node.meta.empty else (1, 1)


def check_limits(tree: Tree, text: str) -> None:
    """Refuse absurd nesting and list sizes with a positioned error, before anything recurses."""
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, Tree):
            continue
        if depth > MAX_NESTING:
            line, column = _position(node)
            raise SqlSyntaxError(f"Expressions nest too deeply: more than {MAX_NESTING} levels (parentheses, "
                                 "function calls, CASE, NOT, signs and each operator of a chain count one "
                                 "level). Simplify the statement.", line, column, excerpt(text, line, column))
        limit, what = MAX_ITEMS.get(node.data, (None, None))
        if limit is not None and len(node.children) - 1 > limit:
            line, column = _position(node)
            raise SqlSyntaxError(f"Too many {what}: {len(node.children) - 1} (at most {limit:,}).",
                                 line, column, excerpt(text, line, column))
        stack.extend((child, depth + 1) for child in node.children)


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


class Dialect:
    """A grammar, the builder for its trees and the tables that word its errors.

    The word tables name grammar tokens by their text ("SELECT", "(", "||"); words a grammar
    does not have are skipped. Subclasses change the tables and the wording methods.
    """

    name = "ksql"
    grammar = GRAMMAR
    builder = BUILDER
    future_reserved = FUTURE_RESERVED
    # rules taking one name, for "an identifier" in error messages
    name_rules = ("identifier", "alias_name", "describe_name", "query_id", "variable_name")
    expression_words = "( - + NOT CASE CAST TRUE FALSE NULL"
    type_words = ("BOOLEAN INT INTEGER BIGINT DOUBLE STRING VARCHAR BYTES DATE TIME TIMESTAMP "
                  "DECIMAL ARRAY MAP STRUCT")
    operator_words = "= <> != < <= > >= + - || * / % -> [ ( . AND OR IS LIKE NOT IN BETWEEN"
    statement_words = ("SELECT CREATE INSERT DESCRIBE SHOW LIST DROP PRINT SET UNSET DEFINE "
                       "UNDEFINE EXPLAIN TERMINATE")
    literal_terminals = frozenset({"STRING_LITERAL", "INTEGER_VALUE", "DECIMAL_VALUE", "FLOAT_VALUE"})
    #: Terminals that open both an expression and a type (Materialize's `MAP[`).
    opening_terminals: frozenset[str] = frozenset()
    #: The first line of a syntax error after `line L:C:` (ksqlDB's), the reason under it.
    syntax_headline: str | None = "Syntax Error"

    def __init__(self):
        self._keywords: dict[str, str] = {}  # upper-cased word -> terminal name; filled by .lark

    def __repr__(self):
        return f"<{type(self).__name__} {self.name}>"

    # ------------------------------------------------------------ grammar
    def _retype_keyword(self, token: Token) -> Token:
        token.type = self._keywords.get(token.upper(), "NAME")
        return token

    @functools.cached_property
    def lark(self) -> Lark:
        lark = Lark(
            self.grammar.read_text(),
            parser="lalr",
            lexer="basic",
            propagate_positions=True,
            maybe_placeholders=True,
            lexer_callbacks={"NAME": self._retype_keyword},
        )
        self._keywords.update(
            {t.pattern.value: t.name for t in lark.terminals
             if isinstance(t.pattern, PatternStr) and t.pattern.value.isidentifier()}
        )
        self._keywords.update({word: word for word in self.future_reserved})
        return lark

    @functools.cached_property
    def punctuation(self) -> dict[str, str]:
        """Terminal name -> its text, for the fixed terminals that are not words (`)`, `,`, `=>`)."""
        return {t.name: t.pattern.value for t in self.lark.terminals
                if isinstance(t.pattern, PatternStr) and not t.pattern.value.isidentifier()}

    @functools.cached_property
    def identifier_terminals(self) -> frozenset[str]:
        return _terminals_of(self.lark, "identifier")

    @functools.cached_property
    def reserved_words(self) -> frozenset[str]:
        """Keywords that are never identifiers (quote them to use them as names)."""
        identifiers = self.identifier_terminals
        return frozenset(name for name in self._keywords.values() if name not in identifiers)

    @functools.cached_property
    def token_sets(self) -> dict:
        """Terminal names grouped as error messages name them."""
        lark = self.lark
        by_value = {t.pattern.value: t.name for t in lark.terminals if isinstance(t.pattern, PatternStr)}
        names = lambda values: frozenset(by_value[v] for v in values.split() if v in by_value)  # noqa: E731
        identifiers = self.identifier_terminals
        literals = self.literal_terminals
        return {
            "identifier": identifiers,
            # the token sets of the rules that take one name, largest first
            "names": sorted({_terminals_of(lark, r) for r in self.name_rules} - {frozenset()},
                            key=len, reverse=True),
            "expression": identifiers | literals | names(self.expression_words) | self.opening_terminals,
            "type": names(self.type_words) | self.opening_terminals,
            "operator": names(self.operator_words),
            "number": literals - {"STRING_LITERAL"},
            "statement": names(self.statement_words),
            "star": by_value["*"],
            "display": {name: value for value, name in by_value.items()},
        }

    # ------------------------------------------------------------ parsing
    def parse(self, text: str) -> list[ast.Statement]:
        """Parse every statement of a cell (no variable substitution)."""
        try:
            pieces = split_statements(text)
        except SqlSyntaxError as e:
            raise e.headed(self.syntax_headline) from None
        return [self.parse_statement(s.text, line=s.line, column=s.column) for s in pieces]

    def parse_statement(self, text: str, *, line: int = 1, column: int = 1) -> ast.Statement:
        """Parse one statement, optionally ending with `;`. `line`/`column` (1-based) say where
        `text` starts in the cell: positions in the AST and in errors are the cell's."""
        try:
            return self._parse_statement(text, line, column)
        except SqlSyntaxError as e:
            raise e.headed(self.syntax_headline) from None

    def _parse_statement(self, text: str, line: int, column: int) -> ast.Statement:
        check_terminated(text, line, column)
        # Padding makes the lexer count lines and columns as in the cell.
        padded = "\n" * (line - 1) + " " * (column - 1) + text
        try:
            tree = self.lark.parse(padded)
            check_limits(tree, padded)
            return self.builder.transform(tree)
        except UnexpectedToken as e:
            raise self._unexpected_token(e, padded, line, column) from None
        except UnexpectedCharacters as e:
            raise self._unexpected_character(e, padded) from None
        except VisitError as e:
            if isinstance(e.orig_exc, Invalid):
                message, at_line, at_column = e.orig_exc.args
                raise SqlSyntaxError(message, at_line, at_column, excerpt(padded, at_line, at_column)) from None
            raise

    # ------------------------------------------------------------ errors
    def _unexpected_token(self, e: UnexpectedToken, text: str, line: int, column: int) -> SqlSyntaxError:
        token = e.token
        if token.type == "$END":
            if token.end_line is not None:
                line, column = token.end_line, token.end_column
        else:
            line, column = token.line, token.column
        accepts = e.accepts or e.expected
        missing = self._missing(e, accepts, text)
        message = self.missing_message(token, missing) if missing else \
            self.mismatch_message(token, self.describe_expected(accepts))
        hint = self.hint(token, accepts)
        if hint:
            message += " " + hint
        return SqlSyntaxError(message, line, column, excerpt(text, line, column))

    def _missing(self, e: UnexpectedToken, accepts, text: str) -> str | None:
        """The one punctuation mark whose insertion lets the parser take the unexpected token
        (ANTLR's single-token insertion, which ksqlDB reports as `missing ')' at ','`), or None;
        None too where dropping the token would do (ANTLR tries that first: a mismatch)."""
        if not self.reports_missing or e.token.type == "$END" or getattr(e, "interactive_parser", None) is None:
            return None
        try:
            after = next((t for t in self.lark.lex(text) if t.start_pos >= e.token.end_pos), None)
        except UnexpectedCharacters:  # what follows does not lex: no deletion to try
            after = None
        if after is not None:
            trial = e.interactive_parser.copy(deepcopy_values=False)
            try:
                trial.feed_token(after)
                return None
            except (UnexpectedToken, UnexpectedCharacters):
                pass
        fits = []
        for name in accepts:
            mark = self.punctuation.get(name)
            if mark is None:
                continue  # only a punctuation mark is inserted: a missing word reads as a mismatch
            trial = e.interactive_parser.copy(deepcopy_values=False)
            try:
                trial.feed_token(Token(name, mark))
                trial.feed_token(e.token)
            except (UnexpectedToken, UnexpectedCharacters):
                continue
            fits.append(mark)
        return fits[0] if len(fits) == 1 else None

    def _unexpected_character(self, e: UnexpectedCharacters, text: str) -> SqlSyntaxError:
        rest = text[e.pos_in_stream:]
        if rest.startswith("${"):
            message = f"undefined variable '{rest[: rest.find('}') + 1] or rest[:2]}'"
        else:
            message = f"unexpected character '{rest[:1]}'"
        return SqlSyntaxError(message, e.line, e.column, excerpt(text, e.line, e.column))

    def _only_names(self, accepts) -> bool:
        """Whether a name (or an expression) is all that could come next, give or take a `*`."""
        sets = self.token_sets
        others = set(accepts) - sets["expression"] - {sets["star"]}
        return "NAME" in accepts and not others

    def describe_expected(self, accepts, limit: int = 12) -> str:
        sets = self.token_sets
        rest = set(accepts)
        groups = []
        if sets["statement"] and sets["statement"] <= rest:
            groups.append("a statement")
            rest -= sets["statement"]
        if {"INTEGER_VALUE", "NAME"} <= rest:
            groups.append("an expression")
            rest -= sets["expression"]
        elif "BIGINT" in rest and "_MAP_OPEN" in rest:  # a type (Materialize's may be a name CREATE TYPE made)
            groups.append("a type")
            rest -= sets["type"] | {"NAME", "QUOTED_IDENTIFIER"}
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
        words = sorted(display.get(n, n) if display.get(n, "").isidentifier() else f"'{display.get(n, n)}'"
                       for n in rest)
        lead = [g for g in groups if g == "a statement"]  # EXPLAIN takes a statement or a query id
        items = lead + words + [g for g in groups if g not in lead]
        if len(items) > limit:
            items = items[:limit] + ["..."]
        return self.expected_list(items)

    # ------------------------------------------------------------ wording (ksqlDB's)
    def expected_list(self, items: list[str]) -> str:
        if len(items) <= 1:
            return "".join(items)
        return "one of: " + ", ".join(items)

    #: Whether a token the parser lacks is reported as ANTLR's `missing ')' at ','` (ksqlDB's parser)
    reports_missing = True

    def missing_message(self, token: Token, missing: str) -> str:
        return f"missing '{missing}' at '{token}'"

    def mismatch_message(self, token: Token, expected: str) -> str:
        if token.type == "$END":
            message = "unexpected end of statement,"
        else:
            message = f"mismatched input '{token}'"
        return f"{message} expecting {expected}" if expected else message

    def hint(self, token: Token, accepts) -> str:
        """Advice appended to a mismatch message ("" for none)."""
        if token.type in self.reserved_words and self._only_names(accepts):
            return self.reserved_hint(token.upper())
        return ""

    def reserved_hint(self, word: str) -> str:
        return f"('{word}' is a reserved word: quote it as `{word}` to use it as a name)"


KSQL = Dialect()
