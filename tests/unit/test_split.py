"""Statement splitting and ksqlDB `${var}` substitution. No Spark."""

from __future__ import annotations

import pytest

from kafkasql_magic.errors import KStreamError, SqlSyntaxError, StatementError
from kafkasql_magic.sql import (
    StatementText,
    UndefinedVariableError,
    parse_statement,
    split_statements,
    substitute_variables,
)
from kafkasql_magic.sql.ast import Literal, Property


def texts(cell):
    return [s.text for s in split_statements(cell)]


# ---------------------------------------------------------------- splitting
def test_split_basic_with_positions():
    cell = "SELECT * FROM a;\nSELECT * FROM b;  SHOW STREAMS"
    assert split_statements(cell) == [
        StatementText("SELECT * FROM a", 1, 1),
        StatementText("SELECT * FROM b", 2, 1),
        StatementText("SHOW STREAMS", 2, 19),
    ]


def test_statement_starts_at_its_first_token():
    cell = "\n\n   -- a comment; with a semicolon\n  /* block; */ SELECT 1 FROM s ;"
    assert split_statements(cell) == [StatementText("SELECT 1 FROM s", 4, 16)]


def test_trailing_statement_without_semicolon():
    assert texts("SHOW STREAMS") == ["SHOW STREAMS"]
    assert texts("SHOW STREAMS;\nSHOW TABLES\n\n") == ["SHOW STREAMS", "SHOW TABLES"]


def test_empty_statements_are_dropped():
    assert split_statements("") == []
    assert split_statements("   \n\t ") == []
    assert split_statements(";;  ; \n;") == []
    assert split_statements("-- only a comment") == []
    assert split_statements("/* only\n a comment */ ; -- and another\n;") == []
    assert texts("SHOW STREAMS;;;SHOW TABLES;") == ["SHOW STREAMS", "SHOW TABLES"]


@pytest.mark.parametrize(
    "cell, expected",
    [
        ("SELECT 'a;b' FROM s; SHOW STREAMS", ["SELECT 'a;b' FROM s", "SHOW STREAMS"]),
        ("SELECT 'it''s; ok' FROM s; X", ["SELECT 'it''s; ok' FROM s", "X"]),
        ("SELECT '''' FROM s;X", ["SELECT '''' FROM s", "X"]),
        ("SELECT `a;b` FROM s;X", ["SELECT `a;b` FROM s", "X"]),
        ("SELECT `a``;b` FROM s;X", ["SELECT `a``;b` FROM s", "X"]),
        ('SELECT "a;b" FROM s;X', ['SELECT "a;b" FROM s', "X"]),
        ("SELECT a -- c;d\nFROM s;X", ["SELECT a -- c;d\nFROM s", "X"]),
        ("SELECT a /* c;\n d; */ FROM s;X", ["SELECT a /* c;\n d; */ FROM s", "X"]),
        ("SELECT '--;' FROM s;X", ["SELECT '--;' FROM s", "X"]),
        ("SELECT '/*' FROM s;X;'*/'", ["SELECT '/*' FROM s", "X", "'*/'"]),
        ("SELECT a/b FROM s;X", ["SELECT a/b FROM s", "X"]),
        ("SELECT a-b FROM s;X", ["SELECT a-b FROM s", "X"]),
        ("SELECT '\n;\n' FROM s;X", ["SELECT '\n;\n' FROM s", "X"]),
        ("SELECT a FROM s -- trailing", ["SELECT a FROM s -- trailing"]),
        ("SELECT a /***/ FROM s; X", ["SELECT a /***/ FROM s", "X"]),
        ("SELECT a /* ** ; */ FROM s; X", ["SELECT a /* ** ; */ FROM s", "X"]),
    ],
)
def test_semicolons_inside_strings_identifiers_and_comments(cell, expected):
    assert texts(cell) == expected


def test_positions_after_multiline_strings_and_comments():
    cell = "SELECT 'a\nb' FROM s; /* x\ny */ SHOW\nSTREAMS;\r\n  SHOW TABLES"
    assert split_statements(cell) == [
        StatementText("SELECT 'a\nb' FROM s", 1, 1),
        StatementText("SHOW\nSTREAMS", 3, 6),
        StatementText("SHOW TABLES", 5, 3),
    ]


@pytest.mark.parametrize(
    "cell, line, column, reason",
    [
        ("SELECT 'abc FROM s;", 1, 8, "unterminated string literal"),
        ("SHOW STREAMS;\nSELECT a FROM s WHERE b = 'x;\nSHOW TABLES;", 2, 27, "unterminated string literal"),
        ("SELECT `a FROM s", 1, 8, "unterminated quoted identifier"),
        ('SELECT "a FROM s', 1, 8, "unterminated quoted identifier"),
        ("SELECT a FROM s;\n  /* no end ;", 2, 3, "unterminated comment"),
        # 'it' is a whole string, then a second one opens (ANTLR's lexer reads it the same way)
        ("SELECT 'it''s FROM s", 1, 12, "unterminated string literal"),
    ],
)
def test_unterminated_pieces_are_positioned_errors(cell, line, column, reason):
    with pytest.raises(SqlSyntaxError) as info:
        split_statements(cell)
    e = info.value
    assert (e.line, e.column, e.reason) == (line, column, reason)
    source, caret = e.excerpt.split("\n")
    assert source == cell.split("\n")[line - 1] and caret == " " * (column - 1) + "^"


def test_split_then_parse_keeps_cell_positions():
    cell = "SHOW STREAMS;\n\n   SELECT a,\n   b FROM s;"
    statements = split_statements(cell)
    parsed = [parse_statement(s.text, line=s.line, column=s.column) for s in statements]
    select = parsed[1]
    assert (select.line, select.column) == (3, 4)
    assert (select.items[1].line, select.items[1].column) == (4, 4)


# ---------------------------------------------------------------- variables
def test_substitute_variables_like_ksqldb_define():
    text = "CREATE STREAM ${name} WITH (kafka_topic='${topic}', value_format='${FORMAT}', partitions=${n})"
    got = substitute_variables(text, {"name": "s1", "TOPIC": "t1", "format": "JSON", "N": "3"})
    assert got == "CREATE STREAM s1 WITH (kafka_topic='t1', value_format='JSON', partitions=3)"
    statement = parse_statement(got)
    assert statement.name == "S1"
    assert statement.properties[-1] == Property("PARTITIONS", Literal(3, "INT"))


def test_variable_names_are_case_insensitive():
    assert substitute_variables("${Abc} ${ABC} ${abc}", {"aBc": "x"}) == "x x x"


def test_text_without_variables_is_unchanged():
    text = "SELECT '$' , `$x`, $ FROM s -- ${nothing}"
    assert substitute_variables(text, {}) == text
    assert substitute_variables("SELECT $x, ${1x}, ${ y } FROM s", {"x": "1", "y": "2"}) == "SELECT $x, ${1x}, ${ y } FROM s"


def test_not_substituted_in_comments():
    text = "SELECT ${a} -- ${a} ${undefined}\nFROM /* ${undefined} */ s"
    assert substitute_variables(text, {"a": "1"}) == "SELECT 1 -- ${a} ${undefined}\nFROM /* ${undefined} */ s"


def test_substituted_in_strings_and_quoted_identifiers():
    got = substitute_variables("SELECT '${a}-x', `${a}` FROM \"${a}\"", {"a": "v"})
    assert got == "SELECT 'v-x', `v` FROM \"v\""


def test_several_in_one_word_and_adjacent():
    assert substitute_variables("${a}${b}_${a}-${b};${a}", {"a": "1", "b": "2"}) == "12_1-2;1"


def test_value_is_not_substituted_again():
    assert substitute_variables("${a}", {"a": "${b}", "b": "x"}) == "${b}"


def test_undefined_variable_is_a_positioned_error():
    with pytest.raises(UndefinedVariableError) as info:
        substitute_variables("SELECT *\nFROM ${src}", {"other": "x"})
    e = info.value
    assert isinstance(e, StatementError) and isinstance(e, SqlSyntaxError) and isinstance(e, KStreamError)
    assert "Undefined variable: src" in str(e)
    assert (e.line, e.column) == (2, 6)
    assert e.excerpt == "FROM ${src}\n     ^"


def test_undefined_variable_position_with_offsets():
    with pytest.raises(UndefinedVariableError) as info:
        substitute_variables("SELECT ${x} FROM s", {}, line=4, column=10)
    assert (info.value.line, info.value.column) == (4, 17)
    assert info.value.excerpt.split("\n")[1] == " " * 16 + "^"


def test_define_name_is_not_substituted_but_its_value_is():
    variables = {"a": "1"}
    assert substitute_variables("DEFINE a = '${a}2'", variables) == "DEFINE a = '12'"
    assert substitute_variables("define ${a} = 'x'", variables) == "define ${a} = 'x'"
    assert substitute_variables("DEFINE ${zz}='x'", variables) == "DEFINE ${zz}='x'"
    assert substitute_variables("UNDEFINE ${zz}", variables) == "UNDEFINE ${zz}"
    # only the name right after DEFINE; later statements are substituted again
    assert substitute_variables("DEFINE b = 'x'; SELECT ${a} FROM s", variables) == "DEFINE b = 'x'; SELECT 1 FROM s"
    assert substitute_variables("/* c */ DEFINE ${q} = '${a}'", variables) == "/* c */ DEFINE ${q} = '1'"


def test_substitute_rejects_unterminated_strings():
    with pytest.raises(SqlSyntaxError):
        substitute_variables("SELECT '${a} FROM s", {"a": "1"})
