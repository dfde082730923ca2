"""Pull queries: KLIP 50's pseudocolumn rules and ksqlDB's window-bound rules on windowed tables,
with ksqlDB's messages; a windowed table's columns. No Spark."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kafkasql_magic.catalog import Catalog
from kafkasql_magic.dialects import ksql_sources as ddl
from kafkasql_magic.engine.analysis import analyse
from kafkasql_magic.engine.analysis.windowed_source import (BOUND_COLUMNS, RETENTION, SourceWindow, sink_properties,
                                                            window_of)
from kafkasql_magic.engine.window.timing import DEFAULT_GRACE_MS
from kafkasql_magic.errors import StatementError
from kafkasql_magic.sql import ast, parse_statement

SETTINGS = {ddl.DEFAULT_KEY_FORMAT: "KAFKA"}
HELP = "\n See https://cnfl.io/queries for more info.\nAdd EMIT CHANGES if you intended to issue a push query."
WHERE_HELP = (" See https://cnfl.io/queries for more info.\nAdd EMIT CHANGES if you intended to issue a push query."
              "\nPull queries require a WHERE clause that:\n - limits the query to a single key, e.g. "
              "`SELECT * FROM X WHERE <key-column>=Y;`.\n - (optionally) limits the time bounds of the windowed table."
              "\n\t Bounds on [`WINDOWSTART`, `WINDOWEND`] are supported\n\t Supported operators are "
              "[EQUAL, GREATER_THAN, GREATER_THAN_OR_EQUAL, LESS_THAN, LESS_THAN_OR_EQUAL]")


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    cat = Catalog()
    for create in (
            "CREATE TABLE t (id INT PRIMARY KEY, v STRING) WITH (kafka_topic='t', value_format='JSON');",
            "CREATE TABLE w (id INT PRIMARY KEY, n BIGINT) WITH (kafka_topic='w', value_format='JSON', "
            "window_type='Tumbling', window_size='10 SECONDS');",
            "CREATE TABLE h (id STRING PRIMARY KEY, n BIGINT) WITH (kafka_topic='h', value_format='JSON', "
            "window_type='HOPPING', window_size='500');",
            "CREATE TABLE sess (id STRING PRIMARY KEY, n BIGINT) WITH (kafka_topic='sess', value_format='JSON', "
            "window_type='SESSION');"):
        cat.add(ddl.source_from_create(parse_statement(create), SETTINGS))
    return cat


def plan_of(catalog, text):
    return analyse(parse_statement(text), catalog, "ksql")


def error_of(catalog, text) -> str:
    with pytest.raises(StatementError) as info:
        plan_of(catalog, text)
    return str(info.value)


@pytest.mark.parametrize("text, clause, columns", [
    ("SELECT ROWPARTITION FROM t;", "SELECT", "`ROWPARTITION`"),
    ("SELECT v, ROWOFFSET, ROWPARTITION + 1 AS p FROM t;", "SELECT", "`ROWPARTITION`, `ROWOFFSET`"),
    ("SELECT * FROM t WHERE ROWOFFSET > 1 AND id = 2;", "WHERE", "`ROWOFFSET`"),
    ("SELECT * FROM w WHERE id = 1 AND ROWPARTITION = 0;", "WHERE", "`ROWPARTITION`"),
])
def test_klip50_pull_queries_refuse_partition_and_offset(catalog, text, clause, columns):
    assert error_of(catalog, text) == \
        f"Pull queries don't support the following columns in {clause} clauses: {columns}{HELP}"


def test_klip50_rowtime_is_allowed_and_push_queries_take_them_all(catalog):
    assert plan_of(catalog, "SELECT id, ROWTIME FROM t WHERE ROWTIME > 5 AND id = 1;").names == ["ID", "ROWTIME"]
    assert plan_of(catalog, "SELECT ROWPARTITION, ROWOFFSET FROM t EMIT CHANGES;").names == \
        ["ROWPARTITION", "ROWOFFSET"]


def test_clause_refusals_carry_ksqldbs_help(catalog):
    assert error_of(catalog, "SELECT * FROM t PARTITION BY v;") == \
        "Pull queries don't support PARTITION BY clauses." + HELP[1:]


def test_window_properties_of_a_source(catalog):
    assert window_of(catalog.get("w")) == SourceWindow("TUMBLING", 10_000)
    assert window_of(catalog.get("h")) == SourceWindow("HOPPING", 500)
    assert window_of(catalog.get("sess")) == SourceWindow("SESSION", None)
    assert window_of(catalog.get("t")) is None
    assert window_of(catalog.get("sess")).suffix == 16 and window_of(catalog.get("w")).suffix == 8
    written = sink_properties(ast.Window("HOPPING", 60_000, 10_000), {"WINDOWSTART": "WS", "WINDOWEND": "WE"})
    assert written == {"WINDOW_TYPE": "HOPPING", "WINDOW_SIZE": "60000 MILLISECONDS",
                       BOUND_COLUMNS: "WS=WINDOWSTART,WE=WINDOWEND", RETENTION: str(60_000 + DEFAULT_GRACE_MS)}
    kept = sink_properties(ast.Window("TUMBLING", 10_000, retention=30_000, grace=0), {"WINDOWSTART": "WS"})
    assert kept[RETENTION] == "30000"  # as written; else ksqlDB's size + grace
    back = replace(catalog.get("w"), properties={**kept, "WINDOW_TYPE": "SESSION"})
    assert window_of(back).retention == 30_000 and window_of(back).store_time == "WINDOWEND"
    assert window_of(catalog.get("w")).store_time == "WINDOWSTART"


def test_a_windowed_table_has_window_bounds_in_its_key(catalog):
    plan = plan_of(catalog, "SELECT * FROM w WHERE id = 1 AND WINDOWSTART >= 0 AND WINDOWEND < 20000;")
    assert plan.names == ["ID", "WINDOWSTART", "WINDOWEND", "N"]
    assert plan.keys == ("ID", "WINDOWSTART", "WINDOWEND")
    assert plan.lookup is not None and plan.lookup.values == (1,)
    between = plan_of(catalog, "SELECT n FROM h WHERE id = 'a' AND WINDOWSTART BETWEEN 0 AND 100 AND WINDOWEND = 600;")
    assert between.names == ["N"]


@pytest.mark.parametrize("where, message", [
    ("WINDOWSTART <> 5", "Unsupported WINDOWSTART bounds: NOT_EQUAL"),
    ("WINDOWEND != 5", "Unsupported WINDOWEND bounds: NOT_EQUAL"),
    ("WINDOWSTART > 5 AND WINDOWSTART >= 3", "Duplicate WINDOWSTART bounds on: GREATER_THAN"),
    ("WINDOWEND < 5 AND 3 > WINDOWEND", "Duplicate WINDOWEND bounds on: LESS_THAN"),
    ("WINDOWSTART = 5 AND WINDOWSTART = 6", "Duplicate WINDOWSTART bounds on: EQUAL"),
    ("WINDOWSTART = 5 AND WINDOWSTART < 3", "`(WINDOWSTART = 5)` cannot be combined with other WINDOWSTART bounds"),
    ("WINDOWSTART BETWEEN 1 AND 5 AND WINDOWSTART < 3", "Duplicate WINDOWSTART bounds on: LESS_THAN"),
    ("WINDOWSTART > id", "Window bounds must be an INT, BIGINT or STRING containing a datetime"),
])
def test_window_bounds_follow_ksqldbs_rules(catalog, where, message):
    assert error_of(catalog, f"SELECT * FROM w WHERE id = 1 AND {where};") == f"{message}. {WHERE_HELP}"


def test_window_bounds_need_a_windowed_source(catalog):
    assert error_of(catalog, "SELECT * FROM t WHERE id = 1 AND WINDOWSTART = 5;") == \
        f"Cannot use WINDOWSTART/WINDOWEND on non-windowed source. {WHERE_HELP}"
