"""Absurd statements are refused at the parser with a positioned message, in both dialects,
before anything recursive (the tree builder, the type checker, the planner) sees them."""

from __future__ import annotations

import pytest

from kafkasql_magic.errors import SqlSyntaxError
from kafkasql_magic.sql import parse_statement
from kafkasql_magic.sql.parser import MAX_ITEMS, MAX_NESTING

DEEP = MAX_NESTING + 50
NESTING_MESSAGE = (f"Expressions nest too deeply: more than {MAX_NESTING} levels (parentheses, function calls, "
                   "CASE, NOT, signs and each operator of a chain count one level). Simplify the statement.")


@pytest.mark.parametrize("dialect", ["ksql", "materialize"])
@pytest.mark.parametrize("expression", [
    "ABS(" * DEEP + "x" + ")" * DEEP,
    "NOT " * DEEP + "x",
    "- " * DEEP + "x",
    "CASE WHEN x THEN " * DEEP + "1" + " END" * DEEP,
    " + ".join(["x"] * DEEP),
    " AND ".join(["x"] * DEEP),
    "(x + " * DEEP + "1" + ")" * DEEP,
])
def test_deep_nesting_is_refused_with_a_caret(expression, dialect):
    text = f"SELECT {expression} FROM s"
    with pytest.raises(SqlSyntaxError) as caught:
        parse_statement(text, dialect=dialect)
    error = caught.value
    assert error.reason == NESTING_MESSAGE
    assert error.line == 1 and 8 <= error.column <= len(text)
    assert error.excerpt.endswith("^")


@pytest.mark.parametrize("expression", [
    "ABS(" * 100 + "x" + ")" * 100,
    "NOT " * 100 + "x",
    " + ".join(["x"] * 100),
    "(" * 3000 + "x" + ")" * 3000,  # parentheses alone add no level
])
def test_deep_but_reasonable_statements_parse(expression):
    parse_statement(f"SELECT {expression} FROM s")


def test_long_lists_are_capped():
    limit = MAX_ITEMS["in_list"][0]
    parse_statement("SELECT x FROM s WHERE x IN (" + ", ".join(["1"] * limit) + ")")
    text = "SELECT x FROM s WHERE x IN (" + ", ".join(["1"] * (limit + 1)) + ")"
    with pytest.raises(SqlSyntaxError) as caught:
        parse_statement(text)
    assert (caught.value.reason, caught.value.column) == (f"Too many values in an IN list: {limit + 1} (at most "
                                                          f"{limit:,}).", 23)
    branches = MAX_ITEMS["searched_case"][0] + 1
    with pytest.raises(SqlSyntaxError, match=f"Too many WHEN branches in a CASE: {branches} "):
        parse_statement("SELECT CASE " + "WHEN x THEN 1 " * branches + "END FROM s", dialect="materialize")
    arguments = MAX_ITEMS["function_call"][0] + 1
    with pytest.raises(SqlSyntaxError, match=f"Too many arguments of a function: {arguments} "):
        parse_statement("SELECT CONCAT(" + ", ".join(["x"] * arguments) + ") FROM s")


@pytest.mark.parametrize("text, message, column", [
    ("SELECT * FROM a JOIN b WITHIN 99999999999 DAYS ON a.x = b.x",
     "Duration too long: 99999999999 DAYS (at most 36,500 DAYS)", 31),
    ("SELECT * FROM a JOIN b WITHIN (1 SECOND, 36501 DAYS) ON a.x = b.x",
     "Duration too long: 36501 DAYS (at most 36,500 DAYS)", 42),
    ("SELECT COUNT(*) FROM a WINDOW TUMBLING (SIZE 0 SECONDS) GROUP BY x",
     "Window SIZE must be a positive duration", 24),
    ("SELECT COUNT(*) FROM a WINDOW HOPPING (SIZE 1 MINUTE, ADVANCE BY 0 SECONDS) GROUP BY x",
     "Window ADVANCE BY must be a positive duration", 24),
])
def test_durations_are_bounded(text, message, column):
    with pytest.raises(SqlSyntaxError) as caught:
        parse_statement(text)
    assert (caught.value.reason, caught.value.column) == (message, column)


def test_the_longest_duration_parses():
    statement = parse_statement("SELECT * FROM a JOIN b WITHIN 36500 DAYS ON a.x = b.x")
    assert statement.joins[0].within == (36500 * 86_400_000,) * 2


@pytest.mark.parametrize("count", ["0", "99999999"])
def test_csv_column_counts_are_bounded(count):
    """`CSV WITH 99999999 COLUMNS` would plan a hundred million columns: refused at the parser."""
    text = f"CREATE SOURCE s FROM KAFKA BROKER 'b:9092' TOPIC 't' FORMAT CSV WITH {count} COLUMNS"
    with pytest.raises(SqlSyntaxError) as caught:
        parse_statement(text, dialect="materialize")
    assert caught.value.reason == f"CSV WITH {count} COLUMNS: a CSV format has 1 to 10,000 columns"
    assert caught.value.column == text.index("CSV") + 1
    assert parse_statement(text.replace(count, "10000"), dialect="materialize").format.csv_columns == 10_000
