"""A persistent query's key in its projection (engine/analysis/key_projection.py), no Spark:
each key column selected once and every key selected, over one source, after GROUP BY, after
PARTITION BY and after a foreign-key join, with ksqlDB's messages; and INSERT INTO's checks."""

from __future__ import annotations

import pytest

from kafkasql_magic.catalog import KEY, VALUE, Catalog, Column, SourceDef
from kafkasql_magic.dialects import ksql_sources as ddl
from kafkasql_magic.engine.analysis import check_insert_kind
from kafkasql_magic.engine.analysis.key_projection import check_key_projected, check_key_selected_once
from kafkasql_magic.errors import StatementError
from kafkasql_magic.formats import FormatSpec
from kafkasql_magic.sinks.plan import Output, check_insert
from kafkasql_magic.sql import ast, parse_statement
from kafkasql_magic.sinks.plan import check_insert_select

from test_analysis import SETTINGS, plan_of


def pets() -> Catalog:
    cat = Catalog()
    for create in (
            "CREATE STREAM pets (id INT KEY, name STRING, age INT) WITH (kafka_topic='p', value_format='JSON');",
            "CREATE STREAM visits (vet INT KEY, room INT KEY, note STRING) WITH (kafka_topic='v', format='JSON');",
            "CREATE TABLE owners (owner_id BIGINT PRIMARY KEY, pet_ref BIGINT, city STRING) "
            "WITH (kafka_topic='o', value_format='JSON');",
            "CREATE TABLE kinds (pet_id BIGINT PRIMARY KEY, kind STRING) WITH (kafka_topic='k', value_format='JSON');",
            "CREATE STREAM treats (id INT KEY, treat STRING) WITH (kafka_topic='t', value_format='JSON');"):
        cat.add(ddl.source_from_create(parse_statement(create), SETTINGS))
    return cat


def plan(text: str):
    return plan_of(text, cat=pets())


AS_VALUE_HINT = ("\nEach key column must only be in the projection once. If you intended to copy the key into the "
                 "value, then consider using the AS_VALUE function to indicate which key reference should be copied.")


def refused_twice(text: str) -> str:
    with pytest.raises(StatementError) as info:
        check_key_selected_once(plan(text))
    assert str(info.value).endswith(AS_VALUE_HINT)
    return str(info.value)[:-len(AS_VALUE_HINT)]


@pytest.mark.parametrize("text, message", [
    # one source: its key column, however it is written
    ("SELECT id, id AS copy, name FROM pets EMIT CHANGES;", "(`ID`) more than once, aliased as: COPY and ID."),
    ("SELECT *, id AS again FROM pets EMIT CHANGES;", "(`ID`) more than once, aliased as: AGAIN and ID."),
    ("SELECT p.id AS z, id AS a, p.name FROM pets p EMIT CHANGES;", "(`ID`) more than once, aliased as: A and Z."),
    ("SELECT room, vet, room AS r2, note FROM visits EMIT CHANGES;",
     "(`ROOM`) more than once, aliased as: R2 and ROOM."),
    # PARTITION BY: the new key column (an expression's is named as the projection names it)
    ("SELECT name, name AS n2, id FROM pets PARTITION BY name EMIT CHANGES;",
     "(`NAME`) more than once, aliased as: N2 and NAME."),
    ("SELECT ABS(age) AS b, ABS(age) AS a, name FROM pets PARTITION BY ABS(age) EMIT CHANGES;",
     "(`KSQL_COL_0`) more than once, aliased as: A and B."),
    # a foreign-key join: the left table's key
    ("SELECT owner_id, owner_id AS dup, city, kind FROM owners JOIN kinds ON pet_ref = pet_id EMIT CHANGES;",
     "(`OWNERS_OWNER_ID`) more than once, aliased as: DUP and OWNER_ID."),
])
def test_a_key_column_selected_twice_is_refused(text, message):
    assert refused_twice(text) == f"The projection contains a key column {message}"


@pytest.mark.parametrize("text, listed", [
    ("SELECT name, name AS name2, COUNT(*) AS n FROM pets GROUP BY name EMIT CHANGES;", "`NAME` and `NAME2`"),
    ("SELECT id, name, id AS other, COUNT(*) AS n FROM pets GROUP BY id, name EMIT CHANGES;", "`ID` and `OTHER`"),
    ("SELECT age, p.age AS b, age AS a, COUNT(*) AS n FROM pets p GROUP BY p.age EMIT CHANGES;",
     "`AGE`, `B` and `A`"),
    ("SELECT name, COUNT(*) AS n, age + 1 AS x, age + 1 AS y FROM pets GROUP BY name, age + 1 EMIT CHANGES;",
     "`X` and `Y`"),
])
def test_a_grouping_expression_selected_twice_is_refused_in_ksqldbs_other_words(text, listed):
    assert refused_twice(text) == f"The projection contains a key column more than once: {listed}."


@pytest.mark.parametrize("text", [
    "SELECT id, AS_VALUE(id) AS copy, name FROM pets EMIT CHANGES;",
    "SELECT id, id + 0 AS copy, name FROM pets EMIT CHANGES;",
    "SELECT name, AS_VALUE(name) AS copy, COUNT(*) AS n FROM pets GROUP BY name EMIT CHANGES;",
    "SELECT name, AS_VALUE(name) AS n2, id FROM pets PARTITION BY name EMIT CHANGES;",
    # after PARTITION BY the old key is a value column: selecting it twice is no key twice
    "SELECT name, id, id AS id2 FROM pets PARTITION BY name EMIT CHANGES;",
    "SELECT owner_id, AS_VALUE(owner_id) AS dup, kind FROM owners JOIN kinds ON pet_ref = pet_id EMIT CHANGES;",
    "SELECT p.id, t.id AS tid, name FROM pets p JOIN treats t WITHIN 1 SECOND ON p.id = t.id EMIT CHANGES;",
])
def test_a_key_copied_into_the_value_passes(text):
    check_key_selected_once(plan(text))
    check_key_projected("OUTPUT", plan(text))


def missing(text: str, sink: str = "OUTPUT") -> str:
    with pytest.raises(StatementError) as info:
        check_key_projected(sink, plan(text))
    return str(info.value)


def one(what: str, listed: str, example: str, sink: str = "OUTPUT") -> str:
    return (f"Key missing from projection (ie, SELECT). \nThe query used to build `{sink}` must include the {what} "
            f"{listed} in its projection (eg, SELECT {example}...).")


def several(what: str, listed: str, example: str) -> str:
    return one(what, listed, example).replace("Key missing", "Keys missing")


@pytest.mark.parametrize("text, message", [
    # the grouping expressions missing from the projection, and only those
    ("SELECT COUNT(*) AS n FROM pets GROUP BY name EMIT CHANGES;", one("grouping expression", "NAME", "NAME")),
    ("SELECT COUNT(*) AS name FROM pets GROUP BY name EMIT CHANGES;", one("grouping expression", "NAME", "NAME")),
    ("SELECT age, COUNT(*) AS n FROM pets GROUP BY id, age EMIT CHANGES;", one("grouping expression", "ID", "ID")),
    ("SELECT age, COUNT(*) AS n FROM pets GROUP BY id, age, name EMIT CHANGES;",
     several("grouping expressions", "ID and NAME", "ID, NAME")),
    ("SELECT COUNT(*) AS n FROM pets p GROUP BY p.id, age, ABS(p.age) EMIT CHANGES;",
     several("grouping expressions", "ID, AGE and ABS(AGE)", "ID, AGE, ABS(AGE)")),
    # after a join a grouping column is named as the join's result names it
    ("SELECT COUNT(*) AS n FROM pets p JOIN treats t WITHIN 1 SECOND ON p.id = t.id GROUP BY p.name, t.treat "
     "EMIT CHANGES;", several("grouping expressions", "P_NAME and T_TREAT", "P_NAME, T_TREAT")),
    # PARTITION BY: every partitioning expression, qualified, as soon as one is missing
    ("SELECT name, id FROM pets PARTITION BY ABS(id) EMIT CHANGES;",
     one("partitioning expression", "ABS(PETS.ID)", "ABS(PETS.ID)")),
    ("SELECT name AS age, name FROM pets p PARTITION BY age EMIT CHANGES;",
     one("partitioning expression", "P.AGE", "P.AGE")),
    ("SELECT age, name FROM pets PARTITION BY age, name, id EMIT CHANGES;",
     several("partitioning expressions", "PETS.AGE, PETS.NAME and PETS.ID", "PETS.AGE, PETS.NAME, PETS.ID")),
    # one source: all its key columns, as soon as one is missing
    ("SELECT name FROM pets EMIT CHANGES;", one("key column", "ID", "ID")),
    ("SELECT name AS id, age FROM pets EMIT CHANGES;", one("key column", "ID", "ID")),
    ("SELECT vet, note FROM visits EMIT CHANGES;", several("key columns", "VET and ROOM", "VET, ROOM")),
])
def test_every_key_must_be_selected(text, message):
    assert missing(text) == message


def test_a_foreign_key_join_must_select_the_left_tables_primary_key():
    with pytest.raises(StatementError) as info:
        check_key_projected("OUTPUT", plan("SELECT city, pet_ref, kind FROM owners o JOIN kinds ON pet_ref = pet_id "
                                           "EMIT CHANGES;"))
    assert str(info.value) == ("Primary key column missing in projection. For foreign-key table-table joins, the "
                               "projection must include all primary key columns from the left input table (`O`). "
                               "Missing column: `OWNER_ID`.")
    check_key_projected("OUTPUT", plan("SELECT o.owner_id AS id, kind FROM owners o LEFT JOIN kinds "
                                       "ON pet_ref = pet_id EMIT CHANGES;"))


def test_the_message_names_the_sink_an_insert_writes():
    assert missing("SELECT name FROM pets EMIT CHANGES;", "ALL_PETS") == one("key column", "ID", "ID", "ALL_PETS")


@pytest.mark.parametrize("text", [
    "SELECT * FROM pets EMIT CHANGES;",
    "SELECT p.* FROM pets p EMIT CHANGES;",
    "SELECT p.id, name FROM pets p EMIT CHANGES;",
    "SELECT room, vet, note FROM visits EMIT CHANGES;",
    "SELECT * FROM pets PARTITION BY ABS(id) EMIT CHANGES;",
    "SELECT ABS(p.id) AS k, name FROM pets p PARTITION BY ABS(id) EMIT CHANGES;",
    "SELECT name, age FROM pets PARTITION BY NULL EMIT CHANGES;",
    "SELECT p.name, COUNT(*) AS n FROM pets p GROUP BY name EMIT CHANGES;",
    "SELECT ABS(age) AS a, id, COUNT(*) AS n FROM pets GROUP BY id, ABS(age) EMIT CHANGES;",
])
def test_a_projection_with_every_key_passes(text):
    check_key_projected("OUTPUT", plan(text))


# ---------------------------------------------------------------- INSERT INTO ... SELECT
def test_insert_into_a_table_is_refused_before_planning():
    with pytest.raises(StatementError) as info:
        check_insert_select(pets().get("OWNERS"))
    assert str(info.value) == "INSERT INTO can only be used to insert into a stream. OWNERS is a table."
    check_insert_select(pets().get("PETS"))


def test_insert_into_needs_a_query_that_produces_a_stream():
    target = pets().get("PETS")
    with pytest.raises(StatementError) as info:
        check_insert_kind(target, plan("SELECT id, COUNT(*) AS n FROM pets GROUP BY id EMIT CHANGES;"))
    assert str(info.value) == ("Incompatible data sink and query result. Data sink (PETS) type is KSTREAM but "
                               "select query result is KTABLE.")
    check_insert_kind(target, plan("SELECT * FROM treats EMIT CHANGES;"))


INT, STRING = ast.Type("INT"), ast.Type("STRING")


def test_insert_into_compares_key_columns_first_then_values_in_order():
    target = pets().get("PETS")
    check_insert(target, [Output("NAME", STRING), Output("ID", INT, True), Output("AGE", INT)])
    with pytest.raises(StatementError) as info:
        check_insert(target, [Output("ID", INT, True), Output("AGE", INT), Output("NAME", STRING)])
    assert str(info.value) == ("Incompatible schema between results and sink.\n"
                               "Result schema is `ID` INTEGER KEY, `AGE` INTEGER, `NAME` STRING\n"
                               "Sink schema is `ID` INTEGER KEY, `NAME` STRING, `AGE` INTEGER")
    with pytest.raises(StatementError, match="Result schema is `ID` INTEGER, `NAME` STRING, `AGE` INTEGER\n"):
        check_insert(target, [Output("ID", INT), Output("NAME", STRING), Output("AGE", INT)])


@pytest.mark.parametrize("text, keys", [
    ("SELECT p.name, COUNT(*) AS n FROM pets p GROUP BY name EMIT CHANGES;", ["NAME"]),
    ("SELECT name, COUNT(*) AS n FROM pets p GROUP BY p.name HAVING p.name <> 'x' EMIT CHANGES;", ["NAME"]),
    ("SELECT pets.name AS k, id FROM pets PARTITION BY name EMIT CHANGES;", ["K"]),
])
def test_a_key_selected_with_or_without_its_qualifier_is_the_key(text, keys):
    assert plan(text).key_names == keys


def test_insert_into_widens_only_decimals_as_ksqldb_does():
    from kafkasql_magic.sinks.plan import widens

    def dec(p, s):
        return ast.Type("DECIMAL", p, s)

    assert widens(dec(4, 1), dec(6, 2)) and widens(dec(6, 2), dec(6, 2)) and widens(INT, INT)
    assert not widens(dec(4, 2), dec(4, 1))  # scale would shrink
    assert not widens(dec(6, 1), dec(6, 2))  # integer digits would shrink
    # ksqlDB's Column.canImplicitlyCast: other types must be equal, INT into BIGINT included
    assert not widens(INT, ast.Type("BIGINT")) and not widens(INT, dec(10, 0))
    assert not widens(ast.Type("ARRAY", element=dec(4, 1)), ast.Type("ARRAY", element=dec(6, 2)))
    target = SourceDef("STREAM", "T", "t", FormatSpec("KAFKA"), FormatSpec("JSON"),
                       (Column("ID", INT, KEY), Column("D", dec(6, 2), VALUE)))
    check_insert(target, [Output("ID", INT, True), Output("D", dec(5, 2))])
    with pytest.raises(StatementError) as info:
        check_insert(target, [Output("ID", INT, True), Output("D", dec(6, 3))])
    assert str(info.value) == ("Incompatible schema between results and sink.\n"
                               "Result schema is `ID` INTEGER KEY, `D` DECIMAL(6, 3)\n"
                               "Sink schema is `ID` INTEGER KEY, `D` DECIMAL(6, 2)")
