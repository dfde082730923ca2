"""The analysis step's pure steps for GROUP BY and PARTITION BY (no Spark session needed)."""

from kafkasql_magic import types
from kafkasql_magic.catalog import KEY, Column, SourceDef
from kafkasql_magic.formats.base import FormatSpec
from kafkasql_magic.dialects import KSQL
from kafkasql_magic.engine.analysis.grouping import aggregate_calls as _aggregate_calls
from kafkasql_magic.sql.ast import substitute as _substitute
from kafkasql_magic.engine.analysis.select import partitioned_star as _partitioned_star
from kafkasql_magic.sql import ast, parse_statement


def items(sql):
    return [i.expr for i in parse_statement(sql).items]


def test_aggregate_calls_are_the_outermost_ones():
    (expr,) = items("SELECT SUM(qty) * 2 + COUNT(*) FROM s")
    assert [c.name for c in _aggregate_calls(expr)] == ["SUM", "COUNT"]
    (nested,) = items("SELECT MAX(ABS(x)) FROM s")
    assert [c.name for c in _aggregate_calls(nested)] == ["MAX"]
    (case,) = items("SELECT CASE WHEN COUNT(*) > 1 THEN MIN(x) END FROM s")
    assert [c.name for c in _aggregate_calls(case)] == ["COUNT", "MIN"]
    assert _aggregate_calls(items("SELECT UCASE(x) FROM s")[0]) == []


def test_substitute_replaces_group_keys_and_aggregates_wherever_they_occur():
    stmt = parse_statement("SELECT UCASE(item) || '!', SUM(qty) / COUNT(*) FROM s GROUP BY UCASE(item)")
    table = {stmt.group_by[0]: ast.ColumnRef("__g0")}
    first, second = (i.expr for i in stmt.items)
    table.update({c: ast.ColumnRef(f"__agg{n}") for n, c in enumerate(_aggregate_calls(second))})
    assert _substitute(first, table) == ast.BinaryOp("||", ast.ColumnRef("__g0"), ast.Literal("!", "STRING"))
    assert _substitute(second, table) == ast.BinaryOp("/", ast.ColumnRef("__agg0"), ast.ColumnRef("__agg1"))
    loose = _substitute(items("SELECT qty + 1 FROM s")[0], table)
    assert loose == items("SELECT qty + 1 FROM s")[0]  # nothing to replace: left as is


def test_partition_by_star_puts_the_new_key_first_and_the_old_key_last():
    spec = FormatSpec("JSON")
    source = SourceDef("STREAM", "S", "t", spec, spec, (
        Column("ID", types.INT, KEY), Column("ITEM", types.STRING), Column("QTY", types.INT)))
    star = [(c.name, ast.ColumnRef(c.name)) for c in source.star_columns]
    by_item = _partitioned_star(star, (ast.ColumnRef("ITEM"),), source, KSQL.naming)
    assert [n for n, _ in by_item] == ["ITEM", "QTY", "ID"]
    by_expression = _partitioned_star(star, items("SELECT qty * 2 FROM s"), source, KSQL.naming)
    assert [n for n, _ in by_expression] == ["KSQL_COL_0", "ITEM", "QTY", "ID"]
    by_offset = _partitioned_star(star, (ast.ColumnRef("ROWOFFSET"),), source, KSQL.naming)
    assert [n for n, _ in by_offset] == ["ROWOFFSET", "ITEM", "QTY", "ID"]


def test_materialize_groups_by_a_select_items_position_or_alias_an_input_column_first():
    from types import SimpleNamespace

    import pytest

    from kafkasql_magic.engine.analysis.grouping import by_select_items
    from kafkasql_magic.errors import StatementError

    inputs = [SimpleNamespace(visible=("ts", "text", "m2"))]

    def grouped(sql):
        return by_select_items(parse_statement(sql, dialect="materialize"), inputs).group_by

    trunc = items_mz("SELECT date_trunc('minute', ts) FROM s")[0]
    assert grouped("SELECT date_trunc('minute', ts) AS m, count(*) FROM s GROUP BY 1") == (trunc,)
    assert grouped("SELECT date_trunc('minute', ts) AS m, count(*) FROM s GROUP BY m") == (trunc,)
    assert grouped("SELECT upper(text) AS text, count(*) FROM s GROUP BY text") == (ast.ColumnRef("text"),)
    assert grouped("SELECT ts AS m2, count(*) FROM s GROUP BY m2") == (ast.ColumnRef("m2"),)  # the input's m2
    with pytest.raises(StatementError, match="line 1:39: GROUP BY position 3 is not in select list"):
        grouped("SELECT text, count(*) FROM s GROUP BY 3")


def items_mz(sql):
    return [i.expr for i in parse_statement(sql, dialect="materialize").items]
