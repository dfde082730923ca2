"""INSERT VALUES checks that need no Spark, in ksqlDB's order and words (insert-values.json)."""

from __future__ import annotations

import pytest

from kafkasql_magic.errors import StatementError
from kafkasql_magic.sql import parse_statement
from kafkasql_magic.statements.records import record_from_insert

from test_analysis import catalog


def _record(text: str):
    def never(exprs):
        raise AssertionError(f"nothing to evaluate: {exprs}")
    return record_from_insert(parse_statement(text), catalog().get("ORDERS"), never)


def test_a_qualified_column_fails_first_and_an_unqualified_one_after_the_counts():
    with pytest.raises(StatementError, match="^Failed to prepare statement: 'FOO' is not a valid stream/table "
                                             "name or alias.$"):
        _record("INSERT INTO orders (id) VALUES (FOO.bar, 1);")
    with pytest.raises(StatementError, match="^Failed to prepare statement: Expected number columns and values "
                                             "to match: 2, 1$"):
        _record("INSERT INTO orders (id, item) VALUES (qty);")
    with pytest.raises(StatementError, match=r"^Unsupported column reference in insert value: \(QTY \+ 1\)$"):
        _record("INSERT INTO orders (id, item) VALUES (1, qty + 1);")
