"""ksqlDB's lambdas (`x => ...`, `(x, y) => ...`) in TRANSFORM, FILTER and REDUCE: parsed with
positions, rendered back, typed from the collection, and refused in ksqlDB's words. No Spark."""

from __future__ import annotations

import pytest

from kafkasql_magic.errors import ExpressionTypeError, SqlSyntaxError, StatementError
from kafkasql_magic.sql import ast, parse_statement
from kafkasql_magic.sql.render import render
from kafkasql_magic.typecheck import check_expression
from kafkasql_magic.typecheck.lambdas import OVERLOADS

T = ast.Type
INT, STRING = T("INT"), T("STRING")
COLUMNS = {"ID": INT, "ARR": T("ARRAY", element=INT), "WORDS": T("ARRAY", element=STRING),
           "M": T("MAP", key=STRING, value=T("ARRAY", element=INT)), "ST": T("BIGINT"), "ROWTIME": T("BIGINT")}


def item(text: str) -> ast.Expr:
    return parse_statement(f"SELECT {text} FROM s;").items[0].expr


def test_a_lambda_parses_with_positions_and_upper_cased_parameters():
    call = item("TRANSFORM(arr, x => x + 1)")
    lam = call.args[1]
    assert lam == ast.Lambda(("X",), ast.BinaryOp("+", ast.ColumnRef("X"), ast.Literal(1, "INT")))
    assert (lam.line, lam.column) == (1, 23)
    assert item("FILTER(m, (k, v) => v IS NULL)").args[1].params == ("K", "V")
    assert item("FILTER(arr, (x) => x > 1)").args[1].params == ("X",)  # one parameter in parentheses
    assert item('FILTER(arr, "x" => "x" > 1)').args[1].params == ("x",)  # quoted: kept as written


@pytest.mark.parametrize("text, rendered, typed", [
    ("TRANSFORM(arr, x => x * 2)", "TRANSFORM(ARR, X => (X * 2))", T("ARRAY", element=INT)),
    ("TRANSFORM(words, w => LEN(w))", "TRANSFORM(WORDS, W => LEN(W))", T("ARRAY", element=INT)),
    ("TRANSFORM(m, (k, v) => UCASE(k), (k, v) => ARRAY_MAX(v))",
     "TRANSFORM(M, (K, V) => UCASE(K), (K, V) => ARRAY_MAX(V))", T("MAP", key=STRING, value=INT)),
    ("FILTER(arr, x => x > 4)", "FILTER(ARR, X => (X > 4))", T("ARRAY", element=INT)),
    ("FILTER(m, (k, v) => LEN(k) > 1)", "FILTER(M, (K, V) => (LEN(K) > 1))", COLUMNS["M"]),
    ("REDUCE(arr, 0, (s, x) => s + x)", "REDUCE(ARR, 0, (S, X) => (S + X))", INT),
    ("REDUCE(arr, st, (s, x) => s + x)", "REDUCE(ARR, ST, (S, X) => (S + X))", T("BIGINT")),
    ("REDUCE(m, '', (s, k, v) => s + k)", "REDUCE(M, '', (S, K, V) => (S + K))", STRING),
    ("TRANSFORM(m, (k, v) => k, (k, v) => FILTER(v, z => z IS NOT NULL))",
     "TRANSFORM(M, (K, V) => K, (K, V) => FILTER(V, Z => (Z IS NOT NULL)))", COLUMNS["M"]),
    ("TRANSFORM(NULL, x => 1)", "TRANSFORM(NULL, X => 1)", None),
    ("REDUCE(arr, NULL, (s, x) => x)", "REDUCE(ARR, NULL, (S, X) => X)", None),
])
def test_lambdas_render_and_type_from_the_collection(text, rendered, typed):
    expr = item(text)
    assert render(expr) == rendered
    assert check_expression(expr, COLUMNS, "ksql") == typed
    assert render(item(rendered)) == rendered


def _alternatives(name: str) -> str:
    return "\nValid alternatives are:\n" + "\n".join(o.text for o in OVERLOADS[name])


@pytest.mark.parametrize("text, column, message", [
    # the overload is chosen by the collection and each lambda's parameter count, as ksqlDB does
    ("TRANSFORM(arr, (x, y) => x)", 8,
     "Function 'TRANSFORM' does not accept parameters (ARRAY<INTEGER>, LAMBDA)." + _alternatives("TRANSFORM")),
    ("TRANSFORM(m, (k, v) => k)", 8,
     "Function 'TRANSFORM' does not accept parameters (MAP<STRING, ARRAY<INTEGER>>, LAMBDA)."
     + _alternatives("TRANSFORM")),
    ("TRANSFORM(arr, 1)", 8,
     "Function 'TRANSFORM' does not accept parameters (ARRAY<INTEGER>, INTEGER)." + _alternatives("TRANSFORM")),
    ("REDUCE(arr, (s, x) => s)", 8,
     "Function 'REDUCE' does not accept parameters (ARRAY<INTEGER>, LAMBDA)." + _alternatives("REDUCE")),
    ("FILTER(id, x => true)", 8,
     "Function 'FILTER' does not accept parameters (INTEGER, LAMBDA)." + _alternatives("FILTER")),
    # a lambda's result that does not fit is shown with the types it was given
    ("FILTER(arr, x => x + 1)", 8, "Function 'FILTER' does not accept parameters "
     "(ARRAY<INTEGER>, LAMBDA (INTEGER) => INTEGER)." + _alternatives("FILTER")),
    ("REDUCE(arr, 0, (s, x) => s + 1.5)", 8, "Function 'REDUCE' does not accept parameters "
     "(ARRAY<INTEGER>, INTEGER, LAMBDA (INTEGER, INTEGER) => DECIMAL(12, 1))." + _alternatives("REDUCE")),
    ("ABS(x => x)", 8, "Function 'ABS' does not accept parameters (LAMBDA).\nValid alternatives are:\n"
     "ABS(INT val)\nABS(BIGINT val)\nABS(DOUBLE val)\nABS(DECIMAL val)"),
    # ksqlDB's rules on parameter names
    ("TRANSFORM(arr, id => id)", 23, "Lambda function argument can't be a column name: ID"),
    ("TRANSFORM(arr, rowtime => 1)", 23, "Lambda function argument can't be a column name: ROWTIME"),
    ("TRANSFORM(arr, x => TRANSFORM(arr, x => x))", 43, "Reusing lambda arguments in nested lambda is not allowed"),
    ("FILTER(m, (k, k) => true)", 18, "Lambda arguments have duplicates: [K, K]"),
    # a parameter is visible only in its own lambda's body
    ("ARRAY_LENGTH(TRANSFORM(arr, x => x)) + x", 47, "Column 'X' cannot be resolved."),
])
def test_lambda_errors_in_ksqldbs_words(text, column, message):
    """`column` counts from the start of `SELECT ...`."""
    with pytest.raises(ExpressionTypeError) as caught:
        check_expression(item(text), COLUMNS, "ksql")
    assert caught.value.reason == message
    assert (caught.value.line, caught.value.column) == (1, column)


@pytest.mark.parametrize("text, message", [
    ("SELECT x => x FROM s;", "mismatched input '=>'"),             # only a function's argument
    ("SELECT FILTER(arr, a.b => 1) FROM s;", "A lambda's parameters must be names"),
    ("SELECT FILTER(arr, 1 => 1) FROM s;", "A lambda's parameters must be names"),
])
def test_a_lambda_outside_a_call_or_with_odd_parameters_is_a_syntax_error(text, message):
    with pytest.raises(SqlSyntaxError, match=message):
        parse_statement(text)


def test_a_lambda_over_an_aggregate_names_only_its_own_parameters():
    from test_analysis import plan_of

    plan = plan_of("SELECT item, TRANSFORM(COLLECT_LIST(qty), x => x * 2) AS d FROM orders GROUP BY item EMIT CHANGES;")
    assert plan.names == ["ITEM", "D"]
    with pytest.raises(StatementError, match="^Non-aggregate SELECT expression\\(s\\) not part of GROUP BY: "
                       "TRANSFORM\\(COLLECT_LIST\\(QTY\\), "):
        plan_of("SELECT item, TRANSFORM(COLLECT_LIST(qty), x => x * id) AS d FROM orders GROUP BY item EMIT CHANGES;")
