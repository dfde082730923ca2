"""ksqlDB's wording for refused statements: syntax errors, duplicate and missing value
columns, aggregates without GROUP BY, unknown functions. No Spark."""

from __future__ import annotations

import pytest

from kafkasql_magic.engine.analysis import analyse, check_persistent, check_result_kind
from kafkasql_magic.errors import SqlSyntaxError, StatementError
from kafkasql_magic.sinks import plan as sink_plan
from kafkasql_magic.sql import ast, parse, parse_statement

from test_analysis import catalog, plan_of


def syntax_error(text: str, dialect: str = "ksql") -> SqlSyntaxError:
    with pytest.raises(SqlSyntaxError) as info:
        parse(text, dialect=dialect)
    return info.value


def test_a_ksql_syntax_error_is_headed_syntax_error_with_the_detail_and_the_caret_under_it():
    error = syntax_error("SELECT a FROM s;\n\nSELECT a b c FROM s;")
    lines = str(error).split("\n")
    assert lines[0] == "line 3:12: Syntax Error"
    assert lines[1] == "mismatched input 'c' expecting one of: ',', FROM"
    assert lines[2:] == ["SELECT a b c FROM s", "           ^"]
    assert (error.line, error.column, error.headline) == (3, 12, "Syntax Error")


def test_lines_count_from_the_start_of_the_submitted_text_for_errors_found_while_splitting():
    error = syntax_error("SELECT 1 FROM s;\nSELECT a FROM s WHERE 'x;")
    assert str(error).split("\n")[:2] == ["line 2:23: Syntax Error", "unterminated string literal"]


def test_materialize_keeps_its_own_one_line_wording():
    error = syntax_error("SELECT a, FROM s", "materialize")
    assert str(error).startswith("line 1:11: Expected one of '*' or an expression, found FROM")
    assert error.headline is None


@pytest.mark.parametrize("text, message", [
    ("SELECT item AS count, COUNT(*) AS count FROM orders GROUP BY item EMIT CHANGES;",
     "Duplicate value columns found in schema: `COUNT` BIGINT"),
    ("SELECT qty AS x, item AS x FROM orders EMIT CHANGES;", "Duplicate value columns found in schema: `X` STRING"),
    ("SELECT NO_SUCH(item), COUNT(*) FROM orders EMIT CHANGES;", "Can't find any functions with the name 'NO_SUCH'"),
    ("SELECT item, COUNT(*) FROM orders GROUP BY NO_SUCH(SUM(qty)) EMIT CHANGES;",
     "Can't find any functions with the name 'NO_SUCH'"),
    ("SELECT * FROM orders PARTITION BY NO_SUCH(item) EMIT CHANGES;",
     "Can't find any functions with the name 'NO_SUCH'"),
    ("SELECT item, COUNT(*) FROM orders GROUP BY SUM(qty) EMIT CHANGES;",
     "GROUP BY does not support aggregate functions: SUM is an aggregate function."),
    ("SELECT item, LIST_AGG(qty) FROM orders GROUP BY item EMIT CHANGES;",
     "Can't find any functions with the name 'LIST_AGG'"),
    ("SELECT item, STRING_AGG(item, ',') FROM orders GROUP BY item EMIT CHANGES;",
     "Can't find any functions with the name 'STRING_AGG'"),
])
def test_ksqldb_messages(text, message):
    with pytest.raises(StatementError) as info:
        plan_of(text)
    assert str(info.value) == message


@pytest.mark.parametrize("text, message", [
    ("SELECT COUNT(*) FROM orders;",
     "CREATE TABLE AS SELECT statement does not support aggregate function [COUNT(ROWTIME)] without a GROUP BY "
     "clause."),
    ("SELECT SUM(qty), COUNT() FROM orders;",
     "CREATE TABLE AS SELECT statement does not support aggregate function [SUM(QTY), COUNT(ROWTIME)] without a "
     "GROUP BY clause."),
    ("SELECT NOPE(qty), COUNT(*) FROM orders;", "Can't find any functions with the name 'NOPE'"),
])
@pytest.mark.parametrize("kind", ["TABLE", "STREAM", None])  # CTAS, CSAS, INSERT INTO
def test_a_persistent_aggregation_without_group_by(text, message, kind):
    """ksqlDB names CREATE TABLE AS SELECT in this message whatever the statement: it finds
    the missing key before it compares the result's kind with the statement's."""
    with pytest.raises(StatementError) as info:
        check_persistent(parse_statement(text), kind)
    assert str(info.value) == message


@pytest.mark.parametrize("statement_kind, query, message", [
    ("STREAM", "SELECT item, COUNT(*) FROM orders GROUP BY item EMIT CHANGES;",
     "Invalid result type. Your SELECT query produces a TABLE. Please use CREATE TABLE AS SELECT statement instead."),
    ("STREAM", "SELECT * FROM items EMIT CHANGES;",
     "Invalid result type. Your SELECT query produces a TABLE. Please use CREATE TABLE AS SELECT statement instead."),
    ("TABLE", "SELECT * FROM orders EMIT CHANGES;",
     "Invalid result type. Your SELECT query produces a STREAM. Please use CREATE STREAM AS SELECT statement "
     "instead."),
    ("TABLE", "SELECT * FROM orders o JOIN items i ON o.item = i.item EMIT CHANGES;",
     "Invalid result type. Your SELECT query produces a STREAM. Please use CREATE STREAM AS SELECT statement "
     "instead."),
    ("STREAM", "SELECT * FROM orders o JOIN items i ON o.item = i.item EMIT CHANGES;", None),
    ("TABLE", "SELECT item, COUNT(*) FROM orders GROUP BY item EMIT CHANGES;", None),
    ("TABLE", "SELECT * FROM items EMIT CHANGES;", None),
])
def test_the_statement_must_name_the_kind_the_query_produces(statement_kind, query, message):
    plan = plan_of(query)
    if message is None:
        check_result_kind(statement_kind, plan)
        return
    with pytest.raises(StatementError) as info:
        check_result_kind(statement_kind, plan)
    assert str(info.value) == message


def test_a_persistent_query_of_key_columns_only_is_refused():
    key = sink_plan.Output("NAME", ast.Type("STRING"), True)
    with pytest.raises(StatementError, match=r"^The projection contains no value columns\.$"):
        sink_plan.check_value_columns([key])
    sink_plan.check_value_columns([key, sink_plan.Output("N", ast.Type("BIGINT"), False)])


def test_the_transient_query_keeps_its_own_aggregate_message():
    with pytest.raises(StatementError, match="Use of aggregate function COUNT requires a GROUP BY clause."):
        analyse(parse_statement("SELECT COUNT(*) FROM orders EMIT CHANGES;"), catalog())


def test_materialize_aggregates_are_materialize_only():
    """ksqlDB has COLLECT_LIST, not list_agg: a ksql query over a Materialize source cannot
    call it either, while a Materialize query can."""
    with pytest.raises(StatementError, match="Can't find any functions with the name 'ARRAY_AGG'"):
        plan_of("SELECT ARRAY_AGG(text) FROM events GROUP BY text EMIT CHANGES;")
    assert plan_of("SELECT text, array_agg(text) AS texts FROM events GROUP BY text", "materialize").names == \
        ["text", "texts"]


def test_an_insert_into_an_unknown_source_is_refused_in_ksqldbs_words():
    from kafkasql_magic.statements.records import insert_target

    source_catalog = catalog()
    select = parse_statement("INSERT INTO nope SELECT * FROM orders;")
    with pytest.raises(StatementError) as info:
        insert_target(source_catalog, select, "ksql")
    assert str(info.value) == "line 1:12: NOPE does not exist."  # ksqlDB counts INSERT INTO's length
    assert info.value.__cause__ is None and info.value.__suppress_context__
    values = parse_statement("INSERT INTO nope (a) VALUES (1);")
    with pytest.raises(StatementError, match="^Cannot insert values into an unknown stream/table: NOPE$"):
        insert_target(source_catalog, values, "ksql")
    assert insert_target(source_catalog, parse_statement("INSERT INTO orders SELECT * FROM clicks;"), "ksql").name == "ORDERS"
