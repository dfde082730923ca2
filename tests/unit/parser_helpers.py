"""Helpers the parser tests of every dialect share: literals, types, the expression of a
one-item SELECT, a SELECT built from items, and the SqlSyntaxError a text raises."""

from __future__ import annotations

from typing import Callable, NamedTuple

import pytest

from kafkasql_magic.errors import SqlSyntaxError
from kafkasql_magic.sql import parse_statement
from kafkasql_magic.sql.ast import Literal, Select, SelectItem, SourceRef, Star, Type


def L(value, kind=None):
    if kind is None:
        kind = {bool: "BOOLEAN", int: "INT", float: "DOUBLE", str: "STRING", type(None): "NULL"}[type(value)]
    return Literal(value, kind)


def T(name, **kw):
    return Type(name, **kw)


class Helpers(NamedTuple):
    parse: Callable
    expr: Callable
    select: Callable
    syntax_error: Callable


def helpers(dialect: str, *, source: str) -> Helpers:
    """The helpers for `dialect`; `source` is the FROM name `select` uses by default (the
    dialect's folding of an unquoted `s`)."""

    def parse(text, **kw):
        return parse_statement(text, dialect=dialect, **kw)

    def expr(text):
        """The expression of `SELECT <text> FROM s`."""
        statement = parse(f"SELECT {text} FROM s")
        assert len(statement.items) == 1
        return statement.items[0].expr

    def select(*items, source=source, **kw):
        items = tuple(i if isinstance(i, (Star, SelectItem)) else SelectItem(i) for i in items)
        src = source if isinstance(source, SourceRef) else SourceRef(source)
        return Select(items, src, **kw)

    def syntax_error(text, **kw) -> SqlSyntaxError:
        with pytest.raises(SqlSyntaxError) as info:
            parse(text, **kw)
        return info.value

    return Helpers(parse, expr, select, syntax_error)
