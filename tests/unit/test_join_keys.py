"""A join's key in the analysis step (no Spark): ksqlDB's synthetic ROWKEY column (FULL OUTER
joins, ON clauses of two expressions), its name when a source has a ROWKEY column, `SELECT *`,
its type, the key columns an outer join fills, and the persistent query's messages."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from kafkasql_magic.dialects import ksql_sources as ddl
from kafkasql_magic.engine.analysis.join_key import synthetic_name
from kafkasql_magic.engine.analysis.key_projection import check_key_projected
from kafkasql_magic.engine.analysis.types import check_types
from kafkasql_magic.errors import ExpressionTypeError, StatementError
from kafkasql_magic.sql import ast, parse_statement

from test_analysis import SETTINGS, catalog, plan_of


def sources(*extra: str):
    cat = catalog()
    for create in ("CREATE STREAM l (a INT KEY, b INT, s STRING) WITH (kafka_topic='l', value_format='JSON');",
                   "CREATE STREAM r (a INT KEY, c INT, s STRING) WITH (kafka_topic='r', value_format='JSON');",
                   "CREATE TABLE tl (id INT PRIMARY KEY, v0 INT) WITH (kafka_topic='tl', value_format='JSON');",
                   "CREATE TABLE tr (id INT PRIMARY KEY, v1 INT) WITH (kafka_topic='tr', value_format='JSON');",
                   *extra):
        cat.add(ddl.source_from_create(parse_statement(create), SETTINGS))
    return cat


SS = "FROM l JOIN r WITHIN 10 SECONDS"


@pytest.mark.parametrize("text, names, keys, synthetic", [
    # a FULL OUTER join: the key may come from either side
    ("SELECT * FROM l FULL OUTER JOIN r WITHIN 10 SECONDS ON l.a = r.a EMIT CHANGES;",
     ["ROWKEY", "L_A", "L_B", "L_S", "R_A", "R_C", "R_S"], ["ROWKEY"], "ROWKEY"),
    ("SELECT * FROM tl FULL OUTER JOIN tr ON tl.id = tr.id EMIT CHANGES;",
     ["ROWKEY", "TL_ID", "TL_V0", "TR_ID", "TR_V1"], ["ROWKEY"], "ROWKEY"),
    # an ON of two expressions: no source column is the key
    (f"SELECT ROWKEY AS k, l.b {SS} ON ABS(l.a) = ABS(r.a) EMIT CHANGES;", ["K", "B"], ["K"], "ROWKEY"),
    (f"SELECT rowkey, l.b {SS} ON UCASE(l.s) = UCASE(r.s) EMIT CHANGES;", ["ROWKEY", "B"], ["ROWKEY"], "ROWKEY"),
    # a qualified star is one source's columns only
    (f"SELECT l.*, r.* {SS} ON ABS(l.a) = ABS(r.a) EMIT CHANGES;",
     ["L_A", "L_B", "L_S", "R_A", "R_C", "R_S"], [], "ROWKEY"),
    # one side a plain column: that column is the key, whichever side it is on
    (f"SELECT * {SS} ON l.a = ABS(r.a) EMIT CHANGES;", ["L_A", "L_B", "L_S", "R_A", "R_C", "R_S"], ["L_A"], None),
    (f"SELECT l.b, r.a {SS} ON ABS(l.a) = r.a EMIT CHANGES;", ["B", "R_A"], ["R_A"], None),
    ("SELECT o.id, i.item FROM orders o JOIN items i ON UCASE(o.item) = i.item EMIT CHANGES;",
     ["ID", "I_ITEM"], ["I_ITEM"], None),
])
def test_which_joins_have_a_synthetic_key(text, names, keys, synthetic):
    plan = plan_of(text, cat=sources())
    assert (plan.names, plan.key_names, plan.join_key.synthetic) == (names, keys, synthetic)


def test_an_outer_joins_key_column_takes_the_join_key_where_its_side_is_missing():
    right = plan_of("SELECT tl.id, v0, v1 FROM tl RIGHT JOIN tr ON tl.id = tr.id EMIT CHANGES;", cat=sources())
    assert (right.key_names, right.join_key.filled) == (["TL_ID"], ("TL_ID",))
    assert right.join_key.left == ast.ColumnRef("ID", "TL") and right.join_key.right == ast.ColumnRef("ID", "TR")
    flipped = plan_of("SELECT tl.id, v0 FROM tl RIGHT JOIN tr ON tr.id = tl.id EMIT CHANGES;", cat=sources())
    assert flipped.join_key.left == ast.ColumnRef("ID", "TL")  # the ON operands ordered by side
    grouped = plan_of(f"SELECT l.b, COUNT(*) {SS} ON l.a = r.a GROUP BY l.b EMIT CHANGES;", cat=sources())
    assert (grouped.key_names, grouped.join_key.filled) == (["B"], ())  # keyed by GROUP BY, not by the join


@pytest.mark.parametrize("extra, name", [
    ((), "ROWKEY"),
    (("CREATE STREAM s1 (rowkey INT KEY, v0 STRING) WITH (kafka_topic='s1', value_format='JSON');",), "ROWKEY_1"),
    (("CREATE STREAM s1 (rowkey INT KEY, v0 STRING) WITH (kafka_topic='s1', value_format='JSON');",
      "CREATE TABLE t1 (id INT PRIMARY KEY, rowkey_1 INT) WITH (kafka_topic='t1', value_format='JSON');"), "ROWKEY_2"),
    (("CREATE TABLE t1 (id INT PRIMARY KEY, rowkey_1 INT) WITH (kafka_topic='t1', value_format='JSON');",), "ROWKEY"),
])
def test_the_synthetic_key_is_named_after_the_rowkey_columns_the_sources_have(extra, name):
    cat = sources(*extra)
    left = "s1" if any("s1" in e for e in extra) else "l"
    right = "t1" if any("t1" in e for e in extra) else "r"
    on = f"ABS({left}.{'rowkey' if left == 's1' else 'a'}) = ABS({right}.{'id' if right == 't1' else 'a'})"
    within = "" if right == "t1" else "WITHIN 10 SECONDS "
    plan = plan_of(f"SELECT * FROM {left} JOIN {right} {within}ON {on} EMIT CHANGES;", cat=cat)
    assert plan.join_key.synthetic == name and plan.names[0] == name and plan.key_names == [name]


def test_numbering_skips_only_the_numbers_in_use():
    class Side:
        def __init__(self, *columns):
            self.columns = columns

    assert synthetic_name([Side("ROWKEY_1", "ROWKEY_X"), Side("MY_ROWKEY")]) == "ROWKEY"
    assert synthetic_name([Side("rowkey", "ROWKEY_2")]) == "ROWKEY_1"
    assert synthetic_name([Side("ROWKEY", "ROWKEY_1", "ROWKEY_2")]) == "ROWKEY_3"


def test_the_synthetic_key_has_the_join_expressions_type():
    plan = plan_of(f"SELECT ROWKEY, ROWKEY + 1 AS next, b {SS} ON ABS(l.a) = ABS(r.a) EMIT CHANGES;", cat=sources())
    types = check_types(plan, plan.dialect).checker
    assert [types.type_of(e).name for _, e in plan.outputs] == ["INT", "INT", "INT"]
    text = plan_of(f"SELECT ROWKEY, b {SS} ON UCASE(l.s) = LCASE(r.s) EMIT CHANGES;", cat=sources())
    assert check_types(text, text.dialect).checker.type_of(text.outputs[0][1]).name == "STRING"


@pytest.mark.parametrize("text", [
    f"SELECT ROWKEY, b {SS} ON l.a = r.a EMIT CHANGES;",  # a source column is the key: no ROWKEY
    f"SELECT l.ROWKEY, b {SS} ON ABS(l.a) = ABS(r.a) EMIT CHANGES;",  # it belongs to no source
])
def test_rowkey_exists_only_unqualified_and_only_for_a_synthetic_key(text):
    with pytest.raises(ExpressionTypeError, match="ROWKEY' cannot be resolved"):
        plan_of(text, cat=sources())


def test_the_materialize_dialect_has_no_synthetic_key():
    plan = plan_of("SELECT * FROM tl FULL OUTER JOIN tr ON tl.id = tr.id", "materialize", cat=sources())
    assert plan.join_key is None and "rowkey" not in [n.lower() for n in plan.names]


def key_check(text: str):
    """The persistent query's key check over the plan of `text` (its outputs typed INT)."""
    check_key_projected("OUTPUT", plan_of(text, cat=sources()))


SYNTHETIC_MISSING = (  # ksqlDB's text, its trailing space included
    "Key missing from projection (ie, SELECT). See https://cnfl.io/2LV7ouS.\nThe query used to build `OUTPUT` must "
    "include the join expression ROWKEY in its projection (eg, SELECT ROWKEY...).\nROWKEY was added as a synthetic "
    "key column because the join criteria did not match any source column. This expression must be included in the "
    "projection and may be aliased. ")


@pytest.mark.parametrize("text", [
    f"SELECT l.*, r.* {SS} ON ABS(l.a) = ABS(r.a) EMIT CHANGES;",
    "SELECT l.b, r.* FROM l FULL OUTER JOIN r WITHIN 10 SECONDS ON l.a = r.a EMIT CHANGES;",
    "SELECT tl.id, tr.id, v0 FROM tl FULL OUTER JOIN tr ON tl.id = tr.id EMIT CHANGES;",
])
def test_a_persistent_query_must_select_the_synthetic_key(text):
    with pytest.raises(StatementError) as info:
        key_check(text)
    assert str(info.value) == SYNTHETIC_MISSING


@pytest.mark.parametrize("text", [
    "SELECT * FROM tl FULL OUTER JOIN tr ON tl.id = tr.id EMIT CHANGES;",
    "SELECT ROWKEY AS id, v0, v1 FROM tl FULL OUTER JOIN tr ON tl.id = tr.id EMIT CHANGES;",
    f"SELECT ROWKEY AS a, l.b, r.* {SS} ON ABS(l.a) = ABS(r.a) EMIT CHANGES;",
])
def test_a_persistent_query_selecting_the_synthetic_key_passes(text):
    key_check(text)


def test_a_rowkey_column_of_a_source_moves_the_synthetic_key_in_the_message():
    cat = sources("CREATE STREAM s1 (rowkey INT KEY, v0 STRING) WITH (kafka_topic='s1', value_format='JSON');")
    plan = plan_of("SELECT s1.rowkey, v0, c FROM s1 JOIN r WITHIN 1 SECOND ON ABS(s1.rowkey) = ABS(r.a) "
                   "EMIT CHANGES;", cat=cat)
    assert plan.key_names == []  # the source's ROWKEY is not the synthetic ROWKEY_1
    with pytest.raises(StatementError, match=r"must include the join expression ROWKEY_1 in its projection "
                                             r"\(eg, SELECT ROWKEY_1\.\.\.\)\.\nROWKEY_1 was added"):
        check_key_projected("OUTPUT", plan)


def test_the_build_fills_only_the_key_columns_the_plan_names():
    from kafkasql_magic.engine.join_key.column_spark import JOIN_KEY, keyed_outputs

    plan = plan_of("SELECT tl.id, v0, v1 FROM tl RIGHT JOIN tr ON tl.id = tr.id EMIT CHANGES;", cat=sources())
    outputs = keyed_outputs(plan, plan.outputs)
    assert outputs[0] == ("TL_ID", ast.FunctionCall("COALESCE", (ast.ColumnRef("ID", "TL"), ast.ColumnRef(JOIN_KEY))))
    assert outputs[1:] == list(plan.outputs[1:])
    full = plan_of("SELECT * FROM tl FULL OUTER JOIN tr ON tl.id = tr.id EMIT CHANGES;", cat=sources())
    assert keyed_outputs(full, full.outputs) == list(full.outputs)  # ROWKEY resolves to the join key itself


def test_a_two_way_joins_message_names_both_on_columns_or_the_one_there_is():
    with pytest.raises(StatementError) as info:
        key_check(f"SELECT l.b, r.c {SS} ON l.a = r.a EMIT CHANGES;")
    assert str(info.value) == ("Key missing from projection (ie, SELECT). \nThe query used to build `OUTPUT` must "
                               "include the join expressions L.A or R.A in its projection (eg, SELECT L.A...).")
    with pytest.raises(StatementError, match=r"include the join expression L\.A in its projection \(eg, SELECT L\.A"):
        key_check(f"SELECT l.b {SS} ON l.a = ABS(r.a) EMIT CHANGES;")


# Chains of joins, as ksqlDB keys them (its multi-joins query-validation tests): the columns every
# ON clause makes equivalent to the key, in the order the ON clauses name them.

CHAIN_SOURCES = (
    "CREATE STREAM s1 (id INT KEY, k INT, v0 BIGINT) WITH (kafka_topic='s1', value_format='JSON');",
    "CREATE STREAM s2 (id INT KEY, k INT, v0 BIGINT) WITH (kafka_topic='s2', value_format='JSON');",
    "CREATE STREAM s3 (id INT KEY, v0 BIGINT) WITH (kafka_topic='s3', value_format='JSON');",
    "CREATE TABLE t1 (id INT PRIMARY KEY, v0 BIGINT) WITH (kafka_topic='t1', value_format='JSON');",
    "CREATE TABLE t2 (id INT PRIMARY KEY, v0 BIGINT) WITH (kafka_topic='t2', value_format='JSON');",
    "CREATE TABLE t3 (id INT PRIMARY KEY, v0 BIGINT, diff BIGINT) WITH (kafka_topic='t3', value_format='JSON');",
    "CREATE STREAM ls (id1 BIGINT KEY, f1 BIGINT) WITH (kafka_topic='ls', value_format='JSON');",
    "CREATE TABLE mt (id2 BIGINT PRIMARY KEY, f2 BIGINT) WITH (kafka_topic='mt', value_format='JSON');",
    "CREATE TABLE rt (id3 BIGINT PRIMARY KEY, f3 BIGINT) WITH (kafka_topic='rt', value_format='JSON');",
)
STT = "FROM s1 JOIN t2 ON s1.id = t2.id JOIN t3 ON s1.id = t3.id"
W = "WITHIN 10 SECONDS"


def chain(text: str):
    """(result names, key names, join key) of `text`, analysed as a push query. Only the key's
    analysis: a chain of three tables is keyed here even where the build refuses to run it."""
    from kafkasql_magic import dialects
    from kafkasql_magic.engine.analysis.join_key import join_key_of
    from kafkasql_magic.engine.analysis.select import _input, key_names, outputs_of

    stmt = parse_statement(text)
    cat = sources(*CHAIN_SOURCES)
    inputs = [_input(ref, cat, True, dialects.KSQL) for ref in (stmt.source, *(j.source for j in stmt.joins))]
    key = join_key_of(stmt, inputs)
    outputs = outputs_of(stmt, inputs, prefixed=True, synthetic=key.synthetic)
    return [n for n, _ in outputs], key_names(stmt, outputs, inputs, False, key), key


def viable(key) -> list[str]:
    return [f"{c.qualifier}.{c.name}" for c in key.viable]


@pytest.mark.parametrize("text, keys, equivalent", [
    # any of the equivalent columns keys the result, under its result name
    (f"SELECT s1.id, s1.v0, t2.v0, t3.v0 {STT} EMIT CHANGES;", ["S1_ID"], ["S1.ID", "T2.ID", "T3.ID"]),
    (f"SELECT t2.id, s1.v0, t2.v0 {STT} EMIT CHANGES;", ["T2_ID"], ["S1.ID", "T2.ID", "T3.ID"]),
    (f"SELECT t3.id AS k, s1.v0 {STT} EMIT CHANGES;", ["K"], ["S1.ID", "T2.ID", "T3.ID"]),
    # several selected: the first in the ON clauses' order, not the projection's
    (f"SELECT t3.id, t2.id, s1.v0 {STT} EMIT CHANGES;", ["T2_ID"], ["S1.ID", "T2.ID", "T3.ID"]),
    # none selected: no key column (a persistent query is refused)
    (f"SELECT s1.v0, t2.v0, t3.v0 {STT} EMIT CHANGES;", [], ["S1.ID", "T2.ID", "T3.ID"]),
    # ON operands written right to left, and aliases
    ("SELECT t2.id, s1.v0 FROM s1 JOIN t2 ON t2.id = s1.id JOIN t3 ON t3.id = s1.id EMIT CHANGES;",
     ["T2_ID"], ["S1.ID", "T2.ID", "T3.ID"]),
    ("SELECT s.id, s.v0 FROM s1 s JOIN t2 t ON s.id = t.id JOIN t3 tt ON s.id = tt.id EMIT CHANGES;",
     ["S_ID"], ["S.ID", "T.ID", "TT.ID"]),
    # an expression breaks the equivalence with what came before, or starts it afresh
    ("SELECT t2.id, s1.v0 FROM s1 JOIN t2 ON s1.id + 1 = t2.id JOIN t3 ON s1.id = t3.id EMIT CHANGES;",
     [], ["S1.ID", "T3.ID"]),
    ("SELECT t3.id, s1.v0 FROM s1 JOIN t2 ON s1.id = t2.id JOIN t3 ON s1.id + 1 = t3.id EMIT CHANGES;",
     ["T3_ID"], ["T3.ID"]),
    ("SELECT t3.id, s1.v0 FROM s1 JOIN t2 ON s1.k - 1 = t2.id JOIN t3 ON s1.k + 1 = t3.id EMIT CHANGES;",
     ["T3_ID"], ["T3.ID"]),
    ("SELECT s1.k, s1.v0 FROM s1 JOIN t2 ON s1.v0 = t2.id JOIN t3 ON s1.k = t3.id EMIT CHANGES;",
     ["K"], ["S1.K", "T3.ID"]),
    # equal expressions link the joins: the last ON names no column, yet S1.ID keys the result
    (f"SELECT s1.id, s1.v0 FROM s1 JOIN s2 {W} ON s1.id = ABS(s2.id) JOIN s3 {W} ON abs(S2.ID) = ABS(s3.id) "
     "EMIT CHANGES;", ["S1_ID"], ["S1.ID"]),
    # a cascade through the second source's column
    (f"SELECT s1.k, s1.v0 FROM s1 JOIN s2 {W} ON s1.k = s2.k JOIN t3 ON s2.k = t3.id EMIT CHANGES;",
     ["S1_K"], ["S1.K", "S2.K", "T3.ID"]),
    # LEFT and stream-stream-table chains alike
    (f"SELECT s1.v0, s2.v0, t3.v0, s2.id FROM s1 LEFT JOIN s2 {W} ON s1.id = s2.id JOIN t3 ON s1.id = t3.id "
     "EMIT CHANGES;", ["S2_ID"], ["S1.ID", "S2.ID", "T3.ID"]),
    # a FULL OUTER join before the last one adds nothing equivalent, and no synthetic key
    (f"SELECT s1.id, s1.v0, s2.v0 FROM s1 FULL JOIN s2 {W} ON s1.id = s2.id JOIN t3 ON s1.id = t3.id "
     "EMIT CHANGES;", ["S1_ID"], ["S1.ID", "T3.ID"]),
    (f"SELECT s2.id, s1.v0 FROM s1 FULL JOIN s2 {W} ON s1.id = s2.id JOIN t3 ON s1.id = t3.id EMIT CHANGES;",
     [], ["S1.ID", "T3.ID"]),
    # table-table-table
    ("SELECT t1.id, t1.v0, t2.v0, t3.v0 FROM t1 JOIN t2 ON t1.id = t2.id JOIN t3 ON t1.id = t3.id EMIT CHANGES;",
     ["T1_ID"], ["T1.ID", "T2.ID", "T3.ID"]),
    # unqualified ON columns: a LEFT join on another key starts afresh; F1 comes before RT_ID3
    ("SELECT id1, f1, mt.*, rt.* FROM ls JOIN mt ON id1 = id2 LEFT JOIN rt ON f1 = id3 EMIT CHANGES;",
     ["F1"], ["LS.F1", "RT.ID3"]),
])
def test_a_chain_is_keyed_by_any_column_its_on_clauses_make_equivalent(text, keys, equivalent):
    _, key_names, key = chain(text)
    assert (key_names, viable(key), key.synthetic) == (keys, equivalent, None)


def test_a_chains_select_star_is_keyed_by_its_first_equivalent_column_without_rowkey():
    names, keys, _ = chain(f"SELECT * {STT} EMIT CHANGES;")
    assert names == ["S1_ID", "S1_K", "S1_V0", "T2_ID", "T2_V0", "T3_ID", "T3_V0", "T3_DIFF"] and keys == ["S1_ID"]
    names, keys, _ = chain(f"SELECT * FROM s1 FULL JOIN s2 {W} ON s1.id = s2.id JOIN t3 ON s1.id = t3.id EMIT CHANGES;")
    assert names[0] == "S1_ID" and "ROWKEY" not in names and keys == ["S1_ID"]
    names, keys, _ = chain(f"SELECT t2.*, t3.v0 {STT} EMIT CHANGES;")
    assert (names, keys) == (["T2_ID", "T2_V0", "T3_V0"], ["T2_ID"])


@pytest.mark.parametrize("text, left, right", [
    # the last join FULL OUTER: ROWKEY is the first non-NULL of its two operands
    ("SELECT ROWKEY AS id, t1.v0 FROM t1 JOIN t2 ON t1.id = t2.id FULL JOIN t3 ON t1.id = t3.id EMIT CHANGES;",
     "T1.ID", "T3.ID"),
    (f"SELECT ROWKEY, s1.v0 FROM s1 FULL OUTER JOIN s2 WITHIN 5 SECONDS ON s1.id = s2.id FULL OUTER JOIN s3 {W} "
     "ON s1.id = s3.id EMIT CHANGES;", "S1.ID", "S3.ID"),
    # the last ON's expressions equivalent to no column
    (f"SELECT ROWKEY, s1.v0 FROM s1 JOIN s2 {W} ON s1.id = s2.id JOIN s3 {W} ON ABS(s1.id) = ABS(s3.id) "
     "EMIT CHANGES;", "ABS(S1.ID)", "ABS(S3.ID)"),
])
def test_a_chain_gets_rowkey_only_when_its_last_join_leaves_no_equivalent_column(text, left, right):
    from kafkasql_magic.sql.render import render

    names, keys, key = chain(text)
    assert key.synthetic == "ROWKEY" and key.viable == () and keys == [names[0]]
    assert (render(key.left), render(key.right)) == (left, right)


def chain_key_check(text: str):
    _, keys, key = chain(text)  # the key check reads only these of a plan
    check_key_projected("OUTPUT", SimpleNamespace(statement=parse_statement(text), aggregating=False,
                                                  keys=tuple(keys), join_key=key, table_join=None))


def missing(which: str, first: str) -> str:
    return ("Key missing from projection (ie, SELECT). \nThe query used to build `OUTPUT` must include the join "
            f"{which} in its projection (eg, SELECT {first}...).")


@pytest.mark.parametrize("text, message", [
    (f"SELECT s1.v0, t2.v0, t3.v0 {STT};", missing("expressions S1.ID, T2.ID or T3.ID", "S1.ID")),
    ("SELECT s1.v0, t2.v0 FROM s1 LEFT JOIN t2 ON s1.id = t2.id LEFT JOIN t3 ON s1.id = t3.id;",
     missing("expressions S1.ID, T2.ID or T3.ID", "S1.ID")),
    ("SELECT s1.v0 FROM s1 JOIN t2 ON s1.id + 1 = t2.id JOIN t3 ON s1.id = t3.id;",
     missing("expressions S1.ID or T3.ID", "S1.ID")),
    ("SELECT s1.v0 FROM s1 LEFT JOIN t2 ON s1.id = t2.id LEFT JOIN t3 ON s1.id + 1 = t3.id;",
     missing("expression T3.ID", "T3.ID")),
    ("SELECT s.v0 FROM s1 s JOIN t2 t ON t.id = s.id JOIN t3 tt ON tt.id = s.id;",
     missing("expressions S.ID, T.ID or TT.ID", "S.ID")),
    ("SELECT t1.v0 FROM t1 JOIN t2 ON t1.id = t2.id FULL JOIN t3 ON t1.id = t3.id;", SYNTHETIC_MISSING),
])
def test_a_persistent_chain_names_every_equivalent_column_it_could_select(text, message):
    with pytest.raises(StatementError) as info:
        chain_key_check(text)
    assert str(info.value) == message


@pytest.mark.parametrize("selected", ["s1.id", "t2.id", "t3.id AS k", "s1.id AS a, t3.id AS b"])
def test_a_persistent_chain_selecting_any_equivalent_column_passes(selected):
    chain_key_check(f"SELECT {selected}, s1.v0 {STT};")


@pytest.mark.parametrize("text, message", [
    (f"SELECT l.a, l.a AS key2, l.b, r.c {SS} ON l.a = r.a EMIT CHANGES;",
     "(`L_A`) more than once, aliased as: KEY2 and L_A."),
    (f"SELECT ROWKEY, ROWKEY AS k, b {SS} ON ABS(l.a) = ABS(r.a) EMIT CHANGES;",
     "(`ROWKEY`) more than once, aliased as: K and ROWKEY."),
])
def test_a_persistent_join_selects_its_key_column_once(text, message):
    from kafkasql_magic.engine.analysis.join_key import check_key_selected_once

    with pytest.raises(StatementError) as info:
        check_key_selected_once(plan_of(text, cat=sources()))
    assert str(info.value) == (f"The projection contains a key column {message}\nEach key column must only be in "
                               "the projection once. If you intended to copy the key into the value, then consider "
                               "using the AS_VALUE function to indicate which key reference should be copied.")


@pytest.mark.parametrize("text", [
    f"SELECT l.a, r.a AS k, l.b {SS} ON l.a = r.a EMIT CHANGES;",  # another equivalent column: a value column
    f"SELECT l.a, AS_VALUE(l.a) AS k, l.b {SS} ON l.a = r.a EMIT CHANGES;",
    f"SELECT l.b, COUNT(*) AS n, COUNT(*) AS m {SS} ON l.a = r.a GROUP BY l.b EMIT CHANGES;",
])
def test_a_persistent_join_may_copy_its_key_into_the_value(text):
    from kafkasql_magic.engine.analysis.join_key import check_key_selected_once

    check_key_selected_once(plan_of(text, cat=sources()))


def test_a_chains_key_column_takes_the_last_joins_key_where_its_side_is_missing():
    from kafkasql_magic.engine.join_key.column_spark import JOIN_KEY, keyed_outputs

    plan = plan_of("SELECT t2.id, s1.v0 FROM s1 LEFT JOIN t2 ON s1.id = t2.id LEFT JOIN t3 ON t3.id = s1.id "
                   "EMIT CHANGES;", cat=sources(*CHAIN_SOURCES))
    key = plan.join_key
    assert (plan.key_names, key.filled, key.left, key.right) == (
        ["T2_ID"], ("T2_ID",), ast.ColumnRef("ID", "S1"), ast.ColumnRef("ID", "T3"))
    assert keyed_outputs(plan, plan.outputs)[0] == (
        "T2_ID", ast.FunctionCall("COALESCE", (ast.ColumnRef("ID", "T2"), ast.ColumnRef(JOIN_KEY))))


MAP_KEY = ("Map keys, including types that contain maps, are not supported as they may lead to unexpected "
           "behavior due to inconsistent serialization. Key column name: `L_L0`. Column type: {}. "
           "See https://github.com/confluentinc/ksql/issues/6621 for more.")


@pytest.mark.parametrize("column, shown", [("MAP<STRING, INT>", "MAP<STRING, INTEGER>"),
                                           ("STRUCT<F1 MAP<STRING, INT>>", "STRUCT<`F1` MAP<STRING, INTEGER>>")])
def test_a_join_on_a_map_is_refused_under_the_left_sides_qualified_name(column, shown):
    """joins.json `on MAP column` and `on nested MAP column`: ksqlDB meets the MAP where it re-keys
    the left side, for a push query as for a persistent one (the analysis both go through)."""
    cat = sources(f"CREATE STREAM ml (ID STRING KEY, l0 {column}, l1 INT) WITH (kafka_topic='ml', format='JSON');",
                  f"CREATE STREAM mr (ID STRING KEY, r0 {column}, r1 INT) WITH (kafka_topic='mr', format='JSON');")
    query = "SELECT L.l0, L.ID, L1, R1 FROM ml L JOIN mr R WITHIN 11 SECONDS ON L.l0 = R.r0 EMIT CHANGES;"
    with pytest.raises(StatementError) as info:
        plan_of(query, cat=cat)
    assert str(info.value) == MAP_KEY.format(shown)
    plan_of(query.replace("L.l0 = R.r0", "L.l1 = R.r1"), cat=cat)  # any other key type passes
