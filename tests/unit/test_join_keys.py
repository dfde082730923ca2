"""A join's key in the analysis step (no Spark): ksqlDB's synthetic ROWKEY column (FULL OUTER
joins, ON clauses of two expressions), its name when a source has a ROWKEY column, `SELECT *`,
its type, the key columns an outer join fills, and the persistent query's messages."""

from __future__ import annotations

import pytest

from kafkasql_magic.dialects import ksql_sources as ddl
from kafkasql_magic.engine.analysis.join_key import synthetic_name
from kafkasql_magic.engine.analysis.types import check_types
from kafkasql_magic.errors import ExpressionTypeError, StatementError
from kafkasql_magic.sinks import plan as sink_plan
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
    plan = plan_of(text, cat=sources())
    outputs = [sink_plan.Output(n, ast.Type("INT"), n in plan.key_names) for n in plan.names]
    sink_plan.check_key_projected("OUTPUT", outputs, plan.source, plan.statement,
                                  plan.join_key.synthetic if plan.join_key else None)


SYNTHETIC_MISSING = (
    "Key missing from projection (ie, SELECT). See https://cnfl.io/2LV7ouS.\nThe query used to build `OUTPUT` must "
    "include the join expression ROWKEY in its projection (eg, SELECT ROWKEY...).\nROWKEY was added as a synthetic "
    "key column because the join criteria did not match any source column. This expression must be included in the "
    "projection and may be aliased.")


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
    outputs = [sink_plan.Output(n, ast.Type("INT")) for n in plan.names]
    with pytest.raises(StatementError, match=r"must include the join expression ROWKEY_1 in its projection "
                                             r"\(eg, SELECT ROWKEY_1\.\.\.\)\.\nROWKEY_1 was added"):
        sink_plan.check_key_projected("OUTPUT", outputs, plan.source, plan.statement, plan.join_key.synthetic)


def test_the_build_fills_only_the_key_columns_the_plan_names():
    from kafkasql_magic.engine.build.join_key import JOIN_KEY, keyed_outputs

    plan = plan_of("SELECT tl.id, v0, v1 FROM tl RIGHT JOIN tr ON tl.id = tr.id EMIT CHANGES;", cat=sources())
    outputs = keyed_outputs(plan, plan.outputs)
    assert outputs[0] == ("TL_ID", ast.FunctionCall("COALESCE", (ast.ColumnRef("ID", "TL"), ast.ColumnRef(JOIN_KEY))))
    assert outputs[1:] == list(plan.outputs[1:])
    full = plan_of("SELECT * FROM tl FULL OUTER JOIN tr ON tl.id = tr.id EMIT CHANGES;", cat=sources())
    assert keyed_outputs(full, full.outputs) == list(full.outputs)  # ROWKEY resolves to the join key itself
