"""ksqlDB's result names: generated names numbered past the source's own names, struct
fields named after the field, join columns after their source, join results keyed by the ON
columns. No Spark."""

from __future__ import annotations

import pytest

from kafkasql_magic.dialects import ksql_sources as ddl
from kafkasql_magic.dialects.naming import KsqlAliases
from kafkasql_magic.sql import ast, parse_statement

from test_analysis import SETTINGS, catalog, plan_of


def with_clashing_names():
    cat = catalog()
    cat.add(ddl.source_from_create(parse_statement(
        "CREATE STREAM g (KSQL_COL_0 INT KEY, F STRING, s STRUCT<f INT, g_1 INT>, ksql_col_2 INT) "
        "WITH (kafka_topic='g', value_format='JSON');"), SETTINGS))
    return cat


def test_generated_names_skip_the_numbers_the_sources_use():
    plan = plan_of("SELECT 1, 2, 3, qty FROM g EMIT CHANGES;".replace("qty", "f"), cat=with_clashing_names())
    assert plan.names == ["KSQL_COL_1", "KSQL_COL_3", "KSQL_COL_4", "F"]


def test_struct_fields_are_named_after_the_field_numbered_past_clashes():
    plan = plan_of("SELECT s->f, s->f, s->g_1, 1 FROM g EMIT CHANGES;", cat=with_clashing_names())
    # a column F exists: the fields become F_1, F_2; G_1's stem G is free
    assert plan.names == ["F_1", "F_2", "G", "KSQL_COL_1"]


def test_numbering_is_across_the_projection_without_clashes():
    assert plan_of("SELECT qty + 1, item, qty * 2, UCASE(item) FROM orders EMIT CHANGES;").names == \
        ["KSQL_COL_0", "ITEM", "KSQL_COL_1", "KSQL_COL_2"]


def test_partition_by_names_the_new_key_as_ksqldb_does():
    cat = with_clashing_names()
    plan = plan_of("SELECT * FROM g PARTITION BY s->f EMIT CHANGES;", cat=cat)
    assert plan.names[0] == "F_1" and plan.keys == ("F_1",)
    plan = plan_of("SELECT * FROM g PARTITION BY LEN(f) EMIT CHANGES;", cat=cat)
    assert plan.names[0] == "KSQL_COL_1" and plan.keys == ("KSQL_COL_1",)
    assert plan_of("SELECT * FROM orders PARTITION BY qty * 2 EMIT CHANGES;").keys == ("KSQL_COL_0",)


@pytest.mark.parametrize("text, names, keys", [
    ("SELECT o.id, c.id FROM orders o JOIN clicks c WITHIN 1 SECONDS ON o.id = c.id EMIT CHANGES;",
     ["O_ID", "C_ID"], ("O_ID",)),
    ("SELECT c.id, o.qty FROM orders o JOIN clicks c WITHIN 1 SECONDS ON o.id = c.id EMIT CHANGES;",
     ["C_ID", "QTY"], ("C_ID",)),
    ("SELECT o.id, i.price, o.item FROM orders o JOIN items i ON o.item = i.item EMIT CHANGES;",
     ["ID", "PRICE", "O_ITEM"], ("O_ITEM",)),
    ("SELECT * FROM orders o JOIN items i ON o.item = i.item EMIT CHANGES;",
     ["O_ID", "O_ITEM", "O_QTY", "I_ITEM", "I_PRICE"], ("O_ITEM",)),
    ("SELECT price FROM orders o JOIN items i ON o.item = i.item EMIT CHANGES;", ["PRICE"], ()),
    ("SELECT o.item, price FROM orders o JOIN items i ON o.item = i.item AND o.qty > 1 EMIT CHANGES;",
     ["O_ITEM", "PRICE"], ()),
])
def test_join_results_are_keyed_by_the_selected_on_column_under_its_result_name(text, names, keys):
    plan = plan_of(text)
    assert (plan.names, plan.keys) == (names, keys)


def test_aliases_alone():
    aliases = KsqlAliases(["KSQL_COL_0", "KSQL_COL_2", "NAME", "NAME_1"])
    field = ast.Dereference(ast.ColumnRef("S"), "NAME")
    assert [aliases.name_for(ast.Literal(1, "INTEGER")) for _ in range(3)] == ["KSQL_COL_1", "KSQL_COL_3", "KSQL_COL_4"]
    assert [aliases.name_for(field) for _ in range(2)] == ["NAME_2", "NAME_3"]
    quoted = ast.Dereference(ast.ColumnRef("S"), "name")  # s->"name": ksqlDB keeps the field's case
    assert [aliases.name_for(quoted) for _ in range(2)] == ["name", "name_1"]


def test_a_join_on_a_column_and_an_expression_is_keyed_by_the_column():
    plan = plan_of("SELECT c.url, o.id FROM orders o JOIN clicks c WITHIN 1 SECONDS ON o.id = ABS(c.id) EMIT CHANGES;")
    assert plan.names == ["URL", "O_ID"] and plan.keys == ("O_ID",)


def test_partition_by_null_makes_a_stream_without_key_columns():
    plan = plan_of("SELECT * FROM orders PARTITION BY NULL EMIT CHANGES;")
    assert plan.names == ["ITEM", "QTY", "ID"] and plan.keys == ()
    assert plan_of("SELECT id, item FROM orders PARTITION BY NULL EMIT CHANGES;").keys == ()
    with pytest.raises(Exception, match="^Cannot PARTITION BY multiple columns including NULL$"):
        plan_of("SELECT id, item FROM orders PARTITION BY NULL, id EMIT CHANGES;")


def test_a_sink_without_key_columns_has_no_key_format_and_refuses_one():
    from kafkasql_magic.sinks import plan as sink_plan

    source = catalog().get("ORDERS")
    outputs = [sink_plan.Output("ITEM", ast.Type("STRING")), sink_plan.Output("ID", ast.Type("INT"))]
    sink = sink_plan.sink_source("STREAM", "OUT", {}, outputs, source, SETTINGS, None, "")
    assert sink.key_format.name == "NONE" and not sink.key_columns
    with pytest.raises(Exception, match=r"^Key format specified for stream without key columns\.$"):
        sink_plan.sink_source("STREAM", "OUT", {"KEY_FORMAT": "DELIMITED"}, outputs, source, SETTINGS, None, "",
                              partitioned_by_null=True)
    assert sink_plan.sink_source("STREAM", "OUT", {"KEY_FORMAT": "NONE"}, outputs, source, SETTINGS, None, "",
                                 partitioned_by_null=True).key_format.name == "NONE"


def test_a_keyless_sink_takes_the_key_format_given_after_checking_its_name():
    """ksqlDB refuses a key format only for PARTITION BY NULL; an unknown name is refused first."""
    from kafkasql_magic.sinks import plan as sink_plan

    source = catalog().get("ORDERS")
    outputs = [sink_plan.Output("ITEM", ast.Type("STRING")), sink_plan.Output("ID", ast.Type("INT"))]
    for given in ("NONE", "KAFKA"):
        sink = sink_plan.sink_source("STREAM", "OUT", {"KEY_FORMAT": given}, outputs, source, SETTINGS, None, "")
        assert sink.key_format.name == given and not sink.key_columns
    with pytest.raises(Exception, match="^Unknown format: FOO$"):
        sink_plan.sink_source("STREAM", "OUT", {"KEY_FORMAT": "foo"}, outputs, source, SETTINGS, None, "")


def test_the_leftmost_sides_join_column_keys_the_result_whatever_the_projection_order():
    plan = plan_of("SELECT c.*, o.* FROM orders o JOIN clicks c WITHIN 1 SECONDS ON c.id = o.id EMIT CHANGES;")
    assert plan.names[:2] == ["C_ID", "C_URL"] and plan.keys == ("O_ID",)


def test_partition_by_over_a_join_keys_by_the_star_column_it_names():
    plan = plan_of("SELECT * FROM orders o JOIN clicks c WITHIN 1 SECONDS ON o.id = c.id PARTITION BY o.item "
                   "EMIT CHANGES;")
    assert plan.names[0] == "O_ITEM" and plan.keys == ("O_ITEM",) and plan.names.count("O_ITEM") == 1
    # ksqlDB repartitions the join's schema: each side's values, pseudocolumns, then keys
    assert plan.names == ["O_ITEM", "O_QTY", "O_ROWTIME", "O_ROWPARTITION", "O_ROWOFFSET", "O_ID",
                          "C_URL", "C_ROWTIME", "C_ROWPARTITION", "C_ROWOFFSET", "C_ID"]
    plan = plan_of("SELECT * FROM orders o JOIN clicks c WITHIN 1 SECONDS ON o.id = c.id PARTITION BY url "
                   "EMIT CHANGES;")
    assert plan.names[0] == "C_URL" and plan.keys == ("C_URL",)


def test_a_quoted_mixed_case_column_keeps_its_case():
    cat = catalog()
    cat.add(ddl.source_from_create(parse_statement(
        "CREATE STREAM q (`Key` STRING KEY, `Name` STRING) WITH (kafka_topic='q', value_format='JSON');"), SETTINGS))
    plan = plan_of("SELECT *, `Name` AS `Name2` FROM q PARTITION BY `Key` EMIT CHANGES;", cat=cat)
    assert plan.names == ["Key", "Name", "Name2"] and plan.keys == ("Key",)
