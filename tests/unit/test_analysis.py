"""The analysis step: statement + catalog + dialect -> an immutable plan. No Spark session."""

from __future__ import annotations

import dataclasses
import json

import pytest

from kafkasql_magic import dialects
from kafkasql_magic.catalog import Catalog, ViewDef
from kafkasql_magic.dialects import SourceContext
from kafkasql_magic.dialects import ksql_sources as ddl
from kafkasql_magic.engine.analysis import analyse
from kafkasql_magic.engine.analysis.plan import CAPTURE_FRAMES, CAPTURE_METRICS, CAPTURE_NONE, CAPTURE_OBSERVATIONS
from kafkasql_magic.engine.analysis.seek import Seek
from kafkasql_magic.errors import StatementError
from kafkasql_magic.sql import ast, parse_statement

SETTINGS = {ddl.DEFAULT_KEY_FORMAT: "KAFKA"}


def catalog() -> Catalog:
    cat = Catalog()
    for create in ("CREATE STREAM orders (id INT KEY, item STRING, qty INT) WITH (kafka_topic='o', value_format='JSON');",
                   "CREATE TABLE items (item STRING PRIMARY KEY, price DOUBLE) WITH (kafka_topic='i', value_format='JSON');",
                   "CREATE STREAM clicks (id INT KEY, url STRING) WITH (kafka_topic='c', value_format='JSON');",
                   "CREATE TABLE prices (item STRING PRIMARY KEY, price DOUBLE) WITH (kafka_topic='p', value_format='JSON');"):
        cat.add(ddl.source_from_create(parse_statement(create), SETTINGS))
    context = SourceContext(SETTINGS, None, "", infer=None, latest_schema=None)
    cat.add(dialects.MATERIALIZE.define_source(
        parse_statement("CREATE SOURCE events FROM KAFKA TOPIC 'e' FORMAT TEXT", dialect="materialize"), context))
    return cat


def plan_of(text: str, dialect: str = "ksql", cat: Catalog | None = None):
    return analyse(parse_statement(text, dialect=dialect), cat or catalog(), dialect)


def test_result_names_follow_the_dialect():
    ksql = plan_of("SELECT item, qty * 2, UCASE(item) FROM orders EMIT CHANGES;")
    assert ksql.names == ["ITEM", "KSQL_COL_0", "KSQL_COL_1"]
    mz = plan_of("SELECT item, qty * 2, ucase(item) FROM orders", "materialize")
    assert mz.names == ["item", "?column?", "ucase"]


def test_a_join_star_is_prefixed_in_ksql_only():
    text = "SELECT * FROM orders o JOIN items i ON o.item = i.item EMIT CHANGES;"
    assert plan_of(text).names[:2] == ["O_ID", "O_ITEM"]
    assert plan_of(text.replace(" EMIT CHANGES", ""), "materialize").names[:2] == ["id", "item"]


@pytest.mark.parametrize("text, per_batch, capture", [
    ("SELECT * FROM orders EMIT CHANGES;", False, CAPTURE_NONE),
    ("SELECT o.id, i.price FROM orders o JOIN items i ON o.item = i.item EMIT CHANGES;", False, CAPTURE_METRICS),
    ("SELECT o.id, i.price FROM orders o JOIN items i ON o.item = i.item JOIN prices j ON o.item = j.item "
     "EMIT CHANGES;", True, CAPTURE_FRAMES),
    ("SELECT i.item, COUNT(*) FROM orders o JOIN items i ON o.item = i.item GROUP BY i.item EMIT CHANGES;",
     False, CAPTURE_METRICS),
    ("SELECT item, COUNT(*) FROM orders GROUP BY item EMIT CHANGES;", False, CAPTURE_METRICS),
    ("SELECT o.id, c.url FROM orders o JOIN clicks c WITHIN 1 SECONDS ON o.id = c.id EMIT CHANGES;",
     False, CAPTURE_METRICS),
])
def test_per_batch_and_error_capture_are_decided_once(text, per_batch, capture):
    plan = plan_of(text)
    assert (plan.per_batch, plan.capture) == (per_batch, capture)


def test_a_snapshot_aggregation_captures_errors_in_observations():
    plan = plan_of("SELECT item, COUNT(*) FROM orders GROUP BY item", "materialize")
    assert plan.capture == CAPTURE_OBSERVATIONS and plan.observed_sources == {"__errors_aggregate": "ORDERS"}


def test_the_plan_is_immutable():
    plan = plan_of("SELECT * FROM orders EMIT CHANGES;")
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.per_batch = True  # type: ignore[misc]


def test_seek_ranges_only_for_push_queries_on_seekable_sources():
    plan = plan_of("SELECT * FROM orders WHERE ROWPARTITION = 1 AND ROWOFFSET >= 5 EMIT CHANGES;")
    assert plan.seek == Seek(frozenset({1}), 5, None)
    assert plan_of("SELECT * FROM events WHERE ROWOFFSET >= 5 EMIT CHANGES;").seek == Seek()
    joined = "SELECT * FROM orders o JOIN items i ON o.item = i.item WHERE o.ROWOFFSET > 3 EMIT CHANGES;"
    assert plan_of(joined).seek == Seek()


def test_grouping_rewrites_select_and_having_over_grouped_columns():
    plan = plan_of("SELECT item, SUM(qty) * 2 AS twice FROM orders GROUP BY item HAVING COUNT(*) > 1 EMIT CHANGES;")
    g = plan.grouping
    assert [c.name for c in g.calls] == ["SUM", "COUNT"]
    assert g.outputs[0] == ast.ColumnRef("__g0")
    assert g.outputs[1] == ast.BinaryOp("*", ast.ColumnRef("__agg0"), ast.Literal(2, "INT"))
    assert g.having == ast.BinaryOp(">", ast.ColumnRef("__agg1"), ast.Literal(1, "INT"))
    assert plan.kind == "TABLE" and plan.key_names == ["ITEM"] and plan.output_mode == "update"


@pytest.mark.parametrize("text, message", [
    ("SELECT qty, COUNT(*) FROM orders GROUP BY item EMIT CHANGES;",
     "Non-aggregate SELECT expression(s) not part of GROUP BY: QTY"),
    ("SELECT item, qty * SUM(qty), SUBSTRING(item, 1, 1) FROM orders GROUP BY SUBSTRING(item, 1, 2) EMIT CHANGES;",
     "Non-aggregate SELECT expression(s) not part of GROUP BY: ITEM, (QTY * SUM(QTY)), SUBSTRING(ITEM, 1, 1)\n"
     "Either add the column(s) to the GROUP BY or remove them from the SELECT."),
    ("SELECT qty, COUNT() FROM orders EMIT CHANGES;", "Non-aggregate SELECT expression(s) not part of GROUP BY: QTY"),
    ("SELECT * FROM orders o RIGHT JOIN clicks c ON 0 = o.id EMIT CHANGES;",  # before the missing WITHIN
     "Invalid comparison expression '0' in join '(0 = O.ID)'. Each side of the join comparision must contain "
     "references from exactly one source."),
    ("SELECT item, SUM(qty, 1) FROM orders GROUP BY item EMIT CHANGES;", "Function 'SUM' does not accept 2 argument"),
    ("SELECT item FROM orders GROUP BY item;", "Pull queries don't support GROUP BY clauses."),
    ("SELECT COUNT(*) FROM orders EMIT CHANGES;", "Use of aggregate function COUNT requires a GROUP BY clause."),
    ("SELECT * FROM items i JOIN orders o ON o.item = i.item EMIT CHANGES;", "Invalid join order"),
    ("SELECT ROWTIME FROM orders o JOIN clicks c ON o.id = c.id EMIT CHANGES;",
     "Stream-Stream joins must have a WITHIN clause specified."),
    ("SELECT item AS item, qty AS item FROM orders EMIT CHANGES;", "Duplicate value columns found in schema: `ITEM`"),
])
def test_clause_rules_with_ksqldb_messages(text, message):
    with pytest.raises(StatementError, match=message.replace("(", r"\(").replace(")", r"\)").replace("*", r"\*")):
        plan_of(text)


def test_materialize_queries_skip_ksql_clause_rules():
    assert plan_of("SELECT count(*) FROM orders", "materialize").aggregating
    assert plan_of("SELECT item AS x, qty AS x FROM orders", "materialize").names == ["x", "x"]


def test_a_view_is_planned_inline_with_its_own_plan():
    cat = catalog()
    query = parse_statement("SELECT item, qty FROM orders WHERE qty > 1", dialect="materialize")
    cat.add(ViewDef("big", query, dialect="materialize"))
    plan = plan_of("SELECT * FROM big", "materialize", cat)
    assert plan.source.name == "ORDERS" and plan.names == ["item", "qty"]
    assert plan.inputs[0].view is not None and not plan.inputs[0].view.push


def test_every_expression_is_type_checked_with_the_column_types_of_the_catalog():
    with pytest.raises(StatementError) as info:
        plan_of("SELECT item FROM orders WHERE item EMIT CHANGES;")
    assert str(info.value) == ("line 1:31: Type error in WHERE expression: Should evaluate to boolean but is "
                               "ITEM (STRING) instead.")
    with pytest.raises(StatementError, match="Function 'ABS' does not accept parameters \\(STRING\\)"):
        plan_of("SELECT ABS(item), COUNT(*) FROM orders GROUP BY item EMIT CHANGES;")


def test_the_plan_is_plain_data():
    """Nothing Spark in it: every field is AST, catalog entries or plain values."""
    plan = plan_of("SELECT item, COUNT(*) FROM orders GROUP BY item EMIT CHANGES;")
    assert json.dumps([plan.names, plan.key_names, plan.kind, plan.capture, plan.per_batch, list(plan.observed)])


@pytest.mark.parametrize("text, retracts", [
    ("SELECT item, COUNT(*) FROM items GROUP BY item EMIT CHANGES;", True),
    ("SELECT item, COUNT(*) FROM orders GROUP BY item EMIT CHANGES;", False),  # a stream only adds
    ("SELECT item, COUNT(*) FROM items WINDOW TUMBLING (SIZE 1 SECOND) GROUP BY item EMIT CHANGES;", False),
    ("SELECT * FROM items EMIT CHANGES;", False),
])
def test_a_push_aggregation_over_a_table_retracts_in_keyed_state(text, retracts):
    plan = plan_of(text)
    assert plan.retracts is retracts
    if retracts:
        assert not plan.per_batch and plan.capture == CAPTURE_METRICS and plan.kind == "TABLE"


def test_a_column_several_joined_sources_have_is_named_after_its_source():
    plan = plan_of("SELECT o.item, i.item, qty, price FROM orders o JOIN items i ON o.item = i.item EMIT CHANGES;")
    assert plan.names == ["O_ITEM", "I_ITEM", "QTY", "PRICE"]
    plan = plan_of("SELECT orders.item, qty FROM orders JOIN items ON orders.item = items.item EMIT CHANGES;")
    assert plan.names == ["ORDERS_ITEM", "QTY"]
    assert plan_of("SELECT o.item FROM orders o JOIN items i ON o.item = i.item", "materialize").names == ["item"]


@pytest.mark.parametrize("text, message", [
    ("SELECT item, SUM(qty) FROM orders GROUP BY SUM(qty) EMIT CHANGES;",
     "GROUP BY does not support aggregate functions: SUM is an aggregate function."),
    ("SELECT item, qty, NOPE(qty) FROM orders GROUP BY item EMIT CHANGES;",
     "Can't find any functions with the name 'NOPE'"),  # before the non-aggregate column's message
])
def test_grouping_messages_in_ksqldb_words(text, message):
    with pytest.raises(StatementError) as caught:
        plan_of(text)
    assert str(caught.value) == message


def test_a_windowed_source_is_not_re_keyed():
    cat = catalog()
    cat.add(ddl.source_from_create(parse_statement(
        "CREATE STREAM counts (item STRING KEY, n BIGINT) WITH (kafka_topic='w', value_format='JSON', "
        "window_type='TUMBLING', window_size='1 SECOND');"), SETTINGS))
    message = ("Implicit repartitioning of windowed sources is not supported. "
               "See https://github.com/confluentinc/ksql/issues/4385.")
    with pytest.raises(StatementError) as caught:
        plan_of("SELECT * FROM counts PARTITION BY n EMIT CHANGES;", cat=cat)
    assert str(caught.value) == message
    # a join meets the windowed source first: ksqlDB's analyzer refuses it before any re-keying
    with pytest.raises(StatementError) as caught:
        plan_of("SELECT * FROM counts c JOIN items i ON c.n = i.price EMIT CHANGES;", cat=cat)
    assert str(caught.value) == ("Can not join windowed source to non-windowed source.\n`C` is TUMBLING windowed\n"
                                 "`I` is not windowed")
    assert plan_of("SELECT * FROM counts PARTITION BY item EMIT CHANGES;", cat=cat).keys == ("ITEM",)


def test_count_with_no_argument_counts_rows_in_ksql_only():
    assert plan_of("SELECT item, COUNT() AS n FROM orders GROUP BY item EMIT CHANGES;").grouping.calls == (
        ast.FunctionCall("COUNT", (), False),)
    with pytest.raises(StatementError, match=r"function count\(\) does not exist"):
        plan_of("SELECT item, count() AS n FROM orders GROUP BY item", "materialize")


@pytest.mark.parametrize("text, keys", [
    # group-by.json "fields (stream->table)": SELECT f1, f2 ... GROUP BY f2, f1 is keyed F2, F1
    ("SELECT qty, item, COUNT(*) FROM orders GROUP BY item, qty EMIT CHANGES;", ["ITEM", "QTY"]),
    # partition-by.json "... reorder partition by but keep same order in project"
    ("SELECT id, qty, item FROM orders PARTITION BY qty, id EMIT CHANGES;", ["QTY", "ID"]),
    ("SELECT k2, v, k FROM multi EMIT CHANGES;", ["K", "K2"]),  # the source key's order
])
def test_the_key_columns_are_in_the_key_order_not_the_projection_order(text, keys):
    cat = catalog()
    cat.add(ddl.source_from_create(parse_statement(
        "CREATE STREAM multi (k INT KEY, k2 INT KEY, v INT) WITH (kafka_topic='m', format='JSON');"), SETTINGS))
    assert plan_of(text, cat=cat).key_names == keys


def test_only_a_key_passed_through_from_the_record_can_be_the_record_s_missing_key():
    assert plan_of("SELECT id, item FROM orders EMIT CHANGES;").passes_key
    assert not plan_of("SELECT item, COUNT(*) FROM orders GROUP BY item EMIT CHANGES;").passes_key
    assert not plan_of("SELECT item, id FROM orders PARTITION BY item EMIT CHANGES;").passes_key
    assert not plan_of("SELECT o.id, i.price FROM orders o JOIN items i ON o.item = i.item EMIT CHANGES;").passes_key
