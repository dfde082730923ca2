"""The ksql parser: golden ASTs for every statement and expression form, identifier rules,
reserved words, and positioned syntax errors. No Spark."""

from __future__ import annotations

import logging

import pytest
from lark import Lark

from kafkasql_magic.errors import KStreamError, SqlSyntaxError
from kafkasql_magic.sql import ast, parse, parse_statement, reserved_words
from kafkasql_magic.sql import parser as parser_module
from kafkasql_magic.sql.parser import KSQL
from kafkasql_magic.sql.ast import (
    And, Between, BinaryOp, Case, Cast, ColumnDef, ColumnRef, CreateAsSelect, CreateSource,
    Define, Dereference, Describe, Drop, Explain, FunctionCall, InList, InsertSelect,
    InsertValues, IsNull, Like, Not, Or, Print, Property, Select, SelectItem, SetProperty,
    Show, SourceRef, Star, Subscript, TerminateQuery, UnaryOp, Undefine, UnsetProperty,
)

from parser_helpers import L, T, helpers

C = ColumnRef


_, expr, select, syntax_error = helpers("ksql", source="S")


# ---------------------------------------------------------------- CREATE
def test_create_stream_with_columns_and_properties():
    got = parse_statement(
        "CREATE STREAM pageviews (id INT KEY, v STRING, h BYTES HEADER('trace-id'), "
        "hs ARRAY<STRUCT<key STRING, value BYTES>> HEADERS) "
        "WITH (kafka_topic='pv', value_format='JSON', partitions=4, replicas=-1, "
        "wrap_single_value=false, 'key_format'='KAFKA', x=1.5);"
    )
    assert got == CreateSource(
        "STREAM", "PAGEVIEWS",
        (
            ColumnDef("ID", T("INT"), "KEY"),
            ColumnDef("V", T("STRING")),
            ColumnDef("H", T("BYTES"), "HEADER", "trace-id"),
            ColumnDef("HS", T("ARRAY", element=T("STRUCT", fields=(("KEY", T("STRING")), ("VALUE", T("BYTES"))))),
                      "HEADERS"),
        ),
        (
            Property("KAFKA_TOPIC", L("pv")),
            Property("VALUE_FORMAT", L("JSON")),
            Property("PARTITIONS", L(4)),
            Property("REPLICAS", L(-1)),
            Property("WRAP_SINGLE_VALUE", L(False)),
            Property("KEY_FORMAT", L("KAFKA")),
            Property("X", L("1.5", "DECIMAL")),
        ),
    )


def test_create_table_primary_key_or_replace_if_not_exists():
    got = parse_statement(
        "create or replace table if not exists users (`id` bigint primary key, name varchar) "
        "with (kafka_topic='users', format='AVRO')"
    )
    assert got == CreateSource(
        "TABLE", "USERS",
        (ColumnDef("id", T("BIGINT"), "PRIMARY_KEY"), ColumnDef("NAME", T("STRING"))),
        (Property("KAFKA_TOPIC", L("users")), Property("FORMAT", L("AVRO"))),
        or_replace=True, if_not_exists=True,
    )


def test_create_without_columns_infers_schema():
    got = parse_statement("CREATE STREAM s WITH (kafka_topic='t', value_format='AVRO')")
    assert got == CreateSource("STREAM", "S", (), (Property("KAFKA_TOPIC", L("t")), Property("VALUE_FORMAT", L("AVRO"))))
    assert parse_statement("CREATE TABLE t") == CreateSource("TABLE", "T", ())


def test_create_as_select():
    got = parse_statement(
        "CREATE OR REPLACE STREAM IF NOT EXISTS big WITH (kafka_topic='big') AS "
        "SELECT * FROM s WHERE v > 10 EMIT CHANGES;"
    )
    assert got == CreateAsSelect(
        "STREAM", "BIG",
        select(Star(), where=BinaryOp(">", C("V"), L(10)), emit_changes=True),
        (Property("KAFKA_TOPIC", L("big")),),
        or_replace=True, if_not_exists=True,
    )
    got = parse_statement("CREATE TABLE counts AS SELECT k, COUNT(*) AS n FROM s GROUP BY k")
    assert got == CreateAsSelect(
        "TABLE", "COUNTS",
        select(C("K"), SelectItem(FunctionCall("COUNT", star=True), "N"), group_by=(C("K"),)),
    )


def test_property_values():
    props = parse_statement(
        "CREATE STREAM s WITH (a='x''y', b=TRUE, c=NULL, d=-2.5, e=1e3, f=-1e3, g=3000000000, h=-7.)"
    ).properties
    assert [p.value for p in props] == [
        L("x'y"), L(True), L(None), L("-2.5", "DECIMAL"), L(1000.0), L(-1000.0),
        L(3000000000, "BIGINT"), L("-7.", "DECIMAL"),
    ]


# ---------------------------------------------------------------- INSERT
def test_insert_select():
    assert parse_statement("INSERT INTO sink SELECT a FROM s EMIT CHANGES") == InsertSelect(
        "SINK", select(C("A"), emit_changes=True)
    )
    assert parse_statement("INSERT INTO sink WITH (query_id='q1') SELECT * FROM s") == InsertSelect(
        "SINK", select(Star()), (Property("QUERY_ID", L("q1")),)
    )


def test_insert_values():
    assert parse_statement("INSERT INTO s (id, `v`) VALUES (1, 'x');") == InsertValues(
        "S", ("ID", "v"), (L(1), L("x"))
    )
    assert parse_statement("insert into s values (1 + 2, NULL, -3, ARRAY_MIN(x))") == InsertValues(
        "S", (), (BinaryOp("+", L(1), L(2)), L(None), L(-3), FunctionCall("ARRAY_MIN", (C("X"),)))
    )
    assert parse_statement("INSERT INTO s VALUES ()") == InsertValues("S", (), ())


# ---------------------------------------------------------------- SELECT
def test_select_every_clause():
    got = parse_statement(
        "SELECT s.*, id, v AS value, ROWOFFSET o FROM src AS s WHERE id > 1 GROUP BY id "
        "HAVING COUNT(*) > 2 PARTITION BY v EMIT CHANGES LIMIT 3;"
    )
    assert got == Select(
        (Star("S"), SelectItem(C("ID")), SelectItem(C("V"), "VALUE"), SelectItem(C("ROWOFFSET"), "O")),
        SourceRef("SRC", "S"),
        where=BinaryOp(">", C("ID"), L(1)),
        group_by=(C("ID"),),
        having=BinaryOp(">", FunctionCall("COUNT", star=True), L(2)),
        partition_by=(C("V"),),
        emit_changes=True,
        limit=3,
    )


def test_partition_by_may_come_before_having_as_in_ksqldb():
    a = parse_statement("SELECT a FROM s GROUP BY a PARTITION BY b, c HAVING d")
    b = parse_statement("SELECT a FROM s GROUP BY a HAVING d PARTITION BY b, c")
    assert a == b == select(C("A"), group_by=(C("A"),), partition_by=(C("B"), C("C")), having=C("D"))


@pytest.mark.parametrize("text, message", [
    # ksqlDB's grammar: GROUP BY and PARTITION BY take value expressions, or a parenthesised list
    ("SELECT * FROM s PARTITION BY name AND age", "line 1:35: Syntax Error\nmismatched input 'AND'"),
    ("SELECT COUNT(*) FROM s GROUP BY data AND id", "line 1:38: Syntax Error\nmismatched input 'AND'"),
    ("SELECT id FROM s PARTITION BY ()", "line 1:18: Syntax Error\nPARTITION BY requires at least one expression"),
    ("SELECT COUNT(*) FROM s GROUP BY ()", "line 1:24: Syntax Error\nGROUP BY requires at least one expression"),
])
def test_grouping_and_partitioning_take_value_expressions(text, message):
    with pytest.raises(SqlSyntaxError) as info:
        parse_statement(text)
    assert str(info.value).startswith(message)
    assert parse_statement("SELECT a FROM s PARTITION BY (b, c)") == select(C("A"), partition_by=(C("B"), C("C")))


def test_select_minimal_and_pull_query():
    assert parse_statement("SELECT * FROM s") == select(Star())
    assert parse_statement("select * from s limit 10;") == select(Star(), limit=10)
    assert parse_statement("SELECT a, b FROM s x") == select(C("A"), C("B"), source=SourceRef("S", "X"))


def test_select_aliases_may_be_non_reserved_words():
    got = parse_statement("SELECT a key, b AS partition, c topic FROM s all")
    assert got == select(
        SelectItem(C("A"), "KEY"), SelectItem(C("B"), "PARTITION"), SelectItem(C("C"), "TOPIC"),
        source=SourceRef("S", "ALL"),
    )


def test_partition_is_a_column_name_too():
    got = parse_statement("SELECT partition FROM s PARTITION BY partition")
    assert got == select(C("PARTITION"), partition_by=(C("PARTITION"),))


# ---------------------------------------------------------------- other statements
@pytest.mark.parametrize(
    "text, expected",
    [
        ("DESCRIBE s", Describe("S")),
        ("describe extended `MyStream`", Describe("MyStream", True)),
        ("DESCRIBE s EXTENDED;", Describe("S", True)),
        ("DESCRIBE key", Describe("KEY")),
        ("DESCRIBE `EXTENDED`", Describe("EXTENDED")),
        ("SHOW STREAMS", Show("STREAMS")),
        ("list tables;", Show("TABLES")),
        ("SHOW TOPICS EXTENDED", Show("TOPICS", True)),
        ("SHOW QUERIES", Show("QUERIES")),
        ("SHOW PROPERTIES", Show("PROPERTIES")),
        ("LIST VARIABLES", Show("VARIABLES")),
        ("DROP STREAM s", Drop("STREAM", "S")),
        ("DROP TABLE IF EXISTS t DELETE TOPIC;", Drop("TABLE", "T", True, True)),
        ("drop stream if", Drop("STREAM", "IF")),
        ("PRINT 'my-topic'", Print("my-topic")),
        ("PRINT myTopic FROM BEGINNING", Print("myTopic", True)),
        ("PRINT `odd topic` INTERVAL 5 LIMIT 10", Print("odd topic", False, 10, 5)),
        ("PRINT t FROM BEGINNING SAMPLE 2 LIMIT 1;", Print("t", True, 1, 2)),
        ("PRINT topic", Print("topic")),
        ("SET 'auto.offset.reset' = 'earliest';", SetProperty("auto.offset.reset", "earliest")),
        ("set 'a'='it''s'", SetProperty("a", "it's")),
        ("UNSET 'auto.offset.reset'", UnsetProperty("auto.offset.reset")),
        ("DEFINE format = 'JSON'", Define("format", "JSON")),
        ("DEFINE topic = ''", Define("topic", "")),
        ("UNDEFINE format;", Undefine("format")),
        ("TERMINATE CSAS_X_1", TerminateQuery("CSAS_X_1")),
        ("terminate all", TerminateQuery(None)),
        ("TERMINATE `transient_q`", TerminateQuery("transient_q")),
        ("EXPLAIN SELECT * FROM s", Explain(select(Star()))),
        ("EXPLAIN EXPLAIN SHOW STREAMS", Explain(Explain(Show("STREAMS")))),
    ],
)
def test_other_statements(text, expected):
    assert parse_statement(text) == expected


# ---------------------------------------------------------------- types
@pytest.mark.parametrize(
    "text, expected",
    [
        ("BOOLEAN", T("BOOLEAN")),
        ("INT", T("INT")),
        ("integer", T("INT")),
        ("BIGINT", T("BIGINT")),
        ("DOUBLE", T("DOUBLE")),
        ("STRING", T("STRING")),
        ("VARCHAR", T("STRING")),
        ("BYTES", T("BYTES")),
        ("DATE", T("DATE")),
        ("TIME", T("TIME")),
        ("TIMESTAMP", T("TIMESTAMP")),
        ("DECIMAL(10, 2)", T("DECIMAL", precision=10, scale=2)),
        ("ARRAY<INT>", T("ARRAY", element=T("INT"))),
        ("MAP<STRING, ARRAY<DOUBLE>>", T("MAP", key=T("STRING"), value=T("ARRAY", element=T("DOUBLE")))),
        ("STRUCT<a INT, `b` STRUCT<c MAP<STRING, INT>>>",
         T("STRUCT", fields=(("A", T("INT")), ("b", T("STRUCT", fields=(("C", T("MAP", key=T("STRING"), value=T("INT"))),)))))),
        ("STRUCT<date DATE, key STRING>", T("STRUCT", fields=(("DATE", T("DATE")), ("KEY", T("STRING"))))),
        ("STRUCT<>", T("STRUCT")),
        ("STRUCT< >", T("STRUCT")),
    ],
)
def test_types(text, expected):
    assert parse_statement(f"CREATE STREAM s (c {text})").columns[0].type == expected
    assert expr(f"CAST(x AS {text})") == Cast(C("X"), expected)


# ---------------------------------------------------------------- literals
@pytest.mark.parametrize(
    "text, expected",
    [
        ("1", L(1)),
        ("2147483647", L(2147483647)),
        ("2147483648", L(2147483648, "BIGINT")),
        ("-2147483648", L(-2147483648)),
        ("-2147483649", L(-2147483649, "BIGINT")),
        ("9223372036854775807", L(9223372036854775807, "BIGINT")),
        ("1.5", L("1.5", "DECIMAL")),
        ("-1.50", L("-1.50", "DECIMAL")),
        (".5", L(".5", "DECIMAL")),
        ("1.", L("1.", "DECIMAL")),
        ("1.5e3", L(1500.0)),
        ("1E3", L(1000.0)),
        ("2.5E-2", L(0.025)),
        ("-1e3", L(-1000.0)),
        ("TRUE", L(True)),
        ("false", L(False)),
        ("NULL", L(None)),
        ("'abc'", L("abc")),
        ("''", L("")),
        ("'it''s'", L("it's")),
        ("'a;b -- c /* d */'", L("a;b -- c /* d */")),
        ("'two\nlines'", L("two\nlines")),
        ("'${not_a_variable}'", L("${not_a_variable}")),
    ],
)
def test_literals(text, expected):
    assert expr(text) == expected


def test_integer_out_of_range_is_a_syntax_error():
    e = syntax_error("SELECT 99999999999999999999 FROM s")
    assert (e.line, e.column) == (1, 8)
    assert "Invalid numeric literal" in e.reason


# ---------------------------------------------------------------- expressions
@pytest.mark.parametrize(
    "text, expected",
    [
        # boolean precedence: OR < AND < NOT < predicates
        ("a OR b AND c", Or(C("A"), And(C("B"), C("C")))),
        ("a AND b OR c", Or(And(C("A"), C("B")), C("C"))),
        ("a OR b OR c", Or(Or(C("A"), C("B")), C("C"))),
        ("NOT a AND b", And(Not(C("A")), C("B"))),
        ("NOT NOT a", Not(Not(C("A")))),
        ("NOT a = b", Not(BinaryOp("=", C("A"), C("B")))),
        ("a = 1 OR NOT b IS NULL", Or(BinaryOp("=", C("A"), L(1)), Not(IsNull(C("B"))))),
        # arithmetic
        ("a + b * c", BinaryOp("+", C("A"), BinaryOp("*", C("B"), C("C")))),
        ("a * b + c", BinaryOp("+", BinaryOp("*", C("A"), C("B")), C("C"))),
        ("a - b - c", BinaryOp("-", BinaryOp("-", C("A"), C("B")), C("C"))),
        ("a / b % c", BinaryOp("%", BinaryOp("/", C("A"), C("B")), C("C"))),
        ("(a + b) * c", BinaryOp("*", BinaryOp("+", C("A"), C("B")), C("C"))),
        ("a || b + c", BinaryOp("+", BinaryOp("||", C("A"), C("B")), C("C"))),
        ("a || 'x' || b", BinaryOp("||", BinaryOp("||", C("A"), L("x")), C("B"))),
        ("a + 1 = b * 2", BinaryOp("=", BinaryOp("+", C("A"), L(1)), BinaryOp("*", C("B"), L(2)))),
        # unary binds tighter than * and looser than postfix
        ("-a * b", BinaryOp("*", UnaryOp("-", C("A")), C("B"))),
        ("+a", UnaryOp("+", C("A"))),
        ("- -a", UnaryOp("-", UnaryOp("-", C("A")))),
        ("-a->b", UnaryOp("-", Dereference(C("A"), "B"))),
        ("a - -1", BinaryOp("-", C("A"), L(-1))),
        ("-(1)", L(-1)),
        ("1-1", BinaryOp("-", L(1), L(1))),
        # comparisons
        ("a = b", BinaryOp("=", C("A"), C("B"))),
        ("a <> b", BinaryOp("<>", C("A"), C("B"))),
        ("a != b", BinaryOp("<>", C("A"), C("B"))),
        ("a < b", BinaryOp("<", C("A"), C("B"))),
        ("a <= b", BinaryOp("<=", C("A"), C("B"))),
        ("a > b", BinaryOp(">", C("A"), C("B"))),
        ("a >= b", BinaryOp(">=", C("A"), C("B"))),
        # predicates
        ("a IS NULL", IsNull(C("A"))),
        ("a + 1 IS NOT NULL", IsNull(BinaryOp("+", C("A"), L(1)), True)),
        ("a LIKE 'x%'", Like(C("A"), L("x%"))),
        ("a NOT LIKE 'x\\%%' ESCAPE '\\'", Like(C("A"), L("x\\%%"), True, "\\")),
        ("a || b LIKE c", Like(BinaryOp("||", C("A"), C("B")), C("C"))),
        ("a IN (1, 2, 3)", InList(C("A"), (L(1), L(2), L(3)))),
        ("a NOT IN ('x')", InList(C("A"), (L("x"),), True)),
        ("a BETWEEN 1 AND 2", Between(C("A"), L(1), L(2))),
        ("a NOT BETWEEN b - 1 AND b + 1", Between(C("A"), BinaryOp("-", C("B"), L(1)), BinaryOp("+", C("B"), L(1)), True)),
        ("a BETWEEN 1 AND 2 AND b", And(Between(C("A"), L(1), L(2)), C("B"))),
        # postfix
        ("a->b->c", Dereference(Dereference(C("A"), "B"), "C")),
        ("a->`b`", Dereference(C("A"), "b")),
        ("a[1]", Subscript(C("A"), L(1))),
        ("a[-1]", Subscript(C("A"), L(-1))),
        ("a['k']->v", Dereference(Subscript(C("A"), L("k")), "V")),
        ("s.a->b[i + 1]", Subscript(Dereference(C("A", "S"), "B"), BinaryOp("+", C("I"), L(1)))),
        ("f(x)[1]", Subscript(FunctionCall("F", (C("X"),)), L(1))),
        ("(a)->b", Dereference(C("A"), "B")),
        # columns and functions
        ("s.a", C("A", "S")),
        ("`S`.`a`", C("a", "S")),
        ("int_from_bytes(key, 'big_endian')", FunctionCall("INT_FROM_BYTES", (C("KEY"), L("big_endian")))),
        ("now()", FunctionCall("NOW")),
        ("COUNT(*)", FunctionCall("COUNT", star=True)),
        ("count(*)", FunctionCall("COUNT", star=True)),
        ("COUNT(x)", FunctionCall("COUNT", (C("X"),))),
        ("concat(a, concat(b, 'c'))", FunctionCall("CONCAT", (C("A"), FunctionCall("CONCAT", (C("B"), L("c")))))),
        ("`myUdf`(1)", FunctionCall("MYUDF", (L(1),))),
        ("header('k')", FunctionCall("HEADER", (L("k"),))),
        ("timestamp(x)", FunctionCall("TIMESTAMP", (C("X"),))),
        ("headers", C("HEADERS")),
        ("headers[1]->key", Dereference(Subscript(C("HEADERS"), L(1)), "KEY")),
        # CASE and CAST
        ("CASE WHEN a > 1 THEN 'big' WHEN a > 0 THEN 'small' ELSE 'none' END",
         Case(((BinaryOp(">", C("A"), L(1)), L("big")), (BinaryOp(">", C("A"), L(0)), L("small"))), L("none"))),
        ("CASE WHEN a THEN 1 END", Case(((C("A"), L(1)),))),
        ("CASE a WHEN 1 THEN 'one' ELSE 'many' END", Case(((L(1), L("one")),), L("many"), C("A"))),
        ("case a + 1 when 2 then x end", Case(((L(2), C("X")),), None, BinaryOp("+", C("A"), L(1)))),
        ("CASE WHEN CASE WHEN a THEN b END THEN c END", Case(((Case(((C("A"), C("B")),)), C("C")),))),
        ("CAST(a AS STRING) || 'x'", BinaryOp("||", Cast(C("A"), T("STRING")), L("x"))),
        ("CAST(a + 1 AS DECIMAL(4, 1))", Cast(BinaryOp("+", C("A"), L(1)), T("DECIMAL", precision=4, scale=1))),
    ],
)
def test_expressions(text, expected):
    assert expr(text) == expected


# ---------------------------------------------------------------- identifiers
def test_identifier_case_rules():
    got = parse_statement('SELECT id, Id, `id`, `My Col`, `a``b`, "Quoted", x.`Y` AS `Alias` FROM `src`')
    assert got == select(
        C("ID"), C("ID"), C("id"), C("My Col"), C("a`b"), C("Quoted"), SelectItem(C("Y", "X"), "Alias"),
        source="src",
    )


def test_keywords_are_case_insensitive():
    a = parse_statement("select a from s where a is not null emit changes limit 1")
    b = parse_statement("SeLeCt A FrOm S wHeRe A iS nOt NuLl EmIt ChAnGeS lImIt 1")
    assert a == b == select(C("A"), where=IsNull(C("A"), True), emit_changes=True, limit=1)


def test_pseudo_columns_are_ordinary_identifiers():
    got = parse_statement("SELECT ROWTIME, rowpartition, ROWOFFSET, ROWKEY, WINDOWSTART, WINDOWEND FROM s")
    assert [i.expr for i in got.items] == [
        C("ROWTIME"), C("ROWPARTITION"), C("ROWOFFSET"), C("ROWKEY"), C("WINDOWSTART"), C("WINDOWEND")
    ]


NON_RESERVED = [
    "KEY", "HEADER", "HEADERS", "PRIMARY", "TOPIC", "TOPICS", "STREAMS", "TABLES", "QUERIES",
    "EXTENDED", "BEGINNING", "INTERVAL", "SAMPLE", "VARIABLES", "PROPERTIES", "REPLACE", "EXISTS",
    "IF", "ALL", "TERMINATE", "ESCAPE", "PARTITION", "STRING", "INT", "INTEGER", "BIGINT", "DOUBLE",
    "BOOLEAN", "DECIMAL", "VARCHAR", "BYTES", "DATE", "TIME", "TIMESTAMP", "ARRAY", "MAP", "STRUCT",
]


@pytest.mark.parametrize("word", NON_RESERVED)
def test_non_reserved_words_are_identifiers(word):
    lower = word.lower()
    assert expr(lower) == C(word)
    assert expr(f"s.{lower}") == C(word, "S")
    assert expr(f"x->{lower}") == Dereference(C("X"), word)
    assert expr(f"{lower}(1)") == FunctionCall(word, (L(1),))
    assert parse_statement(f"SELECT a AS {lower} FROM s").items[0].alias == word
    assert parse_statement(f"SELECT a FROM {lower}").source == SourceRef(word)
    assert parse_statement(f"SELECT a FROM s AS {lower}").source == SourceRef("S", word)
    created = parse_statement(f"CREATE STREAM {lower} ({lower} INT KEY, s STRUCT<{lower} INT>)")
    assert created.name == word
    assert created.columns[0] == ColumnDef(word, T("INT"), "KEY")
    assert created.columns[1].type.fields == ((word, T("INT")),)
    assert parse_statement(f"INSERT INTO {lower} ({lower}) VALUES (1)") == InsertValues(word, (word,), (L(1),))
    assert parse_statement(f"DROP TABLE {lower}").name == word
    assert parse_statement(f"CREATE STREAM s WITH ({lower}=1)").properties[0].name == word


def test_reserved_words_list():
    reserved = reserved_words()
    for word in ("SELECT", "FROM", "WHERE", "AND", "OR", "NOT", "AS", "CASE", "WHEN", "THEN", "ELSE",
                 "END", "IS", "NULL", "TRUE", "FALSE", "LIKE", "IN", "BETWEEN", "EMIT", "CHANGES",
                 "LIMIT", "CREATE", "STREAM", "TABLE", "WITH", "GROUP", "BY", "HAVING", "INSERT",
                 "INTO", "VALUES", "DROP", "DESCRIBE", "SHOW", "LIST", "PRINT", "SET", "UNSET",
                 "DEFINE", "UNDEFINE", "EXPLAIN", "CAST", "ON", "JOIN", "WINDOW", "DELETE"):
        assert word in reserved
    assert not reserved & set(NON_RESERVED)


@pytest.mark.parametrize("word", sorted(reserved_words()))
def test_reserved_words_are_not_identifiers(word):
    text = f"SELECT a AS {word.lower()} FROM s"
    e = syntax_error(text)
    assert (e.line, e.column) == (1, 13)
    with pytest.raises(SqlSyntaxError):
        parse_statement(f"CREATE STREAM {word} (a INT)")
    with pytest.raises(SqlSyntaxError):
        parse_statement(f"CREATE STREAM s ({word} INT)")
    # quoted, any word is a name
    assert parse_statement(f"SELECT `{word}` FROM `{word}`") == select(C(word), source=word)


def test_select_a_comma_from_is_an_error_at_from():
    e = syntax_error("SELECT a, FROM s")
    assert isinstance(e, KStreamError)
    assert (e.line, e.column) == (1, 11)
    assert e.excerpt == "SELECT a, FROM s\n          ^"
    assert "'FROM'" in e.reason and "expecting" in e.reason and "an expression" in e.reason
    assert str(e).startswith("line 1:11: Syntax Error\nmismatched input 'FROM'")


# ---------------------------------------------------------------- comments and terminators
def test_comments_anywhere():
    got = parse_statement(
        "-- leading\nSELECT /* inline */ a, -- trailing\n /* multi\n line */ b FROM s -- end"
    )
    assert got == select(C("A"), C("B"))
    assert parse_statement("SELECT a FROM s; -- after") == select(C("A"))
    assert parse_statement("SELECT a-- x\nFROM s") == select(C("A"))
    assert parse_statement("SELECT a/**/FROM s") == select(C("A"))


def test_parse_splits_a_cell():
    got = parse("DEFINE t = 'x';\nSELECT * FROM s;  -- c\n/* only a comment */;\nSHOW STREAMS")
    assert got == [Define("T".lower(), "x"), select(Star()), Show("STREAMS")]
    assert parse("") == []
    assert parse("  -- nothing\n ; ;") == []


# ---------------------------------------------------------------- positions
def test_positions_are_in_the_cell():
    got = parse_statement("SELECT a,\n  b + 1 AS c FROM s x WHERE NOT a", line=3, column=5)
    assert (got.line, got.column) == (3, 5)
    a, b = got.items
    assert (a.line, a.column) == (3, 12)
    assert (b.line, b.column, b.expr.line, b.expr.column) == (4, 3, 4, 3)
    assert (b.expr.right.line, b.expr.right.column) == (4, 7)
    assert (got.source.line, got.source.column) == (4, 19)
    assert (got.where.line, got.where.column) == (4, 29)


def test_positions_through_parse():
    statements = parse("SHOW STREAMS;\n\n  CREATE STREAM s (id INT KEY) WITH (kafka_topic='t');")
    create = statements[1]
    assert (create.line, create.column) == (3, 3)
    column = create.columns[0]
    assert (column.line, column.column, column.type.line, column.type.column) == (3, 20, 3, 23)
    prop = create.properties[0]
    assert (prop.line, prop.column, prop.value.line, prop.value.column) == (3, 38, 3, 50)


def test_error_on_line_three_of_a_cell():
    cell = "SELECT * FROM a;\n-- a comment\nSELECT x,\n  FROM b;"
    with pytest.raises(SqlSyntaxError) as info:
        parse(cell)
    e = info.value
    assert (e.line, e.column) == (4, 3)
    assert e.excerpt == "  FROM b\n  ^"
    cell = "SELECT * FROM a;\nSHOW STREAMS;\nSELECT a b c FROM s;"
    with pytest.raises(SqlSyntaxError) as info:
        parse(cell)
    assert (info.value.line, info.value.column) == (3, 12)
    assert info.value.excerpt.splitlines()[1] == " " * 11 + "^"


def test_error_in_second_statement_on_the_same_line():
    with pytest.raises(SqlSyntaxError) as info:
        parse("SELECT 1 FROM a; SELECT x, FROM b")
    e = info.value
    assert (e.line, e.column) == (1, 28)
    source, caret = e.excerpt.split("\n")
    assert source.endswith("SELECT x, FROM b") and caret.index("^") == 27


def test_parse_statement_offsets_in_errors():
    e = syntax_error("SELECT a,\nFROM s", line=10, column=7)
    assert (e.line, e.column) == (11, 1)
    e = syntax_error("SELECT a, FROM s", line=2, column=5)
    assert (e.line, e.column) == (2, 15)
    assert e.excerpt.split("\n")[1].index("^") == 14


def test_unterminated_string_comment_and_identifier():
    e = syntax_error("SELECT a FROM s\nWHERE v = 'abc")
    assert (e.line, e.column) == (2, 11)
    assert "unterminated string" in e.reason
    assert e.excerpt == "WHERE v = 'abc\n          ^"
    e = syntax_error("SELECT a FROM s /* never closed")
    assert (e.line, e.column) == (1, 17) and "unterminated comment" in e.reason
    e = syntax_error("SELECT `abc FROM s")
    assert (e.line, e.column) == (1, 8) and "unterminated" in e.reason
    with pytest.raises(SqlSyntaxError) as info:
        parse("SELECT 1 FROM a;\nSELECT 'x FROM b")
    assert (info.value.line, info.value.column) == (2, 8)


def test_end_of_statement_error_points_after_the_last_token():
    e = syntax_error("SELECT a FROM")
    assert (e.line, e.column) == (1, 14)
    assert "end of statement" in e.reason and "an identifier" in e.reason
    e = syntax_error("SELECT a\nFROM   -- nothing")
    assert (e.line, e.column) == (2, 5)


def test_error_messages_name_ksql_terms_not_lark_terminals():
    for text in ["SELECT a FROM s WHERE", "CREATE STREAM s (a FOO)", "SELECT a FROM s LIMIT x",
                 "SELECT * FROM s WINDOW TUMBLING (1 SECOND)", "SELECT CAST(a AS) FROM s",
                 "DESCRIBE", "EXPLAIN", "SELECT a FROM s EMIT", ""]:
        reason = syntax_error(text).reason
        for lark_name in ("NAME", "STRING_LITERAL", "INTEGER_VALUE", "LPAR", "__ANON", "$END", "RULE"):
            assert lark_name not in reason, (text, reason)
    assert syntax_error("CREATE STREAM s (a FOO)").reason == "mismatched input 'FOO' expecting a type"
    assert syntax_error("SELECT a FROM s LIMIT x").reason == "mismatched input 'x' expecting a number"
    assert "expecting one of: CHANGES, FINAL" in syntax_error("SELECT a FROM s EMIT").reason
    assert syntax_error("SELECT * FROM s FULL").reason == "unexpected end of statement, expecting one of: JOIN, OUTER"
    assert syntax_error("SELECT * FROM s WINDOW TUMBLING (1 SECOND)").reason == "mismatched input '1' expecting SIZE"
    assert "a statement" in syntax_error("EXPLAIN").reason
    assert "unexpected character '#'" in syntax_error("SELECT a # b FROM s").reason
    assert "'${x}'" in syntax_error("SELECT ${x} FROM s").reason


# ---------------------------------------------------------------- must not parse
@pytest.mark.parametrize(
    "text",
    [
        "SELECT a, FROM s",
        "SELECT FROM s",
        "SELECT a",
        "SELECT a FROM",
        "SELECT a FROM s,",
        "SELECT a FROM s t u",
        "SELECT * FROM s LIMIT 1.5",
        "SELECT * FROM s LIMIT -1",
        "SELECT * FROM s EMIT",
        "SELECT * FROM s EMIT CHANGES WHERE a",
        "SELECT * FROM s WHERE a GROUP a",
        "SELECT * FROM s WINDOW TUMBLING (1 SECOND)",
        "SELECT * FROM s WINDOW HOPPING (SIZE 1 SECOND)",
        "SELECT * FROM a JOIN b",
        "SELECT * FROM a JOIN b WITHIN 5 FORTNIGHTS ON a.x = b.x",
        "SELECT * FROM a OUTER JOIN b ON a.x = b.x",
        "SELECT * FROM s HAVING a HAVING b",
        "SELECT a.b.c FROM s",
        "SELECT s.* AS x FROM s",
        "SELECT a = b = c FROM s",
        "SELECT a IS NULL IS NULL FROM s",
        "SELECT a NOT NULL FROM s",
        "SELECT a BETWEEN 1 FROM s",
        "SELECT a IN () FROM s",
        "SELECT a LIKE 'x' ESCAPE b FROM s",
        "SELECT CASE END FROM s",
        "SELECT CASE a END FROM s",
        "SELECT CAST(a) FROM s",
        "SELECT CAST(a AS FOO) FROM s",
        "SELECT f(a,) FROM s",
        "SELECT a[] FROM s",
        "SELECT a-> FROM s",
        "SELECT (a FROM s",
        "SELECT 'a' 'b' FROM s",
        "SELECT a FROM s; SELECT b FROM t",
        "SELECT a FROM s;;",
        "SELECT \"a FROM s",
        "SELECT a FROM s WHERE b = 'x",
        "CREATE STREAM s (a INT",
        "CREATE STREAM s (a)",
        "CREATE STREAM s ()",
        "CREATE STREAM s (a INT,)",
        "CREATE STREAM s (a INT KEY KEY)",
        "CREATE STREAM s (a INT HEADER)",
        "CREATE STREAM s (a INT HEADER(k))",
        "CREATE STREAM s (a DECIMAL)",
        "CREATE STREAM s (a DECIMAL(1))",
        "CREATE STREAM s (a ARRAY<>)",
        "CREATE STREAM s (a MAP<STRING>)",
        "CREATE STREAM s (a STRUCT<INT>)",
        "CREATE STREAM s WITH ()",
        "CREATE STREAM s WITH (a)",
        "CREATE STREAM s WITH (a = b)",
        "CREATE STREAM s WITH (a = 1 + 1)",
        "CREATE STREAM WITH (a = 1)",
        "CREATE STREAM s (a INT) AS SELECT * FROM t",
        "CREATE STREAM IF EXISTS s (a INT)",
        "CREATE REPLACE STREAM s (a INT)",
        "CREATE s (a INT)",
        "CREATE STREAM TABLE s (a INT)",
        "INSERT INTO s",
        "INSERT INTO s VALUES",
        "INSERT INTO s VALUES 1, 2",
        "INSERT INTO s (a) SELECT * FROM t",
        "INSERT s VALUES (1)",
        "DESCRIBE",
        "DESCRIBE EXTENDED",
        "DESCRIBE a b",
        "SHOW",
        "SHOW STREAM",
        "SHOW FOO",
        "DROP s",
        "DROP STREAM",
        "DROP STREAM s DELETE",
        "DROP STREAM IF NOT EXISTS s",
        "PRINT",
        "PRINT t FROM",
        "PRINT t LIMIT",
        "PRINT t INTERVAL x",
        "PRINT t LIMIT 1 FROM BEGINNING",
        "SET a = 'b'",
        "SET 'a' 'b'",
        "SET 'a' = b",
        "UNSET a",
        "DEFINE a = b",
        "DEFINE a 'b'",
        "DEFINE `a` = 'b'",
        "UNDEFINE",
        "EXPLAIN",
        "TERMINATE",
        "TERMINATE a b",
        "TERMINATE ALL a",
        "FROM s",
        "s",
        ";",
        "",
        "-- only a comment",
        "SELECT ${x} FROM s",
        "SELECT a # b FROM s",
        "SELECT a FROM s /* open",
    ],
)
def test_should_not_parse(text):
    with pytest.raises(SqlSyntaxError) as info:
        parse_statement(text)
    e = info.value
    assert e.line >= 1 and e.column >= 1
    assert e.excerpt.endswith("^")


# ---------------------------------------------------------------- the grammar itself
@pytest.mark.parametrize("dialect", ["ksql", "materialize"])
def test_grammar_has_no_lalr_conflicts(dialect):
    """lark resolves a shift/reduce conflict silently (as shift): keep the grammars free of them."""
    from kafkasql_magic.sql import get_dialect

    records = []

    class Collect(logging.Handler):
        def emit(self, record):
            records.append(record.getMessage())

    from lark import logger as lark_logger

    handler, level = Collect(), lark_logger.level
    lark_logger.addHandler(handler)
    lark_logger.setLevel(logging.DEBUG)
    try:
        Lark(get_dialect(dialect).grammar.read_text(), parser="lalr", lexer="basic", maybe_placeholders=True)
    finally:
        lark_logger.removeHandler(handler)
        lark_logger.setLevel(level)
    assert not [r for r in records if "conflict" in r.lower()]


def test_parser_is_built_once_and_is_lalr(monkeypatch):
    """LALR parses in time linear in the text; a parser built per statement would cost ~1 s each."""
    text = ("SELECT id, v, ROWOFFSET AS o, CASE WHEN a > 1 THEN 'x' ELSE 'y' END FROM s "
            "WHERE a BETWEEN 1 AND 10 AND b IN (1, 2, 3) EMIT CHANGES LIMIT 3;")
    parse_statement(text)
    first = KSQL.lark
    built = []
    monkeypatch.setattr(parser_module, "Lark", lambda *args, **kwargs: built.append(args))
    for _ in range(20):
        parse_statement(text)
    assert built == [] and KSQL.lark is first and first.options.parser == "lalr"


def test_ast_nodes_are_frozen_and_positions_do_not_count():
    a = parse_statement("SELECT a FROM s")
    b = parse_statement("\n\n   SELECT   a   FROM   s")
    assert a == b and (a.items[0].column, b.items[0].column) != (0, 0)
    with pytest.raises(AttributeError):
        a.limit = 3  # type: ignore[misc]
    assert isinstance(a, ast.Statement)


# ---------------------------------------------------------------- joins
def test_joins_parse_with_kind_alias_within_and_chains():
    got = parse_statement(
        "SELECT a.ROWOFFSET, b.h FROM s1 AS a LEFT OUTER JOIN s2 b WITHIN (1 MINUTE, 2 HOURS) "
        "ON a.id = b.id JOIN t ON t.k = a.k WHERE a.v > 1 EMIT CHANGES")
    on_b = BinaryOp("=", C("ID", "A"), C("ID", "B"))
    assert got.joins == (
        ast.Join("LEFT", SourceRef("S2", "B"), on_b, (60_000, 7_200_000)),
        ast.Join("INNER", SourceRef("T"), BinaryOp("=", C("K", "T"), C("K", "A"))),
    )
    assert got.source == SourceRef("S1", "A") and got.emit_changes
    assert [j.kind for j in parse_statement(
        "SELECT * FROM a INNER JOIN b ON a.x = b.x RIGHT JOIN c ON a.x = c.x FULL OUTER JOIN d ON a.x = d.x"
    ).joins] == ["INNER", "RIGHT", "FULL"]


@pytest.mark.parametrize("unit,ms", [("MILLISECOND", 1), ("milliseconds", 1), ("SECOND", 1000),
                                     ("Seconds", 1000), ("MINUTES", 60_000), ("HOUR", 3_600_000),
                                     ("DAYS", 86_400_000)])
def test_within_units_singular_and_plural(unit, ms):
    (join,) = parse_statement(f"SELECT * FROM a JOIN b WITHIN 3 {unit} ON a.x = b.x").joins
    assert join.within == (3 * ms, 3 * ms)


def test_unknown_within_unit_points_at_the_duration():
    error = syntax_error("SELECT * FROM a JOIN b WITHIN 5 FORTNIGHTS ON a.x = b.x")
    assert "Unknown time unit 'FORTNIGHTS'" in str(error)
    assert (error.line, error.column) == (1, 31)


# ---------------------------------------------------------------- windows
def test_windows_parse_after_from_and_joins():
    got = parse_statement("SELECT item, WINDOWSTART FROM s WINDOW HOPPING (SIZE 1 HOUR, ADVANCE BY 10 MINUTES) "
                          "WHERE x > 1 GROUP BY item EMIT CHANGES")
    assert got.window == ast.Window("HOPPING", 3_600_000, 600_000) and got.group_by == (C("ITEM"),)
    assert parse_statement("SELECT COUNT(*) FROM s WINDOW TUMBLING (SIZE 5 SECONDS) GROUP BY k").window == \
        ast.Window("TUMBLING", 5000)
    assert parse_statement("SELECT COUNT(*) FROM s WINDOW SESSION (30 MINUTES) GROUP BY k").window == \
        ast.Window("SESSION", 1_800_000)


def test_a_window_may_be_named_as_ksqldbs_grammar_lets_it():
    """earliest-offset-udaf.json "merging session windows": `WINDOW nWINDOW SESSION (1 SECONDS)`."""
    assert parse_statement("SELECT id, COUNT(*) FROM s WINDOW nWINDOW SESSION (1 SECONDS) GROUP BY id").window == \
        ast.Window("SESSION", 1000)
    assert parse_statement("SELECT COUNT(*) FROM s WINDOW w TUMBLING (SIZE 5 SECONDS) GROUP BY k").window == \
        ast.Window("TUMBLING", 5000)


def test_window_words_stay_identifiers():
    assert [i.expr for i in parse_statement("SELECT size, session, tumbling, hopping, advance FROM s").items] == [
        C("SIZE"), C("SESSION"), C("TUMBLING"), C("HOPPING"), C("ADVANCE")]


@pytest.mark.parametrize("text, reason", [  # ANTLR's single-token insertion, as ksqlDB reports it
    ("SELECT f1 FROM t GROUP BY f3, (f2, f1);", "missing ')' at ','"),  # group-by.json
    ("SELECT a FROM s WHERE (a = 1;", "missing ')' at ';'"),
    ("SELECT ARRAY[1, 2 FROM s;", "missing ']' at 'FROM'"),
    # where dropping the token would do, ANTLR calls it a mismatch (it tries that first)
    ("SELECT a b c FROM s;", "mismatched input 'c' expecting one of: ',', FROM"),
])
def test_a_missing_punctuation_mark_is_named(text, reason):
    assert syntax_error(text).reason == reason


def test_materialize_names_what_it_expected_instead():
    with pytest.raises(SqlSyntaxError) as info:
        parse_statement("SELECT a FROM s WHERE (a = 1", dialect="materialize")
    assert "missing" not in str(info.value)
