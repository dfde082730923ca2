"""Which unnest calls a SELECT list holds, and its expressions with the calls replaced (no Spark)."""

from __future__ import annotations

import pytest

from kafkasql_magic.errors import StatementError
from kafkasql_magic.engine.unnest.calls import calls_in, with_elements
from kafkasql_magic.sql import ast


def unnest(arg):
    return ast.FunctionCall("UNNEST", (arg,))


L, M = ast.ColumnRef("l"), ast.ColumnRef("m")


def test_calls_anywhere_in_the_list_in_order_each_once_with_the_first_output_holding_it():
    outputs = [("a", ast.BinaryOp("*", unnest(L), ast.Literal(10, "INT"))),
               ("b", ast.ColumnRef("x")),
               ("c", ast.FunctionCall("UPPER", (unnest(M),))),
               ("d", unnest(L))]
    assert calls_in(outputs) == [(unnest(L), 0), (unnest(M), 2)]


def test_each_call_becomes_its_elements_column():
    outputs = [("a", ast.BinaryOp("+", unnest(L), unnest(M)))]
    assert with_elements(outputs[0][1], calls_in(outputs)) == ast.BinaryOp(
        "+", ast.ColumnRef("__unnest_e0"), ast.ColumnRef("__unnest_e1"))


def test_an_unnest_inside_an_unnest_is_refused_where_it_stands():
    inner = ast.FunctionCall("UNNEST", (L,), line=1, column=15)
    with pytest.raises(StatementError, match=r"line 1:15: unnest\(\.\.\.\) inside unnest\(\.\.\.\) is not supported"):
        calls_in([("a", unnest(inner))])
