"""Which result column an ORDER BY key names (engine/order/keys.py): by name, by position, by
being the same expression, or none (an expression of its own)."""

import pytest

from kafkasql_magic.errors import StatementError
from kafkasql_magic.engine.order.keys import output_index
from kafkasql_magic.sql import ast
from kafkasql_magic.sql.ast_materialize import SortKey

OUTPUTS = [("ID", ast.ColumnRef("ID")), ("TOTAL", ast.FunctionCall("SUM", (ast.ColumnRef("AMOUNT"),)))]


def test_a_key_names_a_result_column_by_name_whatever_its_case():
    assert output_index(SortKey(ast.ColumnRef("total")), OUTPUTS) == 1


def test_a_key_names_a_result_column_by_its_1_based_position():
    assert output_index(SortKey(ast.Literal(1, "INT")), OUTPUTS) == 0


def test_a_position_past_the_select_list_is_refused_with_where_it_is():
    with pytest.raises(StatementError, match=r"line 3:9: ORDER BY position 3 is not in select list"):
        output_index(SortKey(ast.Literal(3, "INT", line=3, column=9)), OUTPUTS)


def test_a_key_that_is_a_result_columns_expression_names_it():
    assert output_index(SortKey(ast.FunctionCall("SUM", (ast.ColumnRef("AMOUNT"),))), OUTPUTS) == 1


def test_a_qualified_column_or_another_expression_is_a_key_of_its_own():
    assert output_index(SortKey(ast.ColumnRef("TOTAL", qualifier="s")), OUTPUTS) is None
    assert output_index(SortKey(ast.ColumnRef("AMOUNT")), OUTPUTS) is None
