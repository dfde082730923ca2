"""Sink planning as pure functions: KLIP 33 format inheritance, ksqlDB's messages, query ids."""

from __future__ import annotations

import pytest

from kafkasql_magic.catalog import KEY, VALUE, Column, SourceDef
from kafkasql_magic.errors import StatementError
from kafkasql_magic.formats import FormatSpec
from kafkasql_magic.sinks.plan import Output, check_insert, keys_first, query_id, sink_formats, sink_source
from kafkasql_magic.sql import ast

INT, STRING, BIGINT = ast.Type("INT"), ast.Type("STRING"), ast.Type("BIGINT")
SETTINGS = {"ksql.persistence.default.format.key": "KAFKA"}


def source(key_format="KAFKA", value_format="JSON", keyed=True, **value_options):
    columns = ((Column("ID", INT, KEY),) if keyed else ()) + (Column("V", STRING, VALUE),)
    return SourceDef("STREAM", "S", "s", FormatSpec(key_format), FormatSpec(value_format, value_options), columns)


def test_query_ids_follow_ksqldb():
    assert query_id("STREAM", "out", 3) == "CSAS_OUT_3"
    assert query_id("TABLE", "T", 1) == "CTAS_T_1"
    assert query_id("INSERT", "T", 7) == "INSERTQUERY_7"


def test_formats_inherited_from_leftmost_source_with_delimiter():
    key, value = sink_formats({}, source("KAFKA", "DELIMITED", VALUE_DELIMITER="TAB"), True, SETTINGS)
    assert (key.name, value.name, value.options) == ("KAFKA", "DELIMITED", {"VALUE_DELIMITER": "TAB"})


def test_with_clause_overrides_one_side_only():
    key, value = sink_formats({"KEY_FORMAT": "avro"}, source(), True, SETTINGS)
    assert (key.name, value.name) == ("AVRO", "JSON")
    key, value = sink_formats({"FORMAT": "JSON"}, source(), True, SETTINGS)
    assert (key.name, value.name) == ("JSON", "JSON")


def test_inherited_none_key_becomes_the_default_when_a_key_is_introduced():
    keyless = source("NONE", keyed=False)
    assert sink_formats({}, keyless, True, {"ksql.persistence.default.format.key": "JSON"})[0].name == "JSON"
    assert sink_formats({}, keyless, False, SETTINGS)[0].name == "NONE"


def test_conflicting_format_properties():
    with pytest.raises(StatementError, match="Cannot supply both 'VALUE_FORMAT' and 'FORMAT' properties"):
        sink_formats({"FORMAT": "JSON", "VALUE_FORMAT": "AVRO"}, source(), True, SETTINGS)


def test_sink_source_topic_columns_and_messages():
    outputs = [Output("ID", INT, True), Output("V", STRING), Output("TS", BIGINT)]
    sink = sink_source("STREAM", "OUT", {"TIMESTAMP": "ts"}, outputs, source(), SETTINGS, None, "sql")
    assert sink.topic == "OUT" and [c.role for c in sink.columns] == [KEY, VALUE, VALUE]
    assert sink.key_format.options["KAFKA_TOPIC"] == "OUT"
    with pytest.raises(StatementError, match="The TIMESTAMP column set in the WITH clause does not exist"):
        sink_source("STREAM", "OUT", {"TIMESTAMP": "nope"}, outputs, source(), SETTINGS, None, "sql")
    with pytest.raises(StatementError, match=r"Timestamp column, `V`, should be LONG\(INT64\)"):
        sink_source("STREAM", "OUT", {"TIMESTAMP": "V"}, outputs, source(), SETTINGS, None, "sql")
    with pytest.raises(StatementError, match=r"^The 'NONE' format can only be used when no columns are defined. "
                                             r"Got: \[`V` STRING, `TS` BIGINT\]$"):
        sink_source("STREAM", "OUT", {"VALUE_FORMAT": "NONE"}, outputs, source(), SETTINGS, None, "sql")


def test_insert_needs_the_targets_schema():
    target = source()
    check_insert(target, [Output("V", STRING), Output("ID", INT, True)])
    with pytest.raises(StatementError) as refused:
        check_insert(target, [Output("ID", INT, True), Output("V", BIGINT)])
    assert str(refused.value) == ("Incompatible schema between results and sink.\n"
                                  "Result schema is `ID` INTEGER KEY, `V` BIGINT\n"
                                  "Sink schema is `ID` INTEGER KEY, `V` STRING")


def test_a_result_key_holding_a_map_is_refused_before_its_format():
    map_type = ast.Type("MAP", key=ast.Type("STRING"), value=ast.Type("INT"))
    outputs = [Output("KSQL_COL_0", map_type, True), Output("V", ast.Type("INT"))]
    with pytest.raises(StatementError) as info:
        sink_source("STREAM", "OUT", {}, outputs, source(), SETTINGS, None, "sql")
    assert str(info.value) == (
        "Map keys, including types that contain maps, are not supported as they may lead to unexpected "
        "behavior due to inconsistent serialization. Key column name: `KSQL_COL_0`. Column type: "
        "MAP<STRING, INTEGER>. See https://github.com/confluentinc/ksql/issues/6621 for more.")
    # a map in the value is written
    sink = sink_source("STREAM", "OUT", {"VALUE_FORMAT": "JSON"}, [Output("K", ast.Type("INT"), True),
                                                                    Output("M", map_type)],
                       source(), SETTINGS, None, "sql")
    assert [c.type.name for c in sink.columns] == ["INT", "MAP"]


def test_the_sink_schema_lists_the_key_columns_first_in_the_key_order():
    outputs = [Output("B", STRING, True), Output("N", BIGINT), Output("A", INT, True), Output("M", INT)]
    assert [o.name for o in keys_first(outputs, ["A", "B"])] == ["A", "B", "N", "M"]
    sink = sink_source("TABLE", "T", {"KEY_FORMAT": "JSON"}, keys_first(outputs, ["A", "B"]), source(), SETTINGS,
                       None, "")
    assert [(c.name, c.role) for c in sink.columns] == [("A", KEY), ("B", KEY), ("N", VALUE), ("M", VALUE)]


def test_a_group_by_sink_is_named_in_its_key_format_message_as_ksqldbs_formatter_prints_it():
    # group-by.json "multiple expressions - KAFKA key format": the message ends with the statement
    from dataclasses import replace

    from kafkasql_magic.catalog import Catalog
    from kafkasql_magic.dialects import ksql_sources
    from kafkasql_magic.engine.analysis import analyse
    from kafkasql_magic.sinks.plan import formatted_statement
    from kafkasql_magic.sql import parse_statement

    cat = Catalog()
    cat.add(ksql_sources.source_from_create(parse_statement(
        "CREATE STREAM TEST (ID INT KEY, F1 INT, F2 INT) WITH (kafka_topic='t', value_format='JSON');"), {}))
    stmt = parse_statement("CREATE TABLE OUTPUT WITH (KEY_FORMAT='KAFKA') AS SELECT f2, f1 AS k1, f2+f1, COUNT(*) "
                           "FROM TEST WHERE f1 > 0 GROUP BY f1, f2 HAVING COUNT(*) > 1;")
    plan = analyse(replace(stmt.query, emit_changes=True), cat, "ksql")
    assert formatted_statement(stmt, plan) == (
        "CREATE TABLE OUTPUT WITH (KEY_FORMAT='KAFKA') AS SELECT\n  TEST.F2 F2,\n  TEST.F1 K1,\n"
        "  (TEST.F2 + TEST.F1) KSQL_COL_0,\n  COUNT(*) KSQL_COL_1\nFROM TEST TEST\nWHERE (TEST.F1 > 0)\n"
        "GROUP BY TEST.F1, TEST.F2\nHAVING (COUNT(*) > 1)\nEMIT CHANGES")
