"""The rules of an aggregation over a TABLE, without Spark: a row's old version retracted from its
old group before its new version joins its new one, accumulators that take a row back, and
ksqlDB's refusal of aggregate functions that cannot."""

from __future__ import annotations

import pytest

from kafkasql_magic.catalog import Catalog
from kafkasql_magic.dialects import ksql_sources as ddl
from kafkasql_magic.engine.aggregate.accumulators import undoable
from kafkasql_magic.engine.analysis import analyse
from kafkasql_magic.engine.table_aggregate.rules import (ADDED, RETRACTED, Group, change_order,
                                                        check_table_aggregates, keyed, moves)
from kafkasql_magic.errors import StatementError
from kafkasql_magic.sql import parse_statement


def test_a_moved_row_leaves_its_old_group_before_it_joins_the_new_one():
    steps, kept = moves(("eu", 10), [(True, ("us", 20), "c1")], keys=1)
    assert steps == [(-1, ("eu", 10), "c1", RETRACTED, True), (1, ("us", 20), "c1", ADDED, True)]
    assert kept == ("us", 20)


def test_a_row_changed_in_its_group_is_one_change_of_the_group():
    """Kafka Streams (KIP-904): the subtractor then the adder, one output for the group."""
    steps, kept = moves(("eu", 10), [(True, ("eu", 12), "c1")], keys=1)
    assert [(sign, shown) for sign, _, _, _, shown in steps] == [(-1, False), (1, True)]
    assert kept == ("eu", 12)


def test_a_tombstone_or_a_row_that_stops_counting_only_retracts():
    steps, kept = moves(("eu", 10), [(False, (None, 3), "c1"), (False, ("eu", 4), "c2")], keys=1)
    assert steps == [(-1, ("eu", 10), "c1", RETRACTED, True)] and kept is None
    assert moves(None, [(True, ("eu", 1), "c1"), (True, ("us", 2), "c2")], keys=1) == (
        [(1, ("eu", 1), "c1", ADDED, True), (-1, ("eu", 1), "c2", RETRACTED, True), (1, ("us", 2), "c2", ADDED, True)],
        ("us", 2))


def test_a_change_sorts_by_its_record_then_retraction_first():
    assert change_order(7, RETRACTED) < change_order(7, ADDED) < change_order(8, RETRACTED)


def group(*specs):
    return Group([undoable(name, nargs, bits) for name, nargs, bits in specs])


def test_a_group_counts_back_to_the_aggregates_of_no_rows():
    g = group(("COUNT", 0, None), ("SUM", 1, 32), ("AVG", 1, 64), ("COLLECT_LIST", 1, None), ("COUNT", 1, None))
    g.apply(1, [(), (10,), (10,), (1,), (None,)])
    g.apply(1, [(), (5,), (5,), (2,), (7,)])
    assert list(g.results()) == [2, 15, 7.5, [1, 2], 1] and g.members == 2
    g.apply(-1, [(), (10,), (10,), (1,), (None,)])
    assert list(g.results()) == [1, 5, 5.0, [2], 1]
    g.apply(-1, [(), (5,), (5,), (2,), (7,)])
    assert list(g.results()) == [0, 0, 0, [], 0] and g.members == 0


def test_sum_of_int_wraps_back_as_java_does():
    g = group(("SUM", 1, 32))
    g.apply(1, [(2**31 - 1,)])
    g.apply(1, [(1,)])
    assert list(g.results()) == [-2**31]
    g.apply(-1, [(1,)])
    assert list(g.results()) == [2**31 - 1]


def test_collect_list_takes_back_a_values_last_occurrence():
    """ksqlDB's CollectListUdaf.undo: lastIndexOf, removed (NULL too)."""
    g = group(("COLLECT_LIST", 1, None))
    for value in ("a", None, "b", "a"):
        g.apply(1, [(value,)])
    g.apply(-1, [("a",)])
    g.apply(-1, [(None,)])
    g.apply(-1, [("x",)])  # never added: nothing to take back
    assert list(g.results()) == [["a", "b"]]


def test_min_and_max_take_a_row_back_from_a_multiset():
    g = group(("MIN", 1, None), ("MAX", 1, None))
    for value in (5, 3, 3, 9):
        g.apply(1, [(value,), (value,)])
    g.apply(-1, [(3,), (3,)])
    assert list(g.results()) == [3, 9]
    g.apply(-1, [(3,), (3,)])
    g.apply(-1, [(9,), (9,)])
    assert list(g.results()) == [5, 5]
    g.apply(-1, [(5,), (5,)])
    assert list(g.results()) == [None, None]


def test_which_aggregations_over_a_table_run_in_keyed_state():
    assert keyed(["COUNT", "SUM", "AVG", "COLLECT_LIST", "MIN", "MAX"]) and keyed([])
    assert not keyed(["COUNT", "STRING_AGG"])


@pytest.mark.parametrize("names,message", [
    (["LATEST_BY_OFFSET", "MIN", "MAX", "MIN"], "The aggregation functions LATEST_BY_OFFSET, MIN and MAX cannot be "
                                               "applied to a table source, only to a stream source."),
    (["COUNT", "COLLECT_SET"], "The aggregation function COLLECT_SET cannot be applied to a table source, only to a "
                               "stream source.")])
def test_ksqldb_refuses_aggregate_functions_without_undo_over_a_table(names, message):
    with pytest.raises(StatementError) as raised:
        check_table_aggregates(names)
    assert str(raised.value) == message


def plan_of(text: str):
    cat = Catalog()
    create = "CREATE TABLE items (id INT PRIMARY KEY, item STRING, price INT) WITH (kafka_topic='i', value_format='JSON');"
    cat.add(ddl.source_from_create(parse_statement(create), {ddl.DEFAULT_KEY_FORMAT: "KAFKA"}))
    return analyse(parse_statement(text), cat, "ksql")


def test_a_table_aggregation_is_planned_in_keyed_state_or_refused():
    """group-by.json "non-table udaf on table"."""
    plan = plan_of("SELECT item, COUNT(*), SUM(price) FROM items GROUP BY item EMIT CHANGES;")
    assert plan.retracts and not plan.per_batch
    with pytest.raises(StatementError, match="The aggregation functions LATEST_BY_OFFSET, MIN and MAX cannot be"):
        plan_of("SELECT id, LATEST_BY_OFFSET(price), MIN(price), MAX(price) FROM items GROUP BY id EMIT CHANGES;")
