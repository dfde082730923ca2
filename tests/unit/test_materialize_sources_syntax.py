"""Materialize's current source syntax and the query forms over it: secrets, connections,
FROM KAFKA CONNECTION options, CREATE TABLE ... FROM SOURCE, REGEX, DEBEZIUM, UPSERT inline
errors, ORDER BY, subqueries in FROM and `map -> key`. Golden ASTs and positioned errors; no Spark."""

from __future__ import annotations

import pytest

from kafkasql_magic.errors import SqlSyntaxError
from kafkasql_magic.sql import parse_statement, reserved_words
from kafkasql_magic.sql.render import render
from kafkasql_magic.sql.ast import (
    FunctionCall, BinaryOp, ColumnRef, CreateKafkaSource, Drop, Include, Join, Literal, Select, SelectItem, Show,
    SourceFormat, SourceRef, Star,
)
from kafkasql_magic.sql.ast_materialize import (
    ConnectionOption, CreateConnection, CreateSecret, CreateSourceTable, MapLookup, OrderedCall, SortKey,
    Subquery, base_relation,
)
from kafkasql_magic.sql.materialize_parser import MATERIALIZE

C = ColumnRef
F = SourceFormat
O = ConnectionOption


def mz(text):
    """The dialect's own parse: every form, including those the engine does not run yet."""
    return MATERIALIZE.parse_statement(text)


def syntax_error(text) -> SqlSyntaxError:
    with pytest.raises(SqlSyntaxError) as info:
        mz(text)
    return info.value


def where(e: SqlSyntaxError):
    return e.line, e.column, e.reason


def select(*items, source="s", **kw):
    items = tuple(i if isinstance(i, (Star, SelectItem)) else SelectItem(i) for i in items)
    return Select(items, source if not isinstance(source, str) else SourceRef(source), **kw)


# ---------------------------------------------------------------- CREATE SECRET
def test_create_secret():
    assert mz("CREATE SECRET kafka_password AS 'hunter2'") == CreateSecret("kafka_password", "hunter2")
    assert mz("create secret if not exists \"Pw\" as 'it''s'") == CreateSecret("Pw", "it's", True)


def test_a_secret_never_shows_in_a_repr():
    statement = mz("CREATE SECRET pw AS 'hunter2'")
    assert "hunter2" not in repr(statement) and "hunter2" not in str(statement)
    assert statement.value == "hunter2"


def test_create_secret_needs_a_string():
    assert where(syntax_error("CREATE SECRET pw AS hunter2")) == (
        1, 21, 'Expected a string, found identifier "hunter2"')
    assert where(syntax_error("CREATE SECRET pw 'x'")) == (1, 18, "Expected AS, found string literal 'x'")


# ---------------------------------------------------------------- CREATE CONNECTION
def test_kafka_connection_every_option():
    got = mz(
        "CREATE CONNECTION IF NOT EXISTS kafka_conn TO KAFKA (\n"
        "  BROKER 'broker:9092',\n"
        "  SECURITY PROTOCOL = 'SASL_SSL',\n"
        "  SASL MECHANISMS = 'SCRAM-SHA-256',\n"
        "  SASL USERNAME = 'alice',\n"
        "  SASL PASSWORD = SECRET kafka_password,\n"
        "  SSL CERTIFICATE AUTHORITY = SECRET ca,\n"
        "  SSL CERTIFICATE = '-----BEGIN CERTIFICATE-----',\n"
        "  SSL KEY = SECRET client_key\n"
        ")"
    )
    assert got == CreateConnection("kafka_conn", "KAFKA", (
        O("BROKER", "broker:9092"),
        O("SECURITY PROTOCOL", "SASL_SSL"),
        O("SASL MECHANISMS", "SCRAM-SHA-256"),
        O("SASL USERNAME", "alice"),
        O("SASL PASSWORD", secret="kafka_password"),
        O("SSL CERTIFICATE AUTHORITY", secret="ca"),
        O("SSL CERTIFICATE", "-----BEGIN CERTIFICATE-----"),
        O("SSL KEY", secret="client_key"),
    ), if_not_exists=True)
    assert [(o.line, o.column) for o in got.options[:2]] == [(2, 3), (3, 3)]


def test_kafka_connection_words_equals_signs_and_brokers():
    got = mz("CREATE CONNECTION k TO KAFKA (BROKERS ('a:1', 'b:2'), SECURITY PROTOCOL sasl_plaintext, "
             "SASL MECHANISMS PLAIN, SASL USERNAME SECRET u, SASL PASSWORD SECRET p)")
    assert got.options == (
        O("BROKERS", "a:1,b:2"), O("SECURITY PROTOCOL", "SASL_PLAINTEXT"), O("SASL MECHANISMS", "PLAIN"),
        O("SASL USERNAME", secret="u"), O("SASL PASSWORD", secret="p"),
    )
    assert mz("CREATE CONNECTION k TO KAFKA (SECURITY PROTOCOL = SSL)").options == (O("SECURITY PROTOCOL", "SSL"),)


def test_connection_validate_option():
    got = mz("CREATE CONNECTION k TO KAFKA (BROKER 'b') WITH (VALIDATE = false)")
    assert got == CreateConnection("k", "KAFKA", (O("BROKER", "b"),), validate=False)
    assert mz("CREATE CONNECTION k TO KAFKA (BROKER 'b') WITH (VALIDATE true)").validate is True
    assert mz("CREATE CONNECTION k TO KAFKA (BROKER 'b')").validate is True
    assert where(syntax_error("CREATE CONNECTION k TO KAFKA (BROKER 'b') WITH (CHECK = false)")) == (
        1, 49, 'Expected VALIDATE, found identifier "CHECK"')


def test_schema_registry_connection():
    got = mz("CREATE CONNECTION csr TO CONFLUENT SCHEMA REGISTRY "
             "(URL 'http://registry:8081', USERNAME = SECRET csr_user, PASSWORD = SECRET csr_password)")
    assert got == CreateConnection("csr", "CONFLUENT SCHEMA REGISTRY", (
        O("URL", "http://registry:8081"), O("USERNAME", secret="csr_user"), O("PASSWORD", secret="csr_password"),
    ))
    assert mz("CREATE CONNECTION csr TO CONFLUENT SCHEMA REGISTRY (URL = 'u', USERNAME 'me')").options == (
        O("URL", "u"), O("USERNAME", "me"))


@pytest.mark.parametrize(
    "text, line, column, reason",
    [
        ("CREATE CONNECTION k TO KAFKA (BROKER 'a', BROKER 'b')", 1, 43, "BROKER specified more than once"),
        ("CREATE CONNECTION k TO KAFKA (SASL PASSWORD SECRET p,\n SASL PASSWORD SECRET q)", 2, 2,
         "SASL PASSWORD specified more than once"),
        ("CREATE CONNECTION k TO KAFKA ()", 1, 31,
         "Expected one of BROKER or BROKERS or PASSWORD or SASL or SECURITY or SSL or URL or USERNAME, "
         "found ')'"),
        ("CREATE CONNECTION k TO POSTGRES (HOST 'h')", 1, 24,
         'Expected one of CONFLUENT or KAFKA, found identifier "POSTGRES"'),
        ("CREATE CONNECTION k TO KAFKA (BROKER broker)", 1, 38, "Expected one of '=' or a string, found BROKER"),
        ("CREATE CONNECTION k TO KAFKA (SASL PASSWORD = SECRET)", 1, 53, "Expected an identifier, found ')'"),
        ("CREATE CONNECTION k TO KAFKA BROKER 'b'", 1, 30, "Expected '(', found BROKER"),
    ],
)
def test_connection_errors(text, line, column, reason):
    assert where(syntax_error(text)) == (line, column, reason)


# ---------------------------------------------------------------- FROM KAFKA CONNECTION
def test_source_over_a_connection_keeps_its_name_and_start_options():
    got = mz("CREATE SOURCE s FROM KAFKA CONNECTION kafka_conn (TOPIC 'events', START OFFSET (0, 10, 20)) "
             "FORMAT TEXT")
    assert got == CreateKafkaSource("s", "events", format=F("TEXT"), connection="kafka_conn",
                                    start_offsets=(0, 10, 20))
    got = mz("CREATE SOURCE s FROM KAFKA CONNECTION k (TOPIC 't', START OFFSET=[1,0]) FORMAT BYTES")
    assert got.start_offsets == (1, 0)
    assert where(syntax_error("CREATE SOURCE s FROM KAFKA CONNECTION k (TOPIC 't', START OFFSET=[1)"))[:2] == (
        1, 68)
    got = mz("CREATE SOURCE s FROM KAFKA CONNECTION k (TOPIC = 'e', START TIMESTAMP = -3600000) FORMAT BYTES")
    assert (got.connection, got.start_timestamp, got.start_offsets) == ("k", -3600000, None)
    got = mz("CREATE SOURCE s FROM KAFKA CONNECTION k (TOPIC 'e', START TIMESTAMP 1700000000000, "
             "GROUP ID PREFIX 'mz-') FORMAT BYTES")
    assert got.start_timestamp == 1700000000000


def test_source_without_a_format_is_materializes_current_syntax():
    assert mz("CREATE SOURCE IF NOT EXISTS s FROM KAFKA CONNECTION k (TOPIC 'events')") == CreateKafkaSource(
        "s", "events", connection="k", if_not_exists=True)
    # the legacy BROKER form still needs its format
    assert where(syntax_error("CREATE SOURCE s FROM KAFKA BROKER 'b' TOPIC 't'")) == (
        1, 48, "Expected one of FORMAT or KEY, found EOF")


@pytest.mark.parametrize(
    "text, line, column, reason",
    [
        ("CREATE SOURCE s FROM KAFKA CONNECTION k (START OFFSET (1))", 1, 28, "KAFKA CONNECTION without TOPIC"),
        ("CREATE SOURCE s FROM KAFKA CONNECTION k (TOPIC 'a', TOPIC 'b')", 1, 53, "TOPIC specified more than once"),
        ("CREATE SOURCE s FROM KAFKA CONNECTION k (TOPIC 'a', START OFFSET (1), START TIMESTAMP -5)", 1, 28,
         "cannot specify START TIMESTAMP and START OFFSET at same time"),
        ("CREATE SOURCE s FROM KAFKA CONNECTION k (TOPIC 'a', START OFFSET ())", 1, 67,
         "Expected a number, found ')'"),
        ("CREATE SOURCE s FROM KAFKA CONNECTION k (TOPIC 'a', START OFFSET (-1))", 1, 67,
         "Expected a number, found '-'"),
        ("CREATE SOURCE s FROM KAFKA CONNECTION k (TOPIC 'a', START TIMESTAMP 'x')", 1, 69,
         "Expected one of '-' or '=' or a number, found string literal 'x'"),
        ("CREATE SOURCE s FROM KAFKA CONNECTION k TOPIC 'a'", 1, 41, "Expected '(', found TOPIC"),
    ],
)
def test_connection_source_errors(text, line, column, reason):
    assert where(syntax_error(text)) == (line, column, reason)


def test_registry_connection_is_named():
    got = mz("CREATE SOURCE s FROM KAFKA CONNECTION k (TOPIC 't') "
             "KEY FORMAT TEXT VALUE FORMAT AVRO USING CONFLUENT SCHEMA REGISTRY CONNECTION csr_conn")
    assert got.value_format == F("AVRO", registry_url="", registry_connection="csr_conn")
    assert got.key_format == F("TEXT")


# ---------------------------------------------------------------- CREATE TABLE ... FROM SOURCE
def test_create_table_from_source_every_clause():
    got = mz(
        'CREATE TABLE IF NOT EXISTS t (k, v) FROM SOURCE kafka_src (REFERENCE "Events") '
        "KEY FORMAT TEXT VALUE FORMAT JSON INCLUDE KEY AS key_col, PARTITION, HEADER 'h' AS h BYTES "
        "ENVELOPE UPSERT"
    )
    assert got == CreateSourceTable(
        "t", "kafka_src", "Events", ("k", "v"), key_format=F("TEXT"), value_format=F("JSON"),
        includes=(Include("KEY", "key_col"), Include("PARTITION"), Include("HEADER", "h", "h", True)),
        envelope="UPSERT", if_not_exists=True,
    )
    assert (got.line, got.column) == (1, 1)


def test_create_table_from_source_minimal_and_bare_format():
    assert mz("CREATE TABLE t FROM SOURCE s FORMAT JSON") == CreateSourceTable("t", "s", format=F("JSON"))
    assert mz("CREATE TABLE t FROM SOURCE s") == CreateSourceTable("t", "s")
    assert mz("CREATE TABLE t FROM SOURCE s (REFERENCE = events)") == CreateSourceTable("t", "s", "events")
    assert mz("CREATE TABLE t FROM SOURCE s (REFERENCE events) FORMAT BYTES") == CreateSourceTable(
        "t", "s", "events", format=F("BYTES"))


@pytest.mark.parametrize(
    "text, line, column, reason",
    [
        ("CREATE TABLE t FROM SOURCE s (TOPIC 'x')", 1, 31, "Expected REFERENCE, found TOPIC"),
        ("CREATE TABLE t FROM SOURCE s (REFERENCE x", 1, 42, "Expected ')', found EOF"),
        ("CREATE TABLE t FROM s (REFERENCE x)", 1, 21, 'Expected SOURCE, found identifier "s"'),
        # typed columns make a writable table (statements/tables.py), which reads no source
        ("CREATE TABLE t (a int) FROM SOURCE s (REFERENCE x)", 1, 24,
         "Expected one of ';' or end of statement, found FROM"),
    ],
)
def test_create_table_errors(text, line, column, reason):
    assert where(syntax_error(text)) == (line, column, reason)


# ---------------------------------------------------------------- formats and envelopes
def test_format_regex_keeps_the_pattern_as_written():
    got = mz(r"CREATE SOURCE s FROM KAFKA BROKER 'b' TOPIC 't' FORMAT REGEX '(?P<ip>\d+\.\d+) (?P<path>[^ ]+)'")
    assert got.format == F("REGEX", regex=r"(?P<ip>\d+\.\d+) (?P<path>[^ ]+)")
    assert where(syntax_error("CREATE SOURCE s FROM KAFKA TOPIC 't' FORMAT REGEX x")) == (
        1, 51, 'Expected a string, found identifier "x"')


def test_envelope_debezium():
    got = mz("CREATE SOURCE s FROM KAFKA TOPIC 't' FORMAT JSON ENVELOPE DEBEZIUM")
    assert (got.envelope, got.value_errors_column) == ("DEBEZIUM", None)


@pytest.mark.parametrize(
    "clause, column",
    [
        ("ENVELOPE UPSERT", None),
        ("ENVELOPE UPSERT (VALUE DECODING ERRORS = INLINE)", "error"),
        ("ENVELOPE UPSERT (VALUE DECODING ERRORS = (INLINE))", "error"),
        ("ENVELOPE UPSERT (VALUE DECODING ERRORS = (INLINE AS decode_err))", "decode_err"),
        ("envelope upsert (value decoding errors = inline as \"Err\")", "Err"),
    ],
)
def test_envelope_upsert_value_decoding_errors(clause, column):
    got = mz(f"CREATE SOURCE s FROM KAFKA TOPIC 't' KEY FORMAT TEXT VALUE FORMAT JSON {clause}")
    assert (got.envelope, got.value_errors_column) == ("UPSERT", column)


def test_envelope_errors():
    assert where(syntax_error("CREATE SOURCE s FROM KAFKA TOPIC 't' FORMAT TEXT ENVELOPE UPSERT (VALUE DECODING "
                              "ERRORS = FAIL)")) == (1, 91, 'Expected one of \'(\' or INLINE, found identifier "FAIL"')
    assert where(syntax_error("CREATE SOURCE s FROM KAFKA TOPIC 't' FORMAT TEXT ENVELOPE MAGIC")) == (
        1, 59, 'Expected one of DEBEZIUM or NONE or UPSERT, found identifier "MAGIC"')


# ---------------------------------------------------------------- SHOW and DROP
@pytest.mark.parametrize("what", ["SECRETS", "CONNECTIONS", "TABLES"])
def test_show(what):
    assert mz(f"SHOW {what.lower()}") == Show(what)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("DROP SECRET pw", Drop("SECRET", "pw")),
        ("DROP SECRET IF EXISTS pw", Drop("SECRET", "pw", True)),
        ("DROP CONNECTION kafka_conn", Drop("CONNECTION", "kafka_conn")),
        ("DROP CONNECTION IF EXISTS \"K\"", Drop("CONNECTION", "K", True)),
        ("DROP TABLE t", Drop("TABLE", "t")),
    ],
)
def test_drop(text, expected):
    assert mz(text) == expected


# ---------------------------------------------------------------- ORDER BY
def test_order_by_defaults_follow_postgresql():
    got = mz("SELECT a, b FROM s ORDER BY a, b DESC, c ASC NULLS FIRST, d DESC NULLS LAST LIMIT 5")
    assert got == select(C("a"), C("b"), limit=5, order_by=(
        SortKey(C("a"), False, False),
        SortKey(C("b"), True, True),
        SortKey(C("c"), False, True),
        SortKey(C("d"), True, False),
    ))
    assert (got.order_by[1].line, got.order_by[1].column) == (1, 32)


def test_order_by_expressions_and_clauses_around_it():
    got = mz("SELECT k, count(*) AS n FROM s WHERE v > 1 GROUP BY k HAVING count(*) > 2 ORDER BY n * -1, 1")
    assert got.order_by == (
        SortKey(BinaryOp("*", C("n"), Literal(-1, "INT"))),
        SortKey(Literal(1, "INT")),
    )
    assert got.having is not None and got.group_by == (C("k"),)


@pytest.mark.parametrize(
    "text, line, column, reason",
    [
        ("SELECT a FROM s ORDER a", 1, 23, 'Expected BY, found identifier "a"'),
        ("SELECT a FROM s ORDER BY", 1, 25, "Expected an expression, found EOF"),
        ("SELECT a FROM s ORDER BY a NULLS", 1, 33, "Expected one of FIRST or LAST, found EOF"),
        ("SELECT a FROM s LIMIT 1 ORDER BY a", 1, 25, "Expected one of ';' or end of statement, found ORDER"),
        ("SELECT a FROM s ORDER BY a DESC ASC", 1, 33,
         "Expected one of ',' or ';' or LIMIT or NULLS or end of statement, found ASC"),
    ],
)
def test_order_by_errors(text, line, column, reason):
    assert where(syntax_error(text)) == (line, column, reason)


def test_order_and_sort_directions_are_reserved():
    for word in ("ORDER", "ASC", "DESC"):
        assert word in reserved_words("materialize")
    for word in ("NULLS", "FIRST", "LAST", "SECRET", "REGEX", "START", "REFERENCE"):
        assert word not in reserved_words("materialize")
    assert mz("SELECT first, last, nulls FROM s") == select(C("first"), C("last"), C("nulls"))
    assert where(syntax_error("SELECT desc FROM s"))[:2] == (1, 8)


# ---------------------------------------------------------------- subqueries in FROM
def test_subquery_in_from():
    inner = select(C("id"), C("v"), source="src", order_by=(SortKey(C("v")),), limit=3)
    for text in ("SELECT * FROM (SELECT id, v FROM src ORDER BY v LIMIT 3) AS top",
                 "SELECT * FROM (SELECT id, v FROM src ORDER BY v LIMIT 3) top"):
        assert mz(text) == select(Star(), source=Subquery(inner, "top"))
    assert mz("SELECT * FROM (SELECT id, v FROM src ORDER BY v LIMIT 3)") == select(
        Star(), source=Subquery(inner))


def test_subqueries_in_joins_and_nested():
    got = mz("SELECT a.id FROM (SELECT id FROM (SELECT id FROM s) x) a "
             "JOIN (SELECT id FROM t) AS b ON a.id = b.id")
    nested = select(C("id"), source=Subquery(select(C("id")), "x"))
    assert got.source == Subquery(nested, "a")
    assert got.joins == (Join("INNER", Subquery(select(C("id"), source="t"), "b"),
                              BinaryOp("=", C("id", "a"), C("id", "b"))),)
    assert (got.source.line, got.source.column) == (1, 18)


@pytest.mark.parametrize(
    "text, line, column, reason",
    [
        ("SELECT * FROM (SELECT a FROM s", 1, 31, "Expected one of ')' or ',' or GROUP or HAVING or "
                                                   "INNER or JOIN or LEFT or ORDER or RIGHT or FULL or LIMIT "
                                                   "or WHERE, found EOF"),
        ("SELECT * FROM (s)", 1, 16, 'Expected SELECT, found identifier "s"'),
        ("SELECT * FROM (SELECT a FROM s) AS", 1, 35, "Expected an identifier, found EOF"),
    ],
)
def test_subquery_errors(text, line, column, reason):
    e = syntax_error(text)
    assert (e.line, e.column) == (line, column)
    assert e.reason.split(", found")[1] == reason.split(", found")[1]


# ---------------------------------------------------------------- the map operator
def test_map_operator():
    got = mz("SELECT headers_map -> 'trace-id' AS t FROM s")
    assert got.items[0] == SelectItem(MapLookup(C("headers_map"), Literal("trace-id", "STRING")), "t")
    # left-associative, at the level of || (tighter than comparisons, looser than + and ::)
    assert mz("SELECT m -> 'a' -> 'b' FROM s").items[0].expr == MapLookup(
        MapLookup(C("m"), Literal("a", "STRING")), Literal("b", "STRING"))
    assert mz("SELECT m -> k || 'x' = 'v' FROM s").items[0].expr == BinaryOp(
        "=", BinaryOp("||", MapLookup(C("m"), C("k")), Literal("x", "STRING")), Literal("v", "STRING"))
    assert mz("SELECT m -> 'a' + 1 FROM s").items[0].expr == MapLookup(
        C("m"), BinaryOp("+", Literal("a", "STRING"), Literal(1, "INT")))
    assert mz("SELECT (r).m -> 'a' FROM s").items[0].expr.base.field == "m"


def test_map_operator_errors():
    e = syntax_error("SELECT m -> FROM s")
    assert (e.line, e.column) == (1, 13)
    assert e.reason.startswith("Expected an expression, found FROM")
    assert where(syntax_error("SELECT m -> 'a' -> FROM s"))[:2] == (1, 20)


def test_order_by_inside_an_aggregate_call():
    got = mz("SELECT map_agg(k, v ORDER BY ts DESC, o) AS m, list_agg(v ORDER BY o) FROM s GROUP BY g")
    assert got.items[0].expr == OrderedCall(FunctionCall("MAP_AGG", (C("k"), C("v"))),
                                            (SortKey(C("ts"), True, True), SortKey(C("o"))))
    assert got.items[1].expr == OrderedCall(FunctionCall("LIST_AGG", (C("v"),)), (SortKey(C("o")),))
    assert where(syntax_error("SELECT map_agg(ORDER BY o) FROM s"))[:2] == (1, 16)
    assert render(got.items[0].expr) == "MAP_AGG(`k`, `v` ORDER BY `ts` DESC NULLS FIRST, `o` NULLS LAST)"


def test_ksql_dialect_is_unaffected():
    with pytest.raises(SqlSyntaxError):
        parse_statement("SELECT a FROM s ORDER BY a")
    with pytest.raises(SqlSyntaxError):
        parse_statement("CREATE SECRET s AS 'x'")
    assert parse_statement("SELECT a->b FROM s").items[0].expr.field == "B"


# ---------------------------------------------------------------- through the package
def test_what_runs_today_still_parses_through_the_package():
    assert parse_statement("SELECT a FROM s LIMIT 1", dialect="materialize").limit == 1
    got = parse_statement("SELECT * FROM (SELECT a FROM (SELECT a FROM s) y) x", dialect="materialize")
    assert base_relation(got.source) == "s" and got.source.alias == "x"
    assert parse_statement("CREATE SOURCE s FROM KAFKA CONNECTION k (TOPIC 't') FORMAT TEXT",
                           dialect="materialize").connection == "k"
    assert parse_statement("CREATE SOURCE s FROM KAFKA CONNECTION k (TOPIC 't', START OFFSET (1)) FORMAT TEXT",
                           dialect="materialize").start_offsets == (1,)
    assert isinstance(parse_statement("CREATE SECRET p AS 'x'", dialect="materialize"), CreateSecret)
