"""The Materialize dialect's parser: golden ASTs for every statement, format, INCLUDE and
expression form, PostgreSQL identifier rules, reserved words and positioned errors. No Spark."""

from __future__ import annotations

import pytest

from kafkasql_magic.errors import KStreamError, SqlSyntaxError
from kafkasql_magic.sql import DIALECTS, ast, get_dialect, parse, parse_statement, reserved_words
from kafkasql_magic.sql.ast import (
    And, Between, BinaryOp, Case, Cast, ColumnRef, CreateKafkaSource, CreateView, Dereference,
    Describe, Drop, FunctionCall, Include, InList, IsNull, Like, Not, Or, Select,
    SelectItem, Show, SourceFormat, SourceRef, Star, Subscribe, Subscript, UnaryOp,
)
from kafkasql_magic.sql.materialize_parser import MATERIALIZE

from parser_helpers import L, T, helpers

C = ColumnRef
F = SourceFormat


mz, expr, select, syntax_error = helpers("materialize", source="s")


KAFKA = "FROM KAFKA BROKER 'localhost:9092' TOPIC 'events'"


# ---------------------------------------------------------------- dialect selection
def test_dialect_selection():
    assert get_dialect("materialize") is MATERIALIZE is get_dialect("Materialize") is DIALECTS["materialize"]
    assert get_dialect(MATERIALIZE) is MATERIALIZE
    # ksql stays the default, with ksql's identifier rules
    assert parse_statement("SELECT id FROM s") == select(C("ID"), source="S")
    assert parse_statement("SELECT id FROM s", dialect="ksql") == select(C("ID"), source="S")
    assert mz("SELECT id FROM s") == select(C("id"))
    assert parse("SHOW SOURCES; SELECT a FROM s", dialect="materialize") == [Show("SOURCES"), select(C("a"))]
    with pytest.raises(KStreamError, match="Unknown SQL dialect 'postgres'"):
        parse_statement("SELECT 1 FROM s", dialect="postgres")


# ---------------------------------------------------------------- CREATE SOURCE
def test_create_source_every_clause():
    got = mz(
        "CREATE SOURCE IF NOT EXISTS Events (Id, \"Payload\") FROM KAFKA BROKER 'localhost:9092' "
        "TOPIC 'events' KEY FORMAT TEXT VALUE FORMAT JSON "
        "INCLUDE KEY AS k, HEADERS, PARTITION AS p, OFFSET AS o, TIMESTAMP AS ts, TOPIC AS t "
        "ENVELOPE UPSERT;"
    )
    assert got == CreateKafkaSource(
        "events", "events", ("id", "Payload"), "localhost:9092",
        key_format=F("TEXT"), value_format=F("JSON"),
        includes=(Include("KEY", "k"), Include("HEADERS"), Include("PARTITION", "p"),
                  Include("OFFSET", "o"), Include("TIMESTAMP", "ts"), Include("TOPIC", "t")),
        envelope="UPSERT", if_not_exists=True,
    )


def test_create_source_minimal_uses_the_sessions_broker():
    assert mz("create source s from kafka topic 'T-1' format bytes") == CreateKafkaSource(
        "s", "T-1", format=F("BYTES")
    )


def test_create_source_with_a_connection():
    got = mz("CREATE SOURCE s FROM KAFKA CONNECTION kafka_conn (TOPIC 'data') FORMAT TEXT")
    assert got == CreateKafkaSource("s", "data", broker=None, format=F("TEXT"), connection="kafka_conn")


@pytest.mark.parametrize(
    "text, expected",
    [
        ("TEXT", F("TEXT")),
        ("text", F("TEXT")),
        ("BYTES", F("BYTES")),
        ("JSON", F("JSON")),
        ("CSV WITH 3 COLUMNS", F("CSV", csv_columns=3)),
        ("AVRO USING SCHEMA '{\"type\": \"string\"}'", F("AVRO", avro_schema='{"type": "string"}')),
        ("AVRO USING SCHEMA 'it''s'", F("AVRO", avro_schema="it's")),
        ("AVRO USING SCHEMA 's' (CONFLUENT WIRE FORMAT = false)",
         F("AVRO", avro_schema="s", confluent_wire_format=False)),
        ("AVRO USING SCHEMA 's' (confluent wire format true)", F("AVRO", avro_schema="s")),
        ("AVRO USING CONFLUENT SCHEMA REGISTRY 'http://localhost:8081'",
         F("AVRO", registry_url="http://localhost:8081")),
        ("AVRO USING CONFLUENT SCHEMA REGISTRY CONNECTION csr_conn",
         F("AVRO", registry_url="", registry_connection="csr_conn")),
    ],
)
def test_formats(text, expected):
    assert mz(f"CREATE SOURCE s {KAFKA} FORMAT {text}").format == expected
    kv = mz(f"CREATE SOURCE s {KAFKA} KEY FORMAT {text} VALUE FORMAT {text}")
    assert (kv.key_format, kv.value_format, kv.format) == (expected, expected, None)


def test_key_and_value_formats_differ():
    got = mz(f"CREATE SOURCE s {KAFKA} KEY FORMAT BYTES VALUE FORMAT AVRO USING CONFLUENT SCHEMA REGISTRY 'u'")
    assert (got.key_format, got.value_format) == (F("BYTES"), F("AVRO", registry_url="u"))


@pytest.mark.parametrize(
    "text, expected",
    [
        ("KEY", Include("KEY")),
        ("KEY AS k", Include("KEY", "k")),
        ("HEADERS", Include("HEADERS")),
        ("HEADERS AS \"Hs\"", Include("HEADERS", "Hs")),
        ("HEADER 'trace-id' AS trace", Include("HEADER", "trace", "trace-id")),
        ("HEADER 'c' AS c BYTES", Include("HEADER", "c", "c", True)),
        ("HEADER 'b' AS bytes BYTES", Include("HEADER", "bytes", "b", True)),
        ("PARTITION", Include("PARTITION")),
        ("PARTITION AS P", Include("PARTITION", "p")),
        ("OFFSET", Include("OFFSET")),
        ("OFFSET AS \"offset\"", Include("OFFSET", "offset")),
        ("TIMESTAMP", Include("TIMESTAMP")),
        ("TIMESTAMP AS ts", Include("TIMESTAMP", "ts")),
        ("TOPIC", Include("TOPIC")),
        ("TOPIC AS topic", Include("TOPIC", "topic")),
    ],
)
def test_include_items(text, expected):
    assert mz(f"CREATE SOURCE s {KAFKA} FORMAT TEXT INCLUDE {text}").includes == (expected,)


@pytest.mark.parametrize("envelope", ["NONE", "UPSERT", "none", "upsert"])
def test_envelopes(envelope):
    got = mz(f"CREATE SOURCE s {KAFKA} FORMAT JSON INCLUDE KEY ENVELOPE {envelope}")
    assert got.envelope == envelope.upper()
    assert mz(f"CREATE SOURCE s {KAFKA} FORMAT JSON").envelope == "NONE"


# ---------------------------------------------------------------- views, SUBSCRIBE, SHOW, DROP
def test_create_view():
    query = select(C("key"), SelectItem(FunctionCall("COUNT", star=True), "n"), group_by=(C("key"),))
    text = "AS SELECT key, count(*) AS n FROM s GROUP BY key"
    assert mz(f"CREATE VIEW v {text}") == CreateView("v", query)
    assert mz(f"CREATE MATERIALIZED VIEW v {text};") == CreateView("v", query, materialized=True)
    assert mz(f"CREATE OR REPLACE MATERIALIZED VIEW IF NOT EXISTS \"V\" {text}") == CreateView(
        "V", query, materialized=True, or_replace=True, if_not_exists=True
    )
    assert mz(f"create or replace view v {text}") == CreateView("v", query, or_replace=True)


def test_subscribe():
    assert mz("SUBSCRIBE s") == Subscribe("s")
    assert mz("SUBSCRIBE TO \"MyView\";") == Subscribe("MyView")
    query = select(Star(), where=BinaryOp(">", C("v"), L(1)))
    assert mz("SUBSCRIBE (SELECT * FROM s WHERE v > 1)") == Subscribe(query=query)
    assert mz("subscribe to (select * from s where v > 1);") == Subscribe(query=query)
    assert mz("SUBSCRIBE (SELECT * FROM s WHERE v > 1)").query.emit_changes is False


@pytest.mark.parametrize(
    "text, expected",
    [
        ("SHOW SOURCES", Show("SOURCES")),
        ("show views;", Show("VIEWS")),
        ("SHOW COLUMNS FROM s", Describe("s")),
        ("SHOW COLUMNS FROM \"My Source\"", Describe("My Source")),
        ("DROP SOURCE s", Drop("SOURCE", "s")),
        ("DROP SOURCE IF EXISTS S", Drop("SOURCE", "s", True)),
        ("DROP VIEW v", Drop("VIEW", "v")),
        ("drop materialized view if exists v;", Drop("VIEW", "v", True)),
        ("DROP VIEW source", Drop("VIEW", "source")),
    ],
)
def test_show_and_drop(text, expected):
    assert mz(text) == expected


# ---------------------------------------------------------------- SELECT
def test_select_is_a_snapshot():
    got = mz("SELECT s.*, id, v AS value, ts o FROM src AS s WHERE id > 1 LIMIT 3;")
    assert got == Select(
        (Star("s"), SelectItem(C("id")), SelectItem(C("v"), "value"), SelectItem(C("ts"), "o")),
        SourceRef("src", "s"), where=BinaryOp(">", C("id"), L(1)), limit=3,
    )
    assert got.emit_changes is False


def test_select_forms():
    assert mz("SELECT * FROM s") == select(Star())
    assert mz("select a, b from s x") == select(C("a"), C("b"), source=SourceRef("s", "x"))
    assert mz("SELECT k, sum(v) FROM s GROUP BY k HAVING sum(v) > 2") == select(
        C("k"), FunctionCall("SUM", (C("v"),)), group_by=(C("k"),),
        having=BinaryOp(">", FunctionCall("SUM", (C("v"),)), L(2)),
    )


def test_materialize_column_names_are_identifiers():
    got = mz("SELECT key, headers, partition, topic, timestamp, text, data, value, source, view FROM s")
    names = ["key", "headers", "partition", "topic", "timestamp", "text", "data", "value", "source", "view"]
    assert [i.expr for i in got.items] == [C(n) for n in names]
    assert mz("SELECT s.key, s.partition FROM s").items[0].expr == C("key", "s")
    assert mz("SELECT a AS key, b partition FROM s").items[1].alias == "partition"


# ---------------------------------------------------------------- identifiers
def test_postgres_identifier_rules():
    got = mz('SELECT ID, Id, "ID", "My Col", "a""b", "offset", x."Y" AS "Alias", X.y FROM "Src"')
    assert got == select(
        C("id"), C("id"), C("ID"), C("My Col"), C('a"b'), C("offset"), SelectItem(C("Y", "x"), "Alias"),
        C("y", "x"), source="Src",
    )


def test_function_names_are_upper_cased():
    assert expr("convert_from(data, 'utf8')") == FunctionCall("CONVERT_FROM", (C("data"), L("utf8")))
    assert expr("headers_to_map(headers)") == FunctionCall("HEADERS_TO_MAP", (C("headers"),))
    assert expr('"MyFunc"(1)') == FunctionCall("MYFUNC", (L(1),))
    assert expr("COUNT(*)") == expr("count(*)") == FunctionCall("COUNT", star=True)
    assert expr("now()") == FunctionCall("NOW")
    assert expr("date(x)") == FunctionCall("DATE", (C("x"),))


def test_reserved_words():
    reserved = reserved_words("materialize")
    for word in ("SELECT", "FROM", "WHERE", "AND", "OR", "NOT", "AS", "CASE", "WHEN", "THEN", "ELSE",
                 "END", "IS", "NULL", "TRUE", "FALSE", "LIKE", "IN", "BETWEEN", "CREATE", "CAST",
                 "LIMIT", "OFFSET", "WITH", "GROUP", "HAVING", "TO", "USING", "JOIN", "ON", "ORDER"):
        assert word in reserved
    for word in ("KEY", "HEADERS", "HEADER", "TOPIC", "PARTITION", "TIMESTAMP", "TEXT", "BYTES",
                 "SOURCE", "VIEW", "VALUE", "FORMAT", "INT", "DATE", "MAP"):
        assert word not in reserved
    assert reserved != reserved_words()  # ksql's own list


@pytest.mark.parametrize("word", sorted(reserved_words("materialize")))
def test_reserved_words_need_quotes(word):
    e = syntax_error(f"SELECT a AS {word.lower()} FROM s")
    assert (e.line, e.column) == (1, 13)
    if word not in ("TRUE", "FALSE", "NULL"):  # literals there
        with pytest.raises(SqlSyntaxError):
            mz(f"SELECT {word.lower()} FROM s")
    with pytest.raises(SqlSyntaxError):
        mz(f"SELECT a FROM {word.lower()}")
    assert mz(f'SELECT "{word.lower()}" FROM "{word}"') == select(C(word.lower()), source=word)


def test_offset_needs_quotes():
    e = syntax_error("SELECT offset FROM s")
    assert (e.line, e.column) == (1, 8)
    assert e.reason == ("Expected one of '*' or an expression, found OFFSET "
                        '(OFFSET is a reserved word: quote it as "offset" to use it as a name)')
    assert mz('SELECT "offset" FROM s') == select(C("offset"))


# ---------------------------------------------------------------- types
@pytest.mark.parametrize(
    "text, expected",
    [
        ("text", T("STRING")), ("varchar", T("STRING")), ("varchar(10)", T("STRING")),
        ("string", T("STRING")), ("jsonb", T("STRING")), ("uuid", T("STRING")),
        ("bytea", T("BYTES")),
        ("int", T("INT")), ("int4", T("INT")), ("integer", T("INT")), ("smallint", T("INT")),
        ("int2", T("INT")), ("INT8", T("BIGINT")), ("bigint", T("BIGINT")),
        ("float8", T("DOUBLE")), ("double precision", T("DOUBLE")), ("float", T("DOUBLE")),
        ("real", T("DOUBLE")), ("float4", T("DOUBLE")),
        ("numeric", T("DECIMAL")), ("numeric(10)", T("DECIMAL", precision=10, scale=0)),
        ("decimal(10, 2)", T("DECIMAL", precision=10, scale=2)),
        ("boolean", T("BOOLEAN")), ("bool", T("BOOLEAN")),
        ("date", T("DATE")), ("time", T("TIME")),
        ("timestamp", T("TIMESTAMP")), ("timestamptz", T("TIMESTAMP")),
        ("timestamp with time zone", T("TIMESTAMP")), ("timestamp without time zone", T("TIMESTAMP")),
        ("int[]", T("ARRAY", element=T("INT"))),
        ("text list", T("ARRAY", element=T("STRING"))),
        ("int[][]", T("ARRAY", element=T("ARRAY", element=T("INT")))),
        ("map[text=>int]", T("MAP", key=T("STRING"), value=T("INT"))),
        ("map[text => double precision[]]", T("MAP", key=T("STRING"), value=T("ARRAY", element=T("DOUBLE")))),
    ],
)
def test_types(text, expected):
    assert expr(f"CAST(x AS {text})") == Cast(C("x"), expected)
    assert expr(f"x::{text}") == Cast(C("x"), expected)


# ---------------------------------------------------------------- literals
@pytest.mark.parametrize(
    "text, expected",
    [
        ("1", L(1)),
        ("2147483648", L(2147483648, "BIGINT")),
        ("-2147483649", L(-2147483649, "BIGINT")),
        ("-9223372036854775808", L(-9223372036854775808, "BIGINT")),
        ("9223372036854775808", L("9223372036854775808", "DECIMAL")),
        ("-99999999999999999999", L("-99999999999999999999", "DECIMAL")),
        ("1.5", L("1.5", "DECIMAL")),
        ("-1.50", L("-1.50", "DECIMAL")),
        ("1e3", L(1000.0)),
        ("2.5E-2", L(0.025)),
        ("true", L(True)),
        ("FALSE", L(False)),
        ("null", L(None)),
        ("'it''s'", L("it's")),
        ("''", L("")),
        ("DATE '2024-01-31'", Cast(L("2024-01-31"), T("DATE"))),
        ("timestamp '2024-01-31 10:00'", Cast(L("2024-01-31 10:00"), T("TIMESTAMP"))),
    ],
)
def test_literals(text, expected):
    assert expr(text) == expected


# ---------------------------------------------------------------- expressions
@pytest.mark.parametrize(
    "text, expected",
    [
        ("a OR b AND c", Or(C("a"), And(C("b"), C("c")))),
        ("NOT a AND b", And(Not(C("a")), C("b"))),
        ("NOT a = b", Not(BinaryOp("=", C("a"), C("b")))),
        ("a + b * c", BinaryOp("+", C("a"), BinaryOp("*", C("b"), C("c")))),
        ("a / b % c", BinaryOp("%", BinaryOp("/", C("a"), C("b")), C("c"))),
        ("(a + b) * c", BinaryOp("*", BinaryOp("+", C("a"), C("b")), C("c"))),
        # || binds looser than + (PostgreSQL), unlike ksql
        ("a || b + c", BinaryOp("||", C("a"), BinaryOp("+", C("b"), C("c")))),
        ("a || 'x' || b", BinaryOp("||", BinaryOp("||", C("a"), L("x")), C("b"))),
        ("a || b = c", BinaryOp("=", BinaryOp("||", C("a"), C("b")), C("c"))),
        ("-a * b", BinaryOp("*", UnaryOp("-", C("a")), C("b"))),
        ("a - -1", BinaryOp("-", C("a"), L(-1))),
        ("a = b", BinaryOp("=", C("a"), C("b"))),
        ("a <> b", BinaryOp("<>", C("a"), C("b"))),
        ("a != b", BinaryOp("<>", C("a"), C("b"))),
        ("a < b", BinaryOp("<", C("a"), C("b"))),
        ("a <= b", BinaryOp("<=", C("a"), C("b"))),
        ("a > b", BinaryOp(">", C("a"), C("b"))),
        ("a >= b", BinaryOp(">=", C("a"), C("b"))),
        ("a IS NULL", IsNull(C("a"))),
        ("a IS NOT NULL", IsNull(C("a"), True)),
        ("a = 1 IS NULL", IsNull(BinaryOp("=", C("a"), L(1)))),
        ("a LIKE 'x%'", Like(C("a"), L("x%"))),
        ("a NOT LIKE 'x!%' ESCAPE '!'", Like(C("a"), L("x!%"), True, "!")),
        ("a IN (1, 2)", InList(C("a"), (L(1), L(2)))),
        ("a NOT IN ('x')", InList(C("a"), (L("x"),), True)),
        ("a BETWEEN 1 AND 2", Between(C("a"), L(1), L(2))),
        ("a NOT BETWEEN b - 1 AND b + 1", Between(C("a"), BinaryOp("-", C("b"), L(1)), BinaryOp("+", C("b"), L(1)), True)),
        ("a BETWEEN 1 AND 2 AND b", And(Between(C("a"), L(1), L(2)), C("b"))),
        ("CASE WHEN a > 1 THEN 'big' ELSE 'small' END",
         Case(((BinaryOp(">", C("a"), L(1)), L("big")),), L("small"))),
        ("CASE a WHEN 1 THEN 'one' END", Case(((L(1), L("one")),), None, C("a"))),
        # casts: :: binds tighter than unary minus, looser than [ ]
        ("CAST(a AS text)", Cast(C("a"), T("STRING"))),
        ("a::text", Cast(C("a"), T("STRING"))),
        ("a::text::int", Cast(Cast(C("a"), T("STRING")), T("INT"))),
        ("-a::int", UnaryOp("-", Cast(C("a"), T("INT")))),
        ("a[1]::text", Cast(Subscript(C("a"), L(1)), T("STRING"))),
        ("a::text || 'x'", BinaryOp("||", Cast(C("a"), T("STRING")), L("x"))),
        ("(a::int)[1]", Subscript(Cast(C("a"), T("INT")), L(1))),
        ("convert_from(data, 'utf8')::jsonb", Cast(FunctionCall("CONVERT_FROM", (C("data"), L("utf8"))), T("STRING"))),
        # records, arrays, qualified columns
        ("s.a", C("a", "s")),
        ("(rec).f", Dereference(C("rec"), "f")),
        ("(rec).\"F\"", Dereference(C("rec"), "F")),
        ("(s.rec).f.g", Dereference(Dereference(C("rec", "s"), "f"), "g")),
        ("(rec).f[2]", Subscript(Dereference(C("rec"), "f"), L(2))),
        ("arr[1]", Subscript(C("arr"), L(1))),
        ("arr[i + 1]", Subscript(C("arr"), BinaryOp("+", C("i"), L(1)))),
        ("s.arr[1]", Subscript(C("arr", "s"), L(1))),
        ("arr[1].f", Dereference(Subscript(C("arr"), L(1)), "f")),
        ("headers[1]", Subscript(C("headers"), L(1))),
        ("f(x)[1]", Subscript(FunctionCall("F", (C("x"),)), L(1))),
        ("(f(x)).key", Dereference(FunctionCall("F", (C("x"),)), "key")),
    ],
)
def test_expressions(text, expected):
    assert expr(text) == expected


def test_comments_and_case_insensitive_keywords():
    a = mz("select a -- c\nfrom s /* x */ where a is not null limit 1")
    b = mz("SeLeCt A FrOm S wHeRe A iS nOt NuLl LiMiT 1")
    assert a == b == select(C("a"), where=IsNull(C("a"), True), limit=1)


# ---------------------------------------------------------------- positions and errors
def test_positions_are_in_the_cell():
    got = mz("SELECT a,\n  b::int AS c FROM s", line=3, column=5)
    assert (got.line, got.column) == (3, 5)
    b = got.items[1]
    assert (b.line, b.column, b.expr.line, b.expr.column) == (4, 3, 4, 3)
    created = parse("SHOW SOURCES;\n  CREATE SOURCE s FROM KAFKA TOPIC 't' FORMAT JSON INCLUDE KEY AS k",
                    dialect="materialize")[1]
    assert (created.line, created.column) == (2, 3)
    assert (created.format.line, created.format.column) == (2, 47)
    assert (created.includes[0].line, created.includes[0].column) == (2, 60)


def test_select_a_comma_from_points_at_from():
    e = syntax_error("SELECT a, FROM s")
    assert (e.line, e.column) == (1, 11)
    assert e.excerpt == "SELECT a, FROM s\n          ^"
    assert str(e).startswith("line 1:11: Expected one of '*' or an expression, found FROM")
    assert 'quote it as "from"' in e.reason


def test_error_on_line_three_of_a_cell():
    with pytest.raises(SqlSyntaxError) as info:
        parse("SHOW SOURCES;\n-- a comment\nSELECT x,\n  FROM b;", dialect="materialize")
    e = info.value
    assert (e.line, e.column) == (4, 3)
    assert e.excerpt == "  FROM b\n  ^"


def test_parse_statement_offsets_in_errors():
    e = syntax_error("SELECT a, FROM s", line=2, column=5)
    assert (e.line, e.column) == (2, 15)
    assert e.excerpt.split("\n")[1].index("^") == 14


@pytest.mark.parametrize(
    "text, line, column, reason",
    [
        ("SELECT a FROM", 1, 14, "Expected one of '(' or an identifier, found EOF"),
        ("SELECT x::1 FROM s", 1, 11, 'Expected a type, found number "1"'),
        ("CREATE SOURCE s FROM KAFKA TOPIC 't' FORMAT PARQUET", 1, 45,
         'Expected one of AVRO or BYTES or CSV or JSON or PROTOBUF or REGEX or TEXT, found identifier "PARQUET"'),
        ("CREATE SOURCE s FROM KAFKA TOPIC 't' FORMAT PROTOBUF", 1, 53, "Expected one of MESSAGE or USING, found EOF"),
        ("CREATE SOURCE s FROM KAFKA TOPIC 't'", 1, 37, "Expected one of FORMAT or KEY, found EOF"),
        ("CREATE SOURCE s FROM KAFKA TOPIC t FORMAT TEXT", 1, 34, 'Expected a string, found identifier "t"'),
        ("CREATE SOURCE s FROM KAFKA TOPIC 't' FORMAT CSV WITH x COLUMNS", 1, 54,
         'Expected a number, found identifier "x"'),
        ("SELECT * FROM s LIMIT 'x'", 1, 23, "Expected a number, found string literal 'x'"),
        ("SHOW STREAMS", 1, 6, 'Expected one of COLUMNS or CONNECTIONS or CREATE or SECRETS or SINKS or SOURCES or TABLES or TYPES or VIEWS, '
                         'found identifier "STREAMS"'),
        # FROM is optional (a SELECT without it reads one row), so every clause may follow
        ("SELECT a b c FROM s", 1, 12, "Expected one of ',' or ';' or FROM or GROUP or HAVING or LIMIT or ORDER or "
                                       'WHERE or end of statement, found identifier "c"'),
        ("SELECT a #", 1, 10, "unexpected character '#'"),
    ],
)
def test_error_messages(text, line, column, reason):
    e = syntax_error(text)
    assert (e.line, e.column, e.reason) == (line, column, reason)
    assert e.excerpt.split("\n")[1] == " " * (column - 1) + "^"


def test_record_field_without_parentheses_gets_a_hint():
    e = syntax_error("SELECT a.b.c FROM s")
    assert (e.line, e.column) == (1, 11)
    assert "write (a.b).c" in e.reason
    assert "write" not in syntax_error("CREATE SOURCE a.b FROM KAFKA TOPIC 't' FORMAT TEXT").reason


def test_error_messages_name_sql_terms_not_lark_terminals():
    for text in ["SELECT a FROM s WHERE", "SELECT CAST(a AS) FROM s", "CREATE SOURCE s", "SUBSCRIBE",
                 "DROP", "", "SELECT a FROM s ORDER BY", "CREATE VIEW v AS SHOW SOURCES"]:
        reason = syntax_error(text).reason
        for lark_name in ("NAME", "STRING_LITERAL", "INTEGER_VALUE", "LPAR", "__ANON", "$END", "RULE"):
            assert lark_name not in reason, (text, reason)
    assert "a statement" in syntax_error("").reason


def test_unterminated_string():
    e = syntax_error("SELECT a FROM s\nWHERE v = 'abc")
    assert (e.line, e.column) == (2, 11) and "unterminated string" in e.reason


# ---------------------------------------------------------------- must not parse
@pytest.mark.parametrize(
    "text",
    [
        # ksql-only syntax
        "SELECT * FROM s EMIT CHANGES",
        "SELECT a-> FROM s",
        "SELECT `a` FROM s",
        "CREATE STREAM s (a INT) WITH (kafka_topic='t')",
        "SELECT * FROM s PARTITION BY a",
        # CREATE SOURCE
        "CREATE SOURCE s FROM KAFKA TOPIC 't'",
        "CREATE SOURCE s FROM KAFKA BROKER 'b' FORMAT TEXT",
        "CREATE SOURCE s FROM KAFKA TOPIC 't' FORMAT CSV",
        "CREATE SOURCE s FROM KAFKA TOPIC 't' FORMAT AVRO",
        "CREATE SOURCE s FROM KAFKA TOPIC 't' FORMAT AVRO USING CONFLUENT SCHEMA REGISTRY",
        "CREATE SOURCE s FROM KAFKA TOPIC 't' KEY FORMAT TEXT",
        "CREATE SOURCE s FROM KAFKA TOPIC 't' VALUE FORMAT TEXT",
        "CREATE SOURCE s FROM KAFKA TOPIC 't' FORMAT TEXT INCLUDE",
        "CREATE SOURCE s FROM KAFKA TOPIC 't' FORMAT TEXT INCLUDE KEY k",
        "CREATE SOURCE s FROM KAFKA TOPIC 't' FORMAT TEXT INCLUDE HEADER 'x'",
        "CREATE SOURCE s FROM KAFKA TOPIC 't' FORMAT TEXT INCLUDE HEADER x AS y",
        "CREATE SOURCE s FROM KAFKA TOPIC 't' FORMAT TEXT INCLUDE KEY AS k BYTES",
        "CREATE SOURCE s FROM KAFKA TOPIC 't' FORMAT TEXT INCLUDE VALUE",
        "CREATE SOURCE s FROM KAFKA TOPIC 't' FORMAT TEXT ENVELOPE DEBEZIUM (x)",
        "CREATE SOURCE s FROM KAFKA TOPIC 't' FORMAT TEXT ENVELOPE UPSERT INCLUDE KEY",
        "CREATE SOURCE s () FROM KAFKA TOPIC 't' FORMAT TEXT",
        "CREATE SOURCE s (a INT) FROM KAFKA TOPIC 't' FORMAT TEXT",
        "CREATE SOURCE s FROM KAFKA CONNECTION c TOPIC 't' FORMAT TEXT",
        "CREATE OR REPLACE SOURCE s FROM KAFKA TOPIC 't' FORMAT TEXT",
        # views, SUBSCRIBE, SHOW, DROP
        "CREATE VIEW v",
        "CREATE VIEW v AS",
        "CREATE MATERIALIZED v AS SELECT * FROM s",
        "CREATE VIEW v SELECT * FROM s",
        "SUBSCRIBE",
        "SUBSCRIBE TO",
        "SUBSCRIBE (SHOW SOURCES)",
        "SUBSCRIBE SELECT * FROM s",
        "SUBSCRIBE (SELECT * FROM s",
        "SHOW",
        "SHOW COLUMNS s",
        "DROP s",
        "DROP TABLES s",
        "DROP SOURCE",
        "DROP SOURCE IF NOT EXISTS s",
        # SELECT and expressions
        "SELECT a, FROM s",
        "SELECT FROM s",
        "SELECT a FROM s,",
        "SELECT a FROM s t u",
        "SELECT * FROM s LIMIT -1",
        "SELECT * FROM s LIMIT 1 WHERE a",
        "SELECT offset FROM s",
        "SELECT a AS offset FROM s",
        "SELECT a.b.c FROM s",
        "SELECT rec.f.g FROM s",
        "SELECT a = b = c FROM s",
        "SELECT a IS NULL IS NULL FROM s",
        "SELECT a ILIKE 'x' FROM s",
        "SELECT a IN () FROM s",
        "SELECT a::foo.bar FROM s",
        "SELECT a:: FROM s",
        "SELECT a::int[1] FROM s",
        "SELECT CAST(a) FROM s",
        "SELECT CAST(a AS decimal(1,)) FROM s",
        "SELECT a::map[text] FROM s",
        "SELECT x::int list FROM s; SELECT 1 FROM t",
        "SELECT a list FROM s",
        "SELECT f(a,) FROM s",
        "SELECT a[] FROM s",
        "SELECT CASE END FROM s",
        "SELECT \"a FROM s",
        "SELECT a FROM s;;",
        "",
        ";",
        "-- only a comment",
    ],
)
def test_should_not_parse(text):
    with pytest.raises(SqlSyntaxError) as info:
        mz(text)
    e = info.value
    assert e.line >= 1 and e.column >= 1
    assert e.excerpt.endswith("^")


# ---------------------------------------------------------------- the grammar itself
def test_parser_is_built_once():
    assert MATERIALIZE.lark is MATERIALIZE.lark
    assert MATERIALIZE.lark is not get_dialect("ksql").lark


def test_joins_parse_without_within():
    got = mz("SELECT a.id, b.v FROM src a LEFT JOIN other AS b ON a.id = b.id")
    assert got.joins == (ast.Join("LEFT", SourceRef("other", "b"),
                                  BinaryOp("=", ColumnRef("id", "a"), ColumnRef("id", "b"))),)
    assert 'Expected ON, found number "5"' == syntax_error("SELECT * FROM a JOIN b WITHIN 5 SECONDS ON a.x = b.x").reason


def test_a_list_literal_is_a_list_and_unnest_a_function_over_it():
    stmt = parse_statement("SELECT unnest(LIST[1, 2]), list [3] FROM t", dialect="materialize")
    unnest, bare = (item.expr for item in stmt.items)
    assert unnest == ast.FunctionCall("UNNEST", (ast.FunctionCall("ARRAY", (L(1), L(2))),))
    assert bare == ast.FunctionCall("ARRAY", (L(3),))  # LIST[...] is a list, as in Materialize


def test_unnest_in_from_is_a_subquery_of_one_row_named_as_its_alias():
    stmt = parse_statement("SELECT u * 10 FROM unnest(LIST[1, 2]) AS u", dialect="materialize")
    assert stmt.source.alias == "u"
    (item,) = stmt.source.query.items
    assert (item.expr.name, item.alias, stmt.source.query.source.name) == ("UNNEST", "u", "__one_row")
    bare = parse_statement("SELECT * FROM unnest(LIST[1])", dialect="materialize").source
    assert (bare.alias, bare.query.items[0].alias) == (None, "unnest")
    for text in ("SELECT * FROM generate_series(1, 3)", "SELECT * FROM unnest(LIST[1], LIST[2])"):
        with pytest.raises(SqlSyntaxError, match="line 1:15: table function .* is not supported: only unnest"):
            parse_statement(text, dialect="materialize")


def test_unnest_beside_the_first_from_item_is_a_subquery_of_its_rows_and_their_elements():
    from kafkasql_magic.sql.ast_materialize import Subquery
    from kafkasql_magic.sql.render_statements import render_statement

    got = MATERIALIZE.parse_statement("SELECT t.id, u FROM t, unnest(t.l) AS u JOIN s ON t.id = s.id WHERE u > 1")
    assert got.source == Subquery(ast.Select(
        items=(ast.Star("t"), ast.SelectItem(ast.FunctionCall("UNNEST", (ast.ColumnRef("l", "t"),)), "u")),
        source=ast.SourceRef("t")), "t")
    assert [j.source for j in got.joins] == [ast.SourceRef("s")] and got.where is not None
    aliased = MATERIALIZE.parse_statement("SELECT unnest FROM src AS a, unnest(a.headers)")
    assert aliased.source.alias == "a" and aliased.source.query.items[1].alias == "unnest"
    assert MATERIALIZE.parse_statement(render_statement(got, "materialize")) == got
    with pytest.raises(SqlSyntaxError, match=r"line 1:25: a subquery before unnest\(...\) in FROM needs an alias"):
        MATERIALIZE.parse_statement("SELECT * FROM (SELECT 1), unnest(LIST[1])")


def test_several_unnests_beside_the_first_from_item_nest_in_order_and_their_relations_qualify():
    from kafkasql_magic.sql.ast_materialize import Subquery

    got = MATERIALIZE.parse_statement("SELECT u.u, (unnest.unnest).k FROM t, unnest(t.l) AS u, unnest(t.m) "
                                      "WHERE u.u > 1 ORDER BY u.u")
    first = Subquery(ast.Select(items=(ast.Star("t"), ast.SelectItem(
        ast.FunctionCall("UNNEST", (ast.ColumnRef("l", "t"),)), "u")), source=ast.SourceRef("t")), "t")
    assert got.source == Subquery(ast.Select(items=(ast.Star("t"), ast.SelectItem(
        ast.FunctionCall("UNNEST", (ast.ColumnRef("m", "t"),)), "unnest")), source=first), "t")
    u = ast.ColumnRef("u", "t")  # u.u: the element column of relation u, a column of t's rows now
    assert got.items[0].expr == u and got.where.left == u and got.order_by[0].expr == u
    assert ast.ColumnRef("unnest", "t") in list(ast.walk(got.items[1].expr))


def test_left_and_right_are_functions_in_an_expression_and_join_words_after_a_from_item():
    stmt = parse_statement("SELECT left(t.a, 2), RIGHT('ab', -1) FROM t LEFT JOIN u ON t.a = u.a "
                           "RIGHT JOIN v ON t.a = v.a", dialect="materialize")
    assert [i.expr.name for i in stmt.items] == ["LEFT", "RIGHT"]
    assert stmt.items[1].expr.args == (ast.Literal("ab", "STRING"), ast.Literal(-1, "INT"))
    assert [j.kind for j in stmt.joins] == ["LEFT", "RIGHT"]
