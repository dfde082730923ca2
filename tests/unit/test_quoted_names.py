"""ksqlDB keeps a quoted identifier's case exactly: `"foo"` and `foo` (`FOO`) are different
names for sources, columns, struct fields and aliases, while an unquoted name still finds a
source or column declared in the other dialect ignoring case. No Spark."""

from __future__ import annotations

import pytest

from kafkasql_magic.errors import ExpressionTypeError, StatementError
from kafkasql_magic.sql import ast, parse_statement
from kafkasql_magic.sql.names import match
from kafkasql_magic.typecheck import check_expression

from test_analysis import SETTINGS, catalog, ddl, plan_of


@pytest.fixture
def cat():
    found = catalog()  # has the Materialize source `events` (column `text`)
    for create in ('CREATE STREAM q ("foo" INT, FOO STRING, "Mixed" BIGINT, s STRUCT<"f" INT, G INT>) '
                   "WITH (kafka_topic='q', value_format='JSON');",
                   "CREATE STREAM \"lower\" (a INT) WITH (kafka_topic='l', value_format='JSON');",
                   "CREATE STREAM only_quoted (\"bar\" INT) WITH (kafka_topic='b', value_format='JSON');"):
        found.add(ddl.source_from_create(parse_statement(create), SETTINGS))
    return found


def test_a_quoted_lower_case_column_and_an_unquoted_one_are_different_columns(cat):
    plan = plan_of('SELECT "foo", foo AS upper_foo, "Mixed" FROM q EMIT CHANGES;', cat=cat)
    assert plan.names == ["foo", "UPPER_FOO", "Mixed"]  # a quoted name keeps its case in the result
    assert [e.name for _, e in plan.outputs] == ["foo", "FOO", "Mixed"]
    assert plan_of("SELECT * FROM q EMIT CHANGES;", cat=cat).names == ["foo", "FOO", "Mixed", "S"]


@pytest.mark.parametrize("text, message", [
    ("SELECT bar FROM only_quoted EMIT CHANGES;", "SELECT column 'BAR' cannot be resolved."),
    ('SELECT "a" FROM "lower" EMIT CHANGES;', "SELECT column 'a' cannot be resolved."),
    ('SELECT "mixed" FROM q EMIT CHANGES;', "SELECT column 'mixed' cannot be resolved."),
    ("SELECT * FROM lower EMIT CHANGES;", "LOWER does not exist."),
])
def test_an_unquoted_name_does_not_find_a_quoted_lower_case_one(cat, text, message):
    with pytest.raises(StatementError) as info:
        plan_of(text, cat=cat)
    assert message in str(info.value)


def test_quoted_names_resolve_exactly(cat):
    """(A struct field's provenance is not known: an unquoted `s->f` still finds a field `f`.)"""
    assert plan_of('SELECT s->"f", s->g FROM q EMIT CHANGES;', cat=cat).names == ["f", "G"]
    assert plan_of('SELECT * FROM "lower" EMIT CHANGES;', cat=cat).names == ["A"]
    assert plan_of('SELECT a AS "x", a AS x FROM "lower" EMIT CHANGES;', cat=cat).names == ["x", "X"]


def test_a_source_declared_in_the_other_dialect_is_found_ignoring_case(cat):
    assert plan_of("SELECT text FROM EVENTS EMIT CHANGES;", cat=cat).names == ["TEXT"]
    assert plan_of('SELECT "text" AS t FROM events EMIT CHANGES;', cat=cat).names == ["T"]


def test_quoted_and_unquoted_sources_of_one_name_can_both_exist(cat):
    cat.add(ddl.source_from_create(parse_statement(
        "CREATE STREAM lower (b STRING) WITH (kafka_topic='l2', value_format='JSON');"), SETTINGS))
    assert plan_of("SELECT * FROM lower EMIT CHANGES;", cat=cat).names == ["B"]
    assert plan_of('SELECT * FROM "lower" EMIT CHANGES;', cat=cat).names == ["A"]


def test_the_matching_rule():
    assert match("FOO", ["foo"], "ksql") == "foo"  # unquoted, another dialect's column
    assert match("FOO", ["foo"], "ksql", own=["foo"]) is None  # ksql's own quoted "foo"
    assert match("foo", ["FOO"], "ksql") is None  # quoted "foo" is not FOO
    assert match("foo", ["FOO"], "materialize") == "FOO"
    assert match("Foo", ["foo"], "materialize") is None
    assert match("foo", ["FOO"]) == "FOO"  # no dialect: ignoring case
    assert match("FOO", ["foo", "Foo"], "ksql") is None  # ambiguous


def test_the_type_checker_keeps_quoted_case():
    with pytest.raises(ExpressionTypeError, match="Column 'foo' cannot be resolved"):
        check_expression(ast.ColumnRef("foo"), {"FOO": ast.Type("INT")}, "ksql")
