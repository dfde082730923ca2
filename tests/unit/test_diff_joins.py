"""Which push queries join whole collections with diffs (Materialize's SUBSCRIBE), their ON
clauses and refusals. No Spark session."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kafkasql_magic.catalog import ViewDef
from kafkasql_magic.engine.analysis import analyse
from kafkasql_magic.engine.diff_join.rules import equalities, referenced_pseudocolumns
from kafkasql_magic.errors import StatementError
from kafkasql_magic.sql import ast, parse_statement

from test_analysis import catalog


def subscribed(text: str, dialect: str = "materialize", cat=None):
    """The plan of `text` as SUBSCRIBE runs it (a push query)."""
    stmt = parse_statement(text, dialect=dialect)
    return analyse(replace(stmt, emit_changes=True), cat or catalog(), dialect)


@pytest.mark.parametrize("text", [
    "SELECT o.item, e.text FROM orders o JOIN events e ON o.item = e.text",
    "SELECT o.item, e.text FROM orders o FULL JOIN events e ON o.item = e.text",
    "SELECT o.item, e.text FROM orders o RIGHT JOIN events e ON o.item = e.text",
    # a table first, and a table joined with a table: any order, any kind
    "SELECT i.item, o.qty FROM items i LEFT JOIN orders o ON i.item = o.item",
    "SELECT i.item, j.price FROM items i FULL JOIN items j ON i.item = j.item",
])
def test_a_subscribe_over_a_join_of_two_joins_with_diffs(text):
    plan = subscribed(text)
    assert plan.diffs
    assert plan.names[:2] == ["mz_timestamp", "mz_diff"] and len(plan.names) == 4
    # a stream of changes: no key, no per-batch table reads, no table-table changelog
    assert (plan.kind, plan.keys, plan.per_batch, plan.table_join) == ("STREAM", (), False, None)


@pytest.mark.parametrize("text, dialect", [
    ("SELECT o.item, i.price FROM orders o LEFT JOIN items i ON o.item = i.item", "ksql"),
    ("SELECT e.text, count(*) FROM events e JOIN orders o ON o.item = e.text GROUP BY e.text", "materialize"),
    ("SELECT * FROM events", "materialize"),
])
def test_other_push_queries_do_not(text, dialect):
    plan = subscribed(text, dialect)
    assert not plan.diffs and "mz_diff" not in plan.names


def test_a_snapshot_join_has_no_diffs():
    stmt = parse_statement("SELECT o.item FROM orders o LEFT JOIN events e ON o.item = e.text", dialect="materialize")
    assert not analyse(stmt, catalog(), "materialize").diffs


def test_on_is_a_conjunction_of_equalities_between_the_two_sides():
    plan = subscribed("SELECT o.id FROM orders o JOIN clicks c ON c.id = o.id AND o.item = c.url")
    pairs = equalities(plan.statement.joins[0].on, plan.inputs)
    # each pair is (left input's expression, right input's): the written order does not matter
    assert [(l.qualifier, l.name, r.qualifier, r.name) for l, r in pairs] == [("o", "id", "c", "id"),
                                                                             ("o", "item", "c", "url")]
    with pytest.raises(StatementError, match=r"^line 1:\d+: SUBSCRIBE over a join supports ON clauses that equate "
                                             r"an expression of each side \(joined by AND\) only; got \(o.qty > c.id\)\.$"):
        subscribed("SELECT o.id FROM orders o LEFT JOIN clicks c ON o.id = c.id AND o.qty > c.id")


def test_a_view_that_aggregates_is_not_a_join_input_yet():
    cat = catalog()
    view = parse_statement("SELECT text, count(*) AS n FROM events GROUP BY text", dialect="materialize")
    cat.add(ViewDef("counts", view, dialect="materialize"))
    with pytest.raises(StatementError, match="^SUBSCRIBE over a join of 'c' is not supported yet: the view aggregates"):
        subscribed("SELECT o.item, c.n FROM orders o JOIN counts c ON o.item = c.text", cat=cat)
    # a view that projects and filters records joins
    cat.add(ViewDef("long", parse_statement("SELECT text FROM events WHERE length(text) > 3", dialect="materialize"),
                    dialect="materialize"))
    assert subscribed("SELECT o.item FROM orders o LEFT JOIN long l ON o.item = l.text", cat=cat).diffs


def test_only_the_pseudocolumns_a_query_names_are_kept_in_its_rows():
    plan = subscribed("SELECT o.item, o.ROWOFFSET AS at FROM orders o JOIN events e ON o.item = e.text")
    assert referenced_pseudocolumns(plan.statement, plan.inputs[0]) == ("ROWOFFSET",)
    assert referenced_pseudocolumns(plan.statement, plan.inputs[1]) == ("ROWOFFSET",)  # by name: kept, unused
    plain = subscribed("SELECT o.item FROM orders o JOIN events e ON o.item = e.text")
    assert referenced_pseudocolumns(plain.statement, plain.inputs[0]) == ()
    assert isinstance(plain.statement.joins[0].on, ast.BinaryOp)


def test_a_view_that_joins_passes_its_diffs_through_a_projection():
    cat = catalog()
    cat.add(ViewDef("j", parse_statement("SELECT o.item, e.text FROM orders o LEFT JOIN events e "
                                         "ON o.item = e.text", dialect="materialize"), dialect="materialize"))
    assert subscribed("SELECT * FROM j", cat=cat).names == ["mz_timestamp", "mz_diff", "item", "text"]
    plan = subscribed("SELECT item FROM j WHERE text IS NULL", cat=cat)
    assert (plan.diffs, plan.names) == (True, ["mz_timestamp", "mz_diff", "item"])
    # a snapshot of it has its columns only; mz_diff is no column of the query (as in Materialize)
    assert analyse(parse_statement("SELECT * FROM j", dialect="materialize"), cat, "materialize").names == [
        "item", "text"]
    with pytest.raises(StatementError, match='column "mz_diff" does not exist'):
        subscribed("SELECT item FROM j WHERE mz_diff > 0", cat=cat)
    with pytest.raises(StatementError, match="^SUBSCRIBE over an aggregation of 'j' is not supported yet"):
        subscribed("SELECT text, count(*) FROM j GROUP BY text", cat=cat)
    with pytest.raises(StatementError, match="^SUBSCRIBE over a join of 'j' is not supported yet: the view joins"):
        subscribed("SELECT j.item FROM j JOIN events e ON j.item = e.text", cat=cat)


def test_more_than_two_relations_join_inner_over_append_only_sources_only():
    three = "SELECT o.item FROM orders o JOIN events e ON o.item = e.text {} clicks c ON c.url = e.text"
    assert not subscribed(three.format("JOIN")).diffs  # Spark's stream-stream joins, as before
    with pytest.raises(StatementError, match="^SUBSCRIBE over more than two joined relations is not supported yet"):
        subscribed(three.format("LEFT JOIN"))
    with pytest.raises(StatementError, match="^SUBSCRIBE over more than two joined relations is not supported yet"):
        subscribed("SELECT o.item FROM orders o JOIN events e ON o.item = e.text JOIN items i ON i.item = o.item")
