"""Materialize's CREATE TYPE without Spark: parsing, the catalog entry, names resolved in a
table's columns and INSERT's casts, DROP TYPE's refusal, Materialize's messages."""

from __future__ import annotations

import pytest

from kafkasql_magic.catalog import Catalog
from kafkasql_magic.dialects import custom_types as ct
from kafkasql_magic.dialects import writable_tables as wt
from kafkasql_magic.errors import ExpressionTypeError, StatementError
from kafkasql_magic.sinks.command_log import logged
from kafkasql_magic.sql import ast, parse_statement
from kafkasql_magic.sql.ast_materialize import CreateType, NamedType
from kafkasql_magic.typecheck.checker import check_select

INT, TEXT = ast.Type("INT"), ast.Type("STRING")


def mz(text):
    return parse_statement(text, dialect="materialize")


def catalog_of(*statements) -> dict:
    types: dict = {}
    for text in statements:
        stmt = mz(text)
        types[stmt.name] = ct.define(stmt, types, lambda name: False, text)
    return types


def test_parsing():
    assert mz("CREATE TYPE rec AS (a int, b text)") == CreateType("rec", ast.Type("STRUCT", fields=(("a", INT),
                                                                                                   ("b", TEXT))))
    assert mz("CREATE TYPE l AS LIST (ELEMENT TYPE = int4)") == CreateType("l", ast.Type("ARRAY", element=INT))
    assert mz("create type M as map (key type = text, value type = rec)") == CreateType(
        "m", ast.Type("MAP", key=TEXT, value=NamedType("NAMED", type_name="rec")))
    assert mz('CREATE TABLE t (r "Rec" list)').columns[0].type == ast.Type(
        "ARRAY", element=NamedType("NAMED", type_name="Rec"))
    assert mz("SHOW TYPES") == ast.Show("TYPES")
    assert mz("DROP TYPE IF EXISTS rec") == ast.Drop("TYPE", "rec", True)
    assert logged(mz("CREATE TYPE l AS LIST (ELEMENT TYPE = int)")) and logged(mz("DROP TYPE l"))
    # the new keywords stay names
    assert [i.expr.name for i in mz("SELECT types, element, type FROM t").items] == ["types", "element", "type"]


def test_define_and_resolve():
    types = catalog_of("CREATE TYPE rec AS (a int, b text)", "CREATE TYPE l AS LIST (ELEMENT TYPE = rec)",
                       "CREATE TYPE m AS MAP (KEY TYPE = text, VALUE TYPE = l)")
    record = ast.Type("STRUCT", fields=(("a", INT), ("b", TEXT)))
    assert types["m"].type == ast.Type("MAP", key=TEXT, value=ast.Type("ARRAY", element=record))
    assert types["m"].uses == ("l",) and types["l"].uses == ("rec",)
    from kafkasql_magic.dialects.comments import Comments

    assert ct.show_rows(types, Comments()) == [{"name": n, "comment": ""} for n in ("l", "m", "rec")]
    assert ct.type_word(types["m"].type) == "map[text=>record list]"


@pytest.mark.parametrize("statements, message", [
    (["CREATE TYPE l AS LIST (ELEMENT TYPE = nope)"], 'type "nope" does not exist'),
    (["CREATE TYPE m AS MAP (KEY TYPE = int, VALUE TYPE = int)"], "map key type must be text, got integer"),
    (["CREATE TYPE l AS LIST (ELEMENT TYPE = int)", "CREATE TYPE l AS (a int)"], "catalog item 'l' already exists"),
])
def test_define_messages(statements, message):
    with pytest.raises(StatementError, match=message):
        catalog_of(*statements)


def test_a_name_another_catalog_item_has_is_taken():
    with pytest.raises(StatementError, match="catalog item 't' already exists"):
        ct.define(mz("CREATE TYPE t AS (a int)"), {}, lambda name: name == "t")


def test_tables_take_custom_types_and_remember_them():
    types = catalog_of("CREATE TYPE rec AS (a int, b text)", "CREATE TYPE l AS LIST (ELEMENT TYPE = int)")
    table = wt.table_def(mz("CREATE TABLE t (r rec, l l, ll l list)"), "topic", types=types)
    assert [c.type.name for c in table.columns] == ["STRUCT", "ARRAY", "ARRAY"]
    assert table.properties[ct.USES] == ("rec", "l")
    rows = wt.rows_to_insert(mz("INSERT INTO t VALUES (ROW(1, 'x'), '{1,2}'::l, LIST['{3}'::l]),"
                                "  (ROW(2, NULL)::rec, NULL, NULL)"), table, types)
    assert rows == [[{"a": 1, "b": "x"}, [1, 2], [[3]]], [{"a": 2, "b": None}, None, None]]
    texts = wt.rows_to_insert(mz("""INSERT INTO t (r) VALUES ('(3,"y z")'), ('(,)'::rec)"""), table, types)
    assert texts == [[{"a": 3, "b": "y z"}, None, None], [{"a": None, "b": None}, None, None]]
    with pytest.raises(StatementError, match='invalid input syntax for type record: too few columns: "\\(3\\)"'):
        wt.rows_to_insert(mz("INSERT INTO t (r) VALUES ('(3)')"), table, types)
    with pytest.raises(StatementError, match='type "nope" does not exist'):
        wt.table_def(mz("CREATE TABLE t (x nope)"), "topic", types=types)
    with pytest.raises(StatementError, match='type "nope" does not exist'):
        wt.rows_to_insert(mz("INSERT INTO t (l) VALUES ('{1}'::nope)"), table, types)
    with pytest.raises(StatementError, match='column "r" is of type record but expression is of type record'):
        wt.rows_to_insert(mz("INSERT INTO t (r) VALUES (ROW(1))"), table, types)
    with pytest.raises(StatementError, match='column "l" is of type integer list but expression is of type record'):
        wt.rows_to_insert(mz("INSERT INTO t (l) VALUES (ROW(1))"), table, types)

    catalog = Catalog()
    catalog.add(table)
    with pytest.raises(StatementError, match='cannot drop type "materialize.public.rec": still depended upon by '
                                             'table "materialize.public.t"'):
        ct.check_drop("rec", types, catalog)
    nested = catalog_of("CREATE TYPE l AS LIST (ELEMENT TYPE = int)", "CREATE TYPE ll AS LIST (ELEMENT TYPE = l)")
    with pytest.raises(StatementError, match='still depended upon by type "materialize.public.ll"'):
        ct.check_drop("l", nested, Catalog())
    ct.check_drop("ll", nested, Catalog())


def test_a_query_cast_to_a_name_no_type_has_is_refused_with_its_name():
    with pytest.raises(ExpressionTypeError, match='line 1:11: type "rec" does not exist'):
        check_select(mz("SELECT a::rec FROM s"), {"A": INT}, "materialize")


def test_a_querys_casts_to_custom_types_are_casts_to_the_types_they_name():
    types = catalog_of("CREATE TYPE point AS (x int, y int)", "CREATE TYPE ints AS LIST (ELEMENT TYPE = int)")
    stmt = ct.with_custom_types(mz("SELECT ROW(1, 2)::point AS p, '{1}'::ints AS l, a::point list AS m, a::other "
                                   "FROM (SELECT CAST(b AS ints) AS a FROM s) AS q"), types)
    point = ast.Type("STRUCT", fields=(("x", INT), ("y", INT)))
    assert [i.expr.type for i in stmt.items[:3]] == [point, ast.Type("ARRAY", element=INT),
                                                     ast.Type("ARRAY", element=point)]
    assert isinstance(stmt.items[3].expr.type, NamedType)  # left for the type check to refuse
    assert stmt.source.query.items[0].expr.type == ast.Type("ARRAY", element=INT)  # inside a subquery too


def test_a_row_is_a_record_of_f1_f2_that_casts_to_a_record_type_of_as_many_fields():
    types = catalog_of("CREATE TYPE point AS (x int, y int)")
    point = ast.Type("STRUCT", fields=(("x", INT), ("y", INT)))

    def items(text):
        stmt = ct.with_custom_types(mz(text), types)
        return check_select(stmt, {"a": INT}, "materialize", untyped=frozenset({"ROW"})).items

    assert items("SELECT ROW(a, 'b') AS r, ROW(1, 2)::point AS p, (ROW(1, 2)::point).y AS y FROM s") == (
        ast.Type("STRUCT", fields=(("f1", INT), ("f2", ast.Type("STRING")))), point, INT)
    with pytest.raises(ExpressionTypeError, match="CAST does not support casting from record to record"):
        items("SELECT ROW(1, 2, 3)::point FROM s")
