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
    # group-by.json: ksqlDB's aggregate analysis, before it compares SELECT with GROUP BY
    ("SELECT SUM(COUNT()) FROM orders GROUP BY item EMIT CHANGES;", "Aggregate functions can not be nested: SUM(COUNT())"),
    ("SELECT SUBSTRING(item, 1, 2) FROM orders GROUP BY qty EMIT CHANGES;",
     "GROUP BY requires aggregate functions in either the SELECT or HAVING clause."),
    ("SELECT COUNT(*) FROM orders GROUP BY item, orders.item EMIT CHANGES;", "Duplicate GROUP BY expression: ORDERS.ITEM"),
    # joins.json: the ON columns are resolved before the join's kind or WITHIN is looked at
    ("SELECT * FROM orders o LEFT JOIN clicks c ON o.iid = c.id EMIT CHANGES;", "Line: 1, Col: 46: JOIN ON column 'O.IID' cannot be resolved."),
    ("SELECT * FROM orders o LEFT JOIN clicks c ON nosuch.id = c.id EMIT CHANGES;",
     "Failed to prepare statement: 'NOSUCH' is not a valid stream/table name or alias."),
    ("SELECT * FROM items JOIN prices ON item = nosuch.item EMIT CHANGES;",  # every qualifier first
     "Failed to prepare statement: 'NOSUCH' is not a valid stream/table name or alias."),
    ("SELECT * FROM items JOIN prices ON item = item EMIT CHANGES;",  # where: the first of the two
     "Exception while preparing statement: Line: 1, Col: 36: Column 'ITEM' is ambiguous. Could be ITEMS.ITEM or "
     "PRICES.ITEM."),
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


@pytest.mark.parametrize("text", [  # elements.json: `x.*` names a source, joined or not
    "SELECT id, nosuch.* FROM orders o EMIT CHANGES;",
    "SELECT nosuch.* FROM orders o JOIN clicks c WITHIN 1 SECONDS ON o.id = c.id EMIT CHANGES;",
])
def test_a_star_of_an_unknown_source(text):
    with pytest.raises(StatementError) as info:
        plan_of(text)
    assert str(info.value) == "'NOSUCH' is not a valid stream/table name or alias."


RESERVED = "Reserved column name in select: `{}`. Please remove or alias the column."


@pytest.mark.parametrize("text, message", [  # elements.json: a system column under its own name
    ("SELECT id, WINDOWSTART FROM orders;", RESERVED.format("WINDOWSTART")),
    ("SELECT id, o.windowend FROM orders o;", RESERVED.format("WINDOWEND")),
    ("SELECT o.id, o.ROWTIME AS rowtime, c.id FROM orders o JOIN clicks c WITHIN 1 SECONDS ON o.id = c.id;",
     RESERVED.format("ROWTIME")),
    # before the GROUP BY is compared with the SELECT list, as ksqlDB's analyzer visits it first
    ("SELECT id, WINDOWSTART, COUNT(*) AS n FROM orders GROUP BY WINDOWSTART;", RESERVED.format("WINDOWSTART")),
])
def test_a_persistent_query_selecting_a_system_column_under_its_own_name(text, message):
    with pytest.raises(StatementError) as info:
        check_persistent(parse_statement(text))
    assert str(info.value) == message


def test_a_persistent_query_may_select_a_system_column_renamed_or_qualified_in_a_join():
    for text in ("SELECT id, WINDOWSTART AS ws FROM orders;",
                 "SELECT o.id, o.ROWTIME, c.ROWTIME FROM orders o JOIN clicks c WITHIN 1 SECONDS ON o.id = c.id;"):
        check_persistent(parse_statement(text))


def test_a_push_query_may_select_a_system_column_under_its_own_name():
    assert "ROWTIME" in plan_of("SELECT id, ROWTIME AS rowtime FROM orders EMIT CHANGES;").names


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
    from kafkasql_magic.sinks.plan import insert_target

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


def _windowed_catalog():
    from kafkasql_magic.dialects import ksql_sources as ddl

    cat = catalog()
    for name, window in (("sessions", "'SESSION'"), ("tumbles", "'TUMBLING', window_size='1 SECOND'"),
                         ("kafka_values", None)):
        fmt = "KAFKA" if window is None else "JSON"
        windowing = "" if window is None else f", window_type={window}"
        cat.add(ddl.source_from_create(parse_statement(
            f"CREATE STREAM {name} (id INT KEY, v INT) WITH (kafka_topic='{name}', value_format='{fmt}'{windowing});"),
            {}))
    return cat


@pytest.mark.parametrize("text, message", [
    # ksqlDB's analyzer, as it meets the FROM items (joins.json)
    ("SELECT * FROM orders o1 JOIN orders o2 WITHIN 1 HOUR ON o1.id = o2.id EMIT CHANGES;",
     "Can not join 'ORDERS' to 'ORDERS': self joins are not yet supported."),
    ("SELECT * FROM orders o JOIN clicks c WITHIN 1 HOUR ON o.id = c.id JOIN orders p WITHIN 1 HOUR ON o.id = p.id "
     "EMIT CHANGES;", "N-way joins do not support multiple occurrences of the same source. Source: 'ORDERS'."),
    ("SELECT * FROM sessions s JOIN clicks c WITHIN 1 MINUTE ON s.id = c.id EMIT CHANGES;",
     "Can not join windowed source to non-windowed source.\n`S` is SESSION windowed\n`C` is not windowed"),
    ("SELECT * FROM sessions s JOIN tumbles t WITHIN 1 MINUTE ON s.id = t.id EMIT CHANGES;",
     "Incompatible windowed sources.\nLeft source: SESSION\nRight source: TUMBLING\nSession windowed sources can "
     "only be joined to other session windowed sources"),
    ("SELECT * FROM orders o JOIN clicks c WITHIN 1 HOUR ON o.id = c.id AND o.id = c.id EMIT CHANGES;",
     "Invalid join condition: joins on multiple conditions are not yet supported. Got ((O.ID = C.ID) AND "
     "(O.ID = C.ID))."),
    ("SELECT * FROM kafka_values k JOIN clicks c WITHIN 1 HOUR ON k.id = c.id EMIT CHANGES;",
     "Source(s) K are using the 'KAFKA' value format. This format does not yet support JOIN.\nThe KAFKA format is "),
    ("SELECT v, COUNT(*) FROM kafka_values GROUP BY v EMIT CHANGES;",
     "Source(s) KAFKA_VALUES are using the 'KAFKA' value format. This format does not yet support GROUP BY."),
])
def test_joins_and_groupings_ksqldb_refuses_as_it_meets_the_sources(text, message):
    with pytest.raises(StatementError) as info:
        plan_of(text, cat=_windowed_catalog())
    assert str(info.value).startswith(message)


@pytest.mark.parametrize("window, message", [
    ("window_type='SESSION', window_size='10 SECONDS'", "'WINDOW_SIZE' should not be set for SESSION windows."),
    ("window_type='HOPPING', window_size='30 bobs'", "Configuration WINDOW_SIZE is invalid: Invalid duration: "
     "'30 bobs'. Unknown time unit: 'BOBS'\nSupported time units are: NANOSECONDS, MICROSECONDS, MILLISECONDS"),
    ("window_type='TUMBLING'", "TUMBLING windows require 'WINDOW_SIZE' to be provided in the WITH clause. "
     "For example: 'WINDOW_SIZE'='10 SECONDS'"),
])
def test_a_windowed_source_declaration_is_checked_as_ksqldb_checks_it(window, message):
    from kafkasql_magic.dialects import ksql_sources as ddl

    with pytest.raises(StatementError) as info:
        ddl.source_from_create(parse_statement(
            f"CREATE TABLE w (k STRING PRIMARY KEY, v INT) WITH (kafka_topic='w', value_format='JSON', {window});"), {})
    assert str(info.value).startswith(message)


def test_joins_that_would_re_key_or_cannot_meet_are_refused_as_in_ksqldb():
    from kafkasql_magic.dialects import ksql_sources as ddl

    cat = catalog()
    for create in ("CREATE STREAM hops (id INT KEY, v BIGINT) WITH (kafka_topic='h', value_format='JSON', "
                   "window_type='HOPPING', window_size='5 SECONDS');",
                   "CREATE STREAM tumbles (id INT KEY, v BIGINT) WITH (kafka_topic='t', value_format='JSON', "
                   "window_type='TUMBLING', window_size='2 SECONDS');",
                   "CREATE TABLE wide (id BIGINT PRIMARY KEY, foo INT) WITH (kafka_topic='w', value_format='JSON');",
                   "CREATE TABLE narrow (id INT PRIMARY KEY, val STRING) WITH (kafka_topic='n', value_format='JSON');"):
        cat.add(ddl.source_from_create(parse_statement(create), {}))
    # joins.json "matching time-windowed join with different windows fails": their keys differ
    with pytest.raises(StatementError, match=r"^Implicit repartitioning of windowed sources is not supported\."):
        plan_of("SELECT * FROM hops JOIN tumbles WITHIN 1 MINUTE ON hops.id = tumbles.id EMIT CHANGES;", cat=cat)
    # joins.json "table-table key-to-key - SR-enabled key format - incompatible schemas"
    with pytest.raises(StatementError) as info:
        plan_of("SELECT wide.id, narrow.val FROM narrow JOIN wide ON narrow.id = wide.id EMIT CHANGES;", cat=cat)
    assert str(info.value) == "Invalid join condition: types don't match. Got NARROW.ID{INTEGER} = WIDE.ID{BIGINT}."
