"""ksqlDB's constructors and grouping syntax: STRUCT(a := 1), ARRAY[...], MAP(k := v),
GROUP BY (a, b), parsed, rendered back and typed. No Spark."""

from __future__ import annotations

import pytest

from kafkasql_magic.errors import ExpressionTypeError, SqlSyntaxError
from kafkasql_magic.sql import ast, parse_statement
from kafkasql_magic.sql.render import render
from kafkasql_magic.typecheck import check_expression

T = ast.Type
COLUMNS = {"ID": T("INT"), "V": T("STRING"), "X": T("DOUBLE")}


def item(text: str) -> ast.Expr:
    return parse_statement(f"SELECT {text} FROM s;").items[0].expr


@pytest.mark.parametrize("text, rendered, typed", [
    ("STRUCT(a := 1, b := v)", "STRUCT(A:=1, B:=V)", T("STRUCT", fields=(("A", T("INT")), ("B", T("STRING"))))),
    ("ARRAY[1, id, 3]", "ARRAY[1, ID, 3]", T("ARRAY", element=T("INT"))),
    ("ARRAY[id, x]", "ARRAY[ID, X]", T("ARRAY", element=T("DOUBLE"))),
    ("MAP('a' := 1, v := 2)", "MAP('a':=1, V:=2)", T("MAP", key=T("STRING"), value=T("INT"))),
    ("MAP('a' := STRUCT(n := x))", "MAP('a':=STRUCT(N:=X))",
     T("MAP", key=T("STRING"), value=T("STRUCT", fields=(("N", T("DOUBLE")),)))),
    ("v + 'x'", "(V + 'x')", T("STRING")),
])
def test_constructors_parse_render_and_type(text, rendered, typed):
    expr = item(text)
    assert render(expr) == rendered
    assert check_expression(expr, COLUMNS, "ksql") == typed
    assert render(item(rendered)) == rendered  # what is rendered parses back to the same text


def test_a_subscript_is_not_an_array_constructor():
    assert item("arr[1]") == ast.Subscript(ast.ColumnRef("ARR"), ast.Literal(1, "INT"))


def test_group_by_takes_a_parenthesised_list():
    stmt = parse_statement("SELECT id, v, COUNT(*) FROM s GROUP BY (id, v) EMIT CHANGES;")
    assert stmt.group_by == (ast.ColumnRef("ID"), ast.ColumnRef("V"))
    assert parse_statement("SELECT id, COUNT(*) FROM s GROUP BY (id) EMIT CHANGES;").group_by == (ast.ColumnRef("ID"),)


@pytest.mark.parametrize("text, message", [
    ("MAP(1 := 2, 3)", "line 1:8: Syntax Error\nEvery entry of a constructor needs `:=`"),
    ("STRUCT(s.a := 1)", "line 1:15: Syntax Error\nA STRUCT field name must be an identifier"),
])
def test_malformed_constructors_say_where(text, message):
    with pytest.raises(SqlSyntaxError) as caught:
        item(text)
    assert str(caught.value).startswith(message)


def test_map_entries_of_clashing_types_are_refused():
    with pytest.raises(ExpressionTypeError):
        check_expression(item("MAP('a' := 1, 'b' := v)"), COLUMNS, "ksql")


def test_every_scalar_function_has_a_signature_of_a_matching_arity():
    functions = pytest.importorskip("kafkasql_magic.engine.functions.catalogue_spark", reason="functions need pyspark")
    from kafkasql_magic.typecheck import signatures
    assert set(functions.FUNCTIONS) == set(signatures.SCALAR)
    for name, fn in functions.FUNCTIONS.items():
        sigs = signatures.SIGNATURES[name]
        low = min(len(s.params) - s.variadic for s in sigs)
        assert low >= fn.min_args, name
        if fn.max_args is not None:
            assert max(len(s.params) for s in sigs) <= fn.max_args, name


@pytest.mark.parametrize("text, typed", [
    ("ATAN2(id, x)", T("DOUBLE")), ("ARRAY_MAX(ARRAY[id, 2])", T("INT")),
    ("SLICE(ARRAY[v], 1, 1)", T("ARRAY", element=T("STRING"))), ("ELT(1, v, 'b')", T("STRING")),
    ("AS_MAP(ARRAY[v], ARRAY[x])", T("MAP", key=T("STRING"), value=T("DOUBLE"))), ("AS_VALUE(id)", T("INT")),
])
def test_added_functions_are_typed(text, typed):
    assert check_expression(item(text), COLUMNS, "ksql") == typed
