"""Materialize's writable tables without Spark: parsing, and the rules of their rows."""

from __future__ import annotations

from decimal import Decimal

import pytest

from kafkasql_magic.dialects import writable_tables as wt
from kafkasql_magic.errors import KStreamError, SqlSyntaxError, StatementError
from kafkasql_magic.sinks.command_log import logged
from kafkasql_magic.sql import ast, parse_statement
from kafkasql_magic.sql.ast_tables import (ONE_ROW, Assignment, CreateTable, CreateValuesView, Delete, InsertRows,
                                             TableColumn, Update)

INT, TEXT = ast.Type("INT"), ast.Type("STRING")


def mz(text):
    return parse_statement(text, dialect="materialize")


def table(text="CREATE TABLE t (a int, b text)"):
    return wt.table_def(mz(text), "topic")


def test_parsing():
    assert mz("CREATE TABLE t (a int, b text)") == CreateTable("t", (TableColumn("a", INT), TableColumn("b", TEXT)))
    assert mz("create table if not exists T (x bigint)").if_not_exists
    assert mz("INSERT INTO t VALUES (1, 'x'), (2, NULL)") == InsertRows("t", (), (
        (ast.Literal(1, "INT"), ast.Literal("x", "STRING")), (ast.Literal(2, "INT"), ast.Literal(None, "NULL"))))
    assert mz("INSERT INTO t (b) VALUES ('y')").columns == ("b",)
    assert mz("UPDATE t SET b = 'z' WHERE a = 1") == Update(
        "t", (Assignment("b", ast.Literal("z", "STRING")),),
        ast.BinaryOp("=", ast.ColumnRef("a"), ast.Literal(1, "INT")))
    assert mz("DELETE FROM t") == Delete("t")
    assert mz("DELETE FROM t WHERE a > 1").where is not None
    # the new keywords stay names
    select = mz("SELECT values, set, update, insert, delete FROM t")
    assert [i.expr.name for i in select.items] == ["values", "set", "update", "insert", "delete"]


@pytest.mark.parametrize("text, message", [
    ("UPDATE t SET a = 1, a = 2", 'column "a" specified more than once'),
    ("INSERT INTO t (a, a) VALUES (1, 2)", 'column "a" specified more than once'),
    ("CREATE TABLE t (a int, a text)", 'column "a" specified more than once'),
    ("INSERT INTO t VALUES", r"Expected '\(', found EOF"),
])
def test_syntax_errors(text, message):
    with pytest.raises(SqlSyntaxError, match=message):
        mz(text)


def test_the_ksql_dialect_does_not_parse_them():
    with pytest.raises(KStreamError):
        parse_statement("UPDATE t SET a = 1")
    assert isinstance(parse_statement("INSERT INTO s VALUES (1)"), ast.InsertValues)  # ksqlDB's, as before


def test_a_table_is_an_upsert_changelog_keyed_by_nothing_visible():
    t = table()
    assert (t.kind, t.envelope, t.key_format.name, t.value_format.name) == ("TABLE", "UPSERT", "NONE", "JSON")
    assert [c.name for c in t.star_columns] == ["a", "b"] and not t.key_columns
    assert wt.is_writable(t) and t.keyed
    assert wt.topic_for("t", "svc", "x") == "_kafkasql_svc_table_t"
    assert wt.topic_for("t", None, "tok") == "_kafkasql_table_tok_t"
    assert logged(mz("CREATE TABLE t (a int)")) and not logged(mz("INSERT INTO t VALUES (1)"))


def test_column_types_a_table_takes():
    t = table("CREATE TABLE t (l int list, ll text list list, m map[text=>int list])")
    assert [wt.type_word(c.type) for c in t.columns] == ["integer list", "text list list", "map[text=>integer list]"]
    with pytest.raises(StatementError, match='column "t" has type time'):
        table("CREATE TABLE t (t time)")
    with pytest.raises(StatementError, match="map key type must be text, got integer"):
        table("CREATE TABLE t (m map[int=>int])")


def test_list_and_map_values():
    t = table("CREATE TABLE t (l int list, ll text list list, m map[text=>int])")
    assert rows("INSERT INTO t VALUES (LIST[1, -2, NULL], LIST[LIST['a'], LIST[]], MAP['x' => 1, 'x' => 2])", t) == [
        [[1, -2, None], [["a"], []], {"x": 2}]]  # a repeated key keeps its last value
    assert rows("""INSERT INTO t VALUES ('{1, NULL}', '{{"a,}"}, {b}}'::text list list, '{x=>1, "y z"=>NULL}')""",
                t) == [[[1, None], [["a,}"], ["b"]], {"x": 1, "y z": None}]]
    assert rows("INSERT INTO t VALUES ('{}', '{}', '{}')", t) == [[[], [], {}]]


@pytest.mark.parametrize("text, message", [
    ("INSERT INTO t (l) VALUES (MAP['a' => 1])",
     r'column "l" is of type integer list but expression is of type map\[text=>integer\]'),
    ("INSERT INTO t (m) VALUES (LIST['a'])", r'column "m" is of type map\[text=>integer\] but expression is of type '
                                             "text list"),
    ("INSERT INTO t (l) VALUES ('{1,x}')",
     'invalid input syntax for type integer list: invalid input syntax for type integer: "x": "{1,x}"'),
    ("INSERT INTO t (l) VALUES ('{1')", 'invalid input syntax for type integer list: unexpected end of input: "{1"'),
    ("INSERT INTO t (l) VALUES ('{1} x')", 'invalid input syntax for type integer list'),
    ("INSERT INTO t (m) VALUES ('{a}')", r'invalid input syntax for type map\[text=>integer\]'),
    ("INSERT INTO t (l) VALUES ('{1}'::text list)", "is of type integer list but expression is of type text list"),
    ("INSERT INTO t (l) VALUES (LIST[1 + 1])", "takes constant values here"),
])
def test_list_and_map_messages(text, message):
    with pytest.raises(StatementError, match=message):
        rows(text, table("CREATE TABLE t (l int list, m map[text=>int])"))


def rows(text, t=None):
    return wt.rows_to_insert(mz(text), t or table())


def test_insert_rows():
    assert rows("INSERT INTO t VALUES (1, 'x'), (-2, NULL)") == [[1, "x"], [-2, None]]
    assert rows("INSERT INTO t (b) VALUES ('y')") == [[None, "y"]]
    assert rows("INSERT INTO t VALUES ('7', 'x')") == [[7, "x"]]  # a quoted literal is read as the column's type
    assert rows("INSERT INTO t VALUES (2.6)") == [[3, None]]  # numeric to integer rounds
    d = table("CREATE TABLE d (n numeric, f double, ok bool, day date)")
    assert rows("INSERT INTO d VALUES (1.5, 2, 'yes', '2024-01-31'::date)", d)[0][:3] == [Decimal("1.5"), 2.0, True]


@pytest.mark.parametrize("text, message", [
    ("INSERT INTO t VALUES (1, 2)", 'column "b" is of type text but expression is of type integer'),
    ("INSERT INTO t VALUES (true)", 'column "a" is of type integer but expression is of type boolean'),
    ("INSERT INTO t (c) VALUES (1)", 'column "c" of relation "materialize.public.t" does not exist'),
    ("INSERT INTO t VALUES (1, 'a', 3)", "INSERT has more expressions than target columns"),
    ("INSERT INTO t (a, b) VALUES (1)", "INSERT has more target columns than expressions"),
    ("INSERT INTO t VALUES ('x')", 'invalid input syntax for type integer: "x"'),
    ("INSERT INTO t VALUES (3000000000)", "integer out of range"),
    ("INSERT INTO t VALUES (1 + 1)", "takes constant values here"),
])
def test_insert_messages(text, message):
    with pytest.raises(StatementError, match=message):
        rows(text)


def test_update_assignments():
    a = table().columns[0]
    assert wt.assignable(a, "BIGINT") and wt.assignable(a, None) and not wt.assignable(a, "STRING")
    assert wt.mismatch(a, "STRING") == 'column "a" is of type integer but expression is of type text'


def test_constant_relations_parse():
    view = mz("CREATE OR REPLACE VIEW v AS VALUES (1, 'a'), (2, 'b')")
    assert isinstance(view, CreateValuesView) and view.name == "v" and view.or_replace and len(view.rows) == 2
    select = mz("SELECT 1 AS a, 'x' AS b")  # no FROM: the one-row relation
    assert select.source == ast.SourceRef(ONE_ROW) and [i.alias for i in select.items] == ["a", "b"]
    assert mz("CREATE VIEW w AS SELECT 1 AS a").query.source.name == ONE_ROW
    with pytest.raises(SqlSyntaxError, match="SELECT \\* with no tables specified is not valid"):
        mz("SELECT *")
    with pytest.raises(SqlSyntaxError, match="VALUES lists must all be the same length"):
        mz("CREATE VIEW v AS VALUES (1), (1, 2)")


def columns_of(text):
    return [(n, t.name) for n, t in wt.values_columns(mz(text).rows)]


def test_values_columns_are_named_and_typed_as_in_postgresql():
    assert columns_of("CREATE VIEW v AS VALUES (1, 'a'), (2, 'b')") == [("column1", "INT"), ("column2", "STRING")]
    assert columns_of("CREATE VIEW v AS VALUES (1), (2.5), (NULL)") == [("column1", "DECIMAL")]
    assert columns_of("CREATE VIEW v AS VALUES ('7'), (-1)") == [("column1", "INT")]  # a quoted literal adapts
    assert columns_of("CREATE VIEW v AS VALUES (NULL)") == [("column1", "STRING")]
    assert columns_of("CREATE VIEW v AS VALUES ('2024-01-31'::date)") == [("column1", "DATE")]
    with pytest.raises(StatementError, match="^VALUES types integer and boolean cannot be matched$"):
        columns_of("CREATE VIEW v AS VALUES (1), (true)")
