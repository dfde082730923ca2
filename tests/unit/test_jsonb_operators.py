"""Materialize's jsonb operators `->`, `->>`, `#>` and `#>>` (jsonb is JSON text here): parsing with
PostgreSQL's precedence, rendering back, and types. No Spark; the values are checked in
tests/integration/test_jsonb_operators.py."""

from __future__ import annotations

import pytest

from kafkasql_magic.errors import ExpressionTypeError, SqlSyntaxError
from kafkasql_magic.sql import ast, parse_statement
from kafkasql_magic.sql.ast import BinaryOp, Cast, ColumnRef, Literal
from kafkasql_magic.sql import text_array
from kafkasql_magic.sql.ast_materialize import JsonPath, MapLookup
from kafkasql_magic.sql.render_materialize import MATERIALIZE_WRITER
from kafkasql_magic.typecheck import check_select

DATA = ColumnRef("data")
STRING, INT = ast.Type("STRING"), ast.Type("INT")
COLUMNS = {"data": STRING, "id": INT, "m": ast.Type("MAP", key=STRING, value=INT)}


def expr(text):
    return parse_statement(f"SELECT {text} FROM s", dialect="materialize").items[0].expr


def text_key(k):
    return Literal(k, "STRING")


def test_arrows_parse_left_associative_tighter_than_comparisons():
    assert expr("data->>'id'") == MapLookup(DATA, text_key("id"), as_text=True)
    assert expr("data->'nested'->>'x'") == MapLookup(MapLookup(DATA, text_key("nested")), text_key("x"), as_text=True)
    assert expr("data->'tags'->0") == MapLookup(MapLookup(DATA, text_key("tags")), Literal(0, "INT"))
    assert expr("data->>'a' = 'x'") == BinaryOp("=", MapLookup(DATA, text_key("a"), as_text=True), text_key("x"))
    assert expr("(data->>'n')::int") == Cast(MapLookup(DATA, text_key("n"), as_text=True), INT)
    # as in PostgreSQL, `::` binds tighter: the cast applies to the key
    assert expr("data->>'n'::text").key == Cast(text_key("n"), STRING)


def test_arrow_positions_and_syntax_errors():
    got = expr("data ->> 'id'")
    assert (got.line, got.column) == (1, 8)
    with pytest.raises(SqlSyntaxError) as caught:
        parse_statement("SELECT data ->> FROM s", dialect="materialize")
    assert (caught.value.line, caught.value.column) == (1, 17)


@pytest.mark.parametrize("text, rendered", [
    ("data->>'id'", "(data ->> 'id')"),
    ("data->'nested'->>'x'", "((data -> 'nested') ->> 'x')"),
    ("data->'a'->-1", "((data -> 'a') -> -1)"),
])
def test_arrows_render_back_as_operators(text, rendered):
    assert MATERIALIZE_WRITER(expr(text)) == rendered
    assert expr(rendered) == expr(text)


def types_of(select: str):
    return check_select(parse_statement(select, dialect="materialize"), COLUMNS, "materialize").items


def test_jsonb_arrows_give_text_and_maps_keep_their_value_type():
    assert types_of("SELECT data->'a', data->>'a', data->0, data->>id, (data->>'n')::int, m->'k' FROM s") == \
        (STRING, STRING, STRING, STRING, INT, INT)


@pytest.mark.parametrize("select, message", [
    ("SELECT m->>'k' FROM s", "operator does not exist: map[text=>integer] ->> text"),
    ("SELECT data->>true FROM s", "operator does not exist: text ->> boolean"),
    ("SELECT id->'a' FROM s", "operator does not exist: integer -> text"),
])
def test_arrows_refused_on_other_types(select, message):
    with pytest.raises(ExpressionTypeError) as caught:
        check_select(parse_statement(select, dialect="materialize"), COLUMNS, "materialize", select)
    assert caught.value.reason == message


# ---------------------------------------------------------------- #> and #>> (a path)
def test_path_operators_parse_beside_the_arrows():
    assert expr("data #> '{a,b}'") == JsonPath(DATA, text_key("{a,b}"))
    assert expr("data#>>'{a,0}'") == JsonPath(DATA, text_key("{a,0}"), as_text=True)
    assert expr("data->'a' #>> '{b}' = 'x'") == BinaryOp(
        "=", JsonPath(MapLookup(DATA, text_key("a")), text_key("{b}"), as_text=True), text_key("x"))
    assert expr("(data #>> '{n}')::int") == Cast(JsonPath(DATA, text_key("{n}"), as_text=True), INT)
    got = expr("data  #>> '{id}'")
    assert (got.line, got.column) == (1, 8)


@pytest.mark.parametrize("text, rendered", [
    ("data #> '{a,b}'", "(data #> '{a,b}')"),
    ("data->'a' #>> '{b, 0}'", "((data -> 'a') #>> '{b, 0}')"),
])
def test_path_operators_render_back(text, rendered):
    assert MATERIALIZE_WRITER(expr(text)) == rendered
    assert expr(rendered) == expr(text)


def test_path_operators_give_text():
    assert types_of("SELECT data #> '{a}', data #>> '{a,0}', (data #>> '{n}')::int, data #> '{}' FROM s") == \
        (STRING, STRING, INT, STRING)


@pytest.mark.parametrize("select, message, column", [
    ("SELECT data #> 'a' FROM s", 'invalid input syntax for type array: malformed array literal: '
                                  'missing opening left brace: "a"', 16),
    ("SELECT data #>> '{a' FROM s", 'invalid input syntax for type array: malformed array literal: '
                                    'unexpected end of input: "{a"', 17),
    ("SELECT data #> '{a}x' FROM s", 'invalid input syntax for type array: malformed array literal: '
                                     'junk after closing right brace: "{a}x"', 16),
    ("SELECT data #> 1 FROM s", "operator does not exist: text #> integer", 8),
    ("SELECT data #>> id FROM s", "operator does not exist: text #>> integer", 8),
    ("SELECT id #> '{a}' FROM s", "operator does not exist: integer #> text", 8),
    ("SELECT m #>> '{a}' FROM s", "operator does not exist: map[text=>integer] #>> text", 8),
])
def test_a_path_must_be_a_text_array_literal(select, message, column):
    with pytest.raises(ExpressionTypeError) as caught:
        check_select(parse_statement(select, dialect="materialize"), COLUMNS, "materialize", select)
    assert caught.value.reason == message
    assert (caught.value.line, caught.value.column) == (1, column)
    assert "^" in str(caught.value)


@pytest.mark.parametrize("text, elements", [
    ("{a,b}", ("a", "b")),
    ("{}", ()),
    (' { a , "b c" , NULL, -1 } ', ("a", "b c", None, "-1")),
    ('{"x\\"y", "{,}"}', ('x"y', "{,}")),
])
def test_text_array_literals(text, elements):
    assert text_array.parse(text) == elements
